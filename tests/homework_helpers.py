"""What the homework tests share: a master's solutions, and student notebooks answered with them (or with others)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import torch

from vit_edu.homework.plain import decode


def solution_cells(master: Path) -> dict[str, list[str]]:
    """Question name -> the solution cells of an otter-assign master notebook, in order."""
    nb = nbformat.read(master, as_version=4)
    out: dict[str, list[str]] = {}
    name = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            name = re.search(r"name:\s*(\w+)", cell.source).group(1)
            out[name] = []
        if cell.cell_type == "raw" and cell.source.strip() == "# BEGIN SOLUTION":
            out[name].append(nb.cells[i + 1].source)
    return out


def master_solutions(master: Path) -> dict[str, str]:
    """Question name -> all of its solution code as one source."""
    return {q: "\n\n".join(cells) for q, cells in solution_cells(master).items()}


def answer_cells(nb: nbformat.NotebookNode) -> dict[str, list[int]]:
    """Question name -> indices of its answer cells in a student notebook (otter tags them)."""
    found: dict[str, list[int]] = {}
    current: list[int] = []
    for i, cell in enumerate(nb.cells):
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            current.append(i)
        m = re.fullmatch(r'grader\.check\("(\w+)"\)', cell.source.strip()) if cell.cell_type == "code" else None
        if m:
            found[m.group(1)] = current
            current = []
    return found


def answered(student: Path, master: Path, answers: dict[str, str] | None = None,
             extra: list[str] = ()) -> nbformat.NotebookNode:
    """The student notebook answered with the master's solutions; ``answers`` replace a question's answer cells by
    one source (the others emptied); ``extra`` cells go in after the set-up."""
    nb = nbformat.read(student, as_version=4)
    cells = answer_cells(nb)
    for question, sources in solution_cells(master).items():
        for index, source in zip(cells[question], sources, strict=True):
            nb.cells[index].source = source
    for question, source in (answers or {}).items():
        first, *rest = cells[question]
        nb.cells[first].source = source
        for index in rest:
            nb.cells[index].source = ""
    for source in extra:
        nb.cells.insert(4, nbformat.v4.new_code_cell(source))
    return nb


def master_cells(master: Path) -> list[str]:
    """A master's set-up cells (outside every question) and solution cells, in order; tests and demo cells left out."""
    cells, question, solution = [], False, False
    for cell in nbformat.read(master, as_version=4).cells:
        if cell.cell_type == "raw":
            source = cell.source.strip()
            question = source.startswith("# BEGIN QUESTION") or question and source != "# END QUESTION"
            solution = source == "# BEGIN SOLUTION" or solution and source != "# END SOLUTION"
        elif cell.cell_type == "code" and (solution or not question):
            cells.append(cell.source)
    return cells


def master_namespace(master: Path) -> dict:
    """The master's answers: its set-up and solution cells run in one namespace, as in the notebook."""
    ns: dict = {}
    threads = torch.get_num_threads()
    try:
        for source in master_cells(master):
            exec(compile(source, str(master), "exec"), ns)
    finally:
        torch.set_num_threads(threads)  # the notebooks run on one thread; the other tests need not
    return ns


def in_process_grade(assignment, question: str, ns: dict) -> tuple[float, list[str]]:
    """The points the hidden checks of ``question`` give the answers in ``ns`` (through the data the grader reads,
    in this process), and the hints of what failed."""
    import json

    from vit_edu.homework.checks import Example, judge, run_example
    from vit_edu.homework.plain import PlainError, encode

    score, hints = 0.0, []
    for c in assignment.questions[question].checks:
        ok = True
        for ex in c.examples:
            ex = Example.from_data(json.loads(json.dumps(ex.to_data())))  # as the grader reads it from the zip
            try:
                got = decode(json.loads(json.dumps(encode(run_example(ns.get(ex.answer), ex)))))
            except (AssertionError, PlainError):
                ok = False
                continue
            verdict = judge(got, ex)
            if verdict is not None:
                ok = False
                hints.append(verdict[1])
        score += c.points if ok else 0
    return score, hints


def assert_close(a, b, where: str) -> None:
    """Two JSON documents of encoded data agree: tensors and floats to 1e-6, everything else exactly."""
    if isinstance(a, dict) and "tensor" in a:
        x, y = decode(a), decode(b)
        assert x.dtype == y.dtype and x.shape == y.shape, where
        assert torch.allclose(x.double(), y.double(), atol=1e-6, rtol=0) if x.is_floating_point() else \
            torch.equal(x, y), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert isinstance(b, (int, float)) and abs(a - b) <= 1e-6, where
    else:
        assert a == b, where
