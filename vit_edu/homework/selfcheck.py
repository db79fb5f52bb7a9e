"""Grade a master's own solutions the grader's way: ``python -m vit_edu.homework.selfcheck hw1_tokens``.

For the homework's author: each question runs in its own process with the package stripped of its references
(:func:`vit_edu.homework.grade.grade_question`), with hidden inputs drawn from a throwaway secret, so a reference
list that strips what the solution needs, or a missing ``depends``, shows as lost points before any student sees it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import nbformat

from vit_edu.homework.assignment import drawer
from vit_edu.homework.build import given_cells, make_assignment
from vit_edu.homework.grade import Homework, Limits, grade_question, master_blocks, stripped_packages
from vit_edu.homework.sandbox import sandbox_problem

ROOT = Path(__file__).resolve().parents[2]


def selfcheck(name: str, masters: Path = ROOT / "book" / "homework", secret: str = "selfcheck-secret",
              sandboxed: bool | None = None) -> dict[str, dict]:
    """Question -> the grader's verdict on the master's own solution."""
    master = masters / f"{name}.ipynb"
    data = make_assignment(masters, name, drawer(secret, name)).data()
    for q, cells in given_cells(master).items():
        data["questions"][q]["given"] = cells
    data = json.loads(json.dumps(data))
    blocks = master_blocks(nbformat.read(str(master), as_version=4))
    homework = Homework(name, data["questions"], {}, {})
    sandboxed = sandbox_problem() is None if sandboxed is None else sandboxed
    with tempfile.TemporaryDirectory(prefix="vit_edu_selfcheck_") as tmp:
        Path(tmp).chmod(0o755)
        packages = stripped_packages(homework, Path(tmp))
        return {q: grade_question(q, spec, blocks, packages[q], Limits(), sandboxed)
                for q, spec in data["questions"].items()}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.selfcheck", description=__doc__.split("\n")[0])
    p.add_argument("name", help="the assignment, e.g. hw1_tokens")
    args = p.parse_args()
    verdicts = selfcheck(args.name)
    for q, v in verdicts.items():
        print(f"{q}: {v['score']:g}/{v['possible']:g}" + "".join(f"\n    {d}" for d in v["detail"]) +
              (f"\n    public: {v['public']}" if v["public"] else ""))
    total = sum(v["score"] for v in verdicts.values())
    possible = sum(v["possible"] for v in verdicts.values())
    print(f"total {total:g}/{possible:g}")


if __name__ == "__main__":
    main()
