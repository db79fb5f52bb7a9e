"""Copied answers: copies of the solution or of another student are paired, independent and unanswered work is not.

``tests/copies_data/<question>/`` holds a question's template and published solution, and one answer per student
(the first line of each file says what it is).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vit_edu.homework.copies import SOLUTION, CopyPair, copies_report, find_copies

DATA = Path(__file__).resolve().parent / "copies_data"
QUESTIONS = sorted(p.name for p in DATA.iterdir() if p.is_dir())
UNANSWERED = {"gus", "hal"}
# Every pair the data holds: three copies of the solution (renamed; edited; padded) also match one another.
COPIES = {
    ("my_patchify", "ana", SOLUTION), ("my_patchify", "jon", SOLUTION), ("my_patchify", "ana", "jon"),
    ("my_patchify", "dan", "fay"),
    ("my_attention", "ana", SOLUTION), ("my_attention", "ivy", SOLUTION), ("my_attention", "ana", "ivy"),
    ("my_attention", "dan", "fay"),
    ("shifted_mask", "ana", SOLUTION), ("shifted_mask", "jon", SOLUTION), ("shifted_mask", "ana", "jon"),
}


def load(students: set[str] | None = None) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, str]]:
    """(answers, solutions, templates) from tests/copies_data, all students or only ``students``."""
    answers: dict[str, dict[str, str]] = {}
    for question in QUESTIONS:
        for path in sorted((DATA / question).glob("*.py")):
            if path.stem not in {"template", "solution"} and (students is None or path.stem in students):
                answers.setdefault(path.stem, {})[question] = path.read_text()
    solutions = {q: (DATA / q / "solution.py").read_text() for q in QUESTIONS}
    templates = {q: (DATA / q / "template.py").read_text() for q in QUESTIONS}
    return answers, solutions, templates


@pytest.fixture(scope="module")
def pairs() -> list[CopyPair]:
    return find_copies(*load())


def found(pairs: list[CopyPair]) -> set[tuple[str, str, str]]:
    return {(p.question, p.first, p.second) for p in pairs}


def test_copies_of_the_published_solution_are_found(pairs):
    # ana renamed every variable, jon also inlined one and chained two calls, ivy padded it with asserts and a print
    assert {("my_patchify", "ana", SOLUTION), ("my_patchify", "jon", SOLUTION), ("my_attention", "ana", SOLUTION),
            ("my_attention", "ivy", SOLUTION), ("shifted_mask", "ana", SOLUTION),
            ("shifted_mask", "jon", SOLUTION)} <= found(pairs)


def test_a_copy_of_another_student_is_found(pairs):
    # fay renamed dan's variables and helpers, put one helper after the main function, reworded the comments
    assert {("my_patchify", "dan", "fay"), ("my_attention", "dan", "fay")} <= found(pairs)


def test_independent_answers_are_not_paired(pairs):
    # einops, F.unfold, loops, Tensor.unfold; einsum, bmm, helpers; slices, modular arithmetic, roll and unfold
    assert found(pairs) == COPIES


def test_pairs_come_most_similar_first_within_bounds(pairs):
    similarities = [p.similarity for p in pairs]
    assert similarities == sorted(similarities, reverse=True)
    assert all(0.5 <= s <= 1.0 for s in similarities)
    assert all(p.first != SOLUTION for p in pairs)


def test_copies_and_independent_answers_are_far_apart():
    # the margins the module's parameters were chosen for: every copy above 0.6, every independent pair below 0.4
    every = find_copies(*load(), threshold=0.0)
    assert min(p.similarity for p in every if (p.question, p.first, p.second) in COPIES) > 0.6
    assert max(p.similarity for p in every if (p.question, p.first, p.second) not in COPIES) < 0.4


@pytest.mark.parametrize("min_tokens", [50, 0])
def test_unanswered_notebooks_are_not_paired(min_tokens):
    # gus hands the template back; hal added a comment, let a formatter re-wrap the signature, or wrote pass: with
    # nothing of their own, they match neither the solution nor each other, even when every answer is compared
    answers, solutions, templates = load(UNANSWERED)
    assert find_copies(answers, solutions, templates, min_tokens=min_tokens) == []


def test_one_line_answers_are_not_compared():
    template = ('def token_count(height: int, width: int, patch_size: int, channels: int) -> tuple[int, int]:\n'
                '    """(N, C·P·P) for a C×H×W image cut into P×P patches."""\n    ...\n')
    solution = template.replace("...", "return (height // patch_size) * (width // patch_size), "
                                       "channels * patch_size * patch_size")
    # both copy the solution's one line, renaming a parameter (in the signature too)
    answers = {"ana": {"q": solution.replace("height", "h")}, "ben": {"q": solution.replace("width", "w")}}
    assert find_copies(answers, {"q": solution}, {"q": template}) == []
    assert len(find_copies(answers, {"q": solution}, {"q": template}, min_tokens=0)) == 3  # identical, all three


def test_the_report_names_the_pairs_and_says_they_are_for_review(pairs):
    report = copies_report(pairs)
    assert "for review, not automatic zeros" in report
    assert "| my_attention | dan | fay | 100% |" in report
    assert f"| my_patchify | jon | {SOLUTION} |" in report
    assert sum(line.startswith(tuple(f"| {q} |" for q in QUESTIONS)) for line in report.splitlines()) == len(COPIES)
    empty = copies_report([])
    assert "for review, not automatic zeros" in empty and "No two answers" in empty
