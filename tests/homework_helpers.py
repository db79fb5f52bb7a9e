"""What the homework tests share: a master's solutions, and the points an assignment's hidden cases give answers."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat


def master_solutions(master: Path) -> dict[str, str]:
    """Question name -> the solution source of an otter-assign master notebook."""
    nb = nbformat.read(master, as_version=4)
    out, name = {}, None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            name = re.search(r"name:\s*(\w+)", cell.source).group(1)
        if cell.cell_type == "raw" and cell.source.strip() == "# BEGIN SOLUTION":
            out[name] = nb.cells[i + 1].source
    return out


def score(cases, question: str, ns: dict, key: dict | None = None) -> float:
    """Points the hidden checks of ``question`` give the answers in ``ns`` (probe and judge, as in grading)."""
    total = 0.0
    for case in (c for c in cases.cases if c.question == question):
        ok, _ = cases.judge_one(case, cases.probe_one(case, ns, 20.0), key)
        total += case.points if ok else 0
    return total
