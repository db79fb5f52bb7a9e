"""What must stay in the instructor's build: each homework's hidden inputs and its answer key's values.

The hidden inputs are the tuples of three or more numbers written in ``book/homework/hidden/<name>.py`` (image
sizes, seeds, shapes); the key's values are its JSON entries as they would be written. Tests look for them in the
wheel, the student notebooks and the site.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

HIDDEN = Path(__file__).resolve().parents[1] / "book" / "homework" / "hidden"


def secrets(name: str) -> set[str]:
    """The hidden values of homework ``name`` as text (``"40, 56, 8, 1"``, ``'"b": "learning_rate"'``)."""
    found = set()
    for node in ast.walk(ast.parse((HIDDEN / f"{name}.py").read_text())):
        if isinstance(node, ast.Tuple) and len(node.elts) >= 3 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
                for e in node.elts):
            found.add(", ".join(str(e.value) for e in node.elts))
    key = HIDDEN / f"{name}_key.json"
    if key.exists():
        for k, v in json.loads(key.read_text()).items():
            found.add(json.dumps({k: v})[1:-1])
    return found


def leaks(text: str, names: list[str]) -> list[str]:
    """The hidden values of ``names`` that appear in ``text``."""
    return sorted(s for name in names for s in secrets(name) if s in text)
