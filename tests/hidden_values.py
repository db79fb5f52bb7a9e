"""What must stay in the instructor's build: the code of each homework's instructor module and its answers.

Hidden inputs are drawn from a course's secret at build time, so no file of the repository holds one; what the
student side must still never hold is the instructor's side itself: the reference code of
``book/homework/hidden/<name>.py`` (its code lines) and the answers of the by-hand and reading questions (the
master's solution lines). Tests look for them in the wheel, the student notebooks and the site.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import nbformat

HOMEWORK = Path(__file__).resolve().parents[1] / "book" / "homework"


@functools.lru_cache(maxsize=None)  # read once per run: every page of both editions is checked against it
def secrets(name: str) -> frozenset[str]:
    """Lines only the instructor's side of homework ``name`` holds: its module's statements of 40 characters or
    more, and the master's solution lines of that length (``# SOLUTION`` lines and the code between
    ``# BEGIN SOLUTION`` and ``# END SOLUTION``), less what the master shows students anyway and the package's
    own code and chapters."""
    module = (HOMEWORK / "hidden" / f"{name}.py").read_text()
    found = {ast.get_source_segment(module, node).split("\n")[0].strip()
             for node in ast.walk(ast.parse(module)) if isinstance(node, ast.stmt)}
    master = (HOMEWORK / f"{name}.ipynb").read_text()

    shown = []  # what the master shows students: everything but its solutions
    for cell in nbformat.reads(master, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            stripped = line.strip()
            if cell.cell_type != "code":
                shown.append(stripped)
            elif stripped == "# BEGIN SOLUTION":
                inside = True
            elif stripped == "# END SOLUTION":
                inside = False
            elif inside or stripped.endswith("# SOLUTION"):
                found.add(stripped.removesuffix("# SOLUTION").strip())
            else:
                shown.append(stripped)
    # ... and less the book's own code: a solution may share a line with the package and the chapters students read.
    root = HOMEWORK.parents[1]
    shown += [line for p in (*(root / "vit_edu").rglob("*.py"), *(root / "book").glob("*.ipynb"))
              for line in lines_of(p.read_text())]
    shown_text = "\n".join(shown)
    return frozenset(s for s in found if len(s) >= 40 and s not in shown_text and not s.startswith(("import ", "from ", '"""')))


def lines_of(text: str) -> set[str]:
    """The stripped lines of ``text``, also where it is a notebook's JSON (lines as quoted strings) or HTML."""
    import html

    lines = set()
    for line in html.unescape(text).replace("\\n", "\n").split("\n"):
        lines.add(line.strip().strip('",').replace('\\"', '"').strip())
    return lines


def leaks(text: str, names: list[str]) -> list[str]:
    """The instructor-only lines of ``names`` that are lines of ``text``."""
    found = lines_of(text)
    return sorted(s for name in names for s in secrets(name) if s in found)
