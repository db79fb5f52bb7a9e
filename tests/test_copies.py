"""Copied answers: copies of the solution or of another student are paired, independent and unanswered work is not.

``tests/copies_data/<question>/`` holds a question's template and published solution, and one answer per student
(the first line of each file says what it is).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vit_edu.homework.copies import (OPAQUE, SAME, SHARED, SOLUTION, CopyPair, copies_report, find_copies,
                                     markdown_escape)

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


TOKEN_TEMPLATE = ('def token_count(height: int, width: int, patch_size: int, channels: int) -> tuple[int, int]:\n'
                  '    """(N, C·P·P) for a C×H×W image cut into P×P patches."""\n    ...\n')
TOKEN_SOLUTION = TOKEN_TEMPLATE.replace("...", "return (height // patch_size) * (width // patch_size), "
                                               "channels * patch_size * patch_size")


def test_one_line_copies_are_found_by_their_normalised_code():
    # both copy the solution's one line, renaming a parameter (in the signature too): too short for copydetect
    answers = {"ana": {"q": TOKEN_SOLUTION.replace("height", "h")}, "ben": {"q": TOKEN_SOLUTION.replace("width", "w")}}
    pairs = find_copies(answers, {"q": TOKEN_SOLUTION}, {"q": TOKEN_TEMPLATE})
    assert found(pairs) == {("q", "ana", "ben"), ("q", "ana", SOLUTION), ("q", "ben", SOLUTION)}
    assert {(p.similarity, p.reason) for p in pairs} == {(1.0, SAME)}


def test_answers_that_differ_only_in_names_comments_docstrings_and_layout_are_the_same_code():
    ana = ("def token_count(height, width, patch_size, channels):\n    '''Tokens, and the length of each.'''\n"
           "    scale = 1e3  # not needed\n    return (height // patch_size) * (width // patch_size), "
           "channels * patch_size * patch_size, 'done'\n")
    ben = ('def token_count(h,w,p,c):\n    # how many tokens, how long\n    scale=1000.0\n\n'
           '    return (h//p)*(w//p),  c*p*p, "done"\n')
    pairs = find_copies({"ana": {"q": ana}, "ben": {"q": ben}}, {})
    assert [(p.first, p.second, p.similarity, p.reason) for p in pairs] == [("ana", "ben", 1.0, SAME)]


def test_short_answers_written_differently_are_not_paired():
    answers = {"ana": {"q": TOKEN_TEMPLATE.replace("...", "return height // patch_size * (width // patch_size), "
                                                          "channels * patch_size ** 2")},
               "ben": {"q": TOKEN_TEMPLATE.replace("...", "return (height * width) // (patch_size * patch_size), "
                                                          "patch_size * patch_size * channels")}}
    assert find_copies(answers, {"q": TOKEN_SOLUTION}, {"q": TOKEN_TEMPLATE}) == []


def test_literal_answers_are_not_paired():
    # everyone who is right writes the same list; a letter for a reading question likewise
    template, solution = "toy_tokens = ...\nanswer = ...", "toy_tokens = [[1, 5], [2, 6]]\nanswer = 'b'"
    answers = {"ana": {"q": solution}, "ben": {"q": 'toy_tokens = [[1, 5],\n              [2, 6]]\nanswer = "b"'}}
    assert find_copies(answers, {"q": solution}, {"q": template}) == []


PAYLOAD = "ZGVmIG15X3BhdGNoaWZ5KGltYWdlcywgcCk6CiAgICByZXR1cm4gaW1hZ2Vz"


def test_opaque_answers_are_paired_only_when_they_share_a_payload():
    answers = {
        "ana": {"q": f"import base64\nexec(base64.b64decode('{PAYLOAD}'))"},
        "ben": {"q": f"import base64 as b\nsource = b.b64decode('{PAYLOAD}')\nexec(source, globals())"},
        "cara": {"q": f"import base64\nexec(base64.b64decode('{PAYLOAD[::-1]}'))"},  # ana's wrapper, another payload
        "dan": {"q": "exec(open('answer.py').read())"},  # opaque, no payload: nothing to compare
        "eve": {"q": "exec(open('answer.py').read())"},
    }
    pairs = find_copies(answers, {})
    assert [(p.first, p.second, p.similarity, p.reason) for p in pairs] == [("ana", "ben", 1.0, OPAQUE)]


def test_opaque_answers_that_keep_the_template_share_no_payload_by_it():
    # the template's docstring and its constant are long strings in both answers
    template = 'LAYOUT = "(B, C, H, W) -> (B, N, C·P·P), one token per patch"\n\n' + (
        DATA / "my_patchify" / "template.py").read_text()
    wrapped = {name: template.replace("    ...", f"    exec(base64.b64decode('{payload}'))")
               for name, payload in (("ana", PAYLOAD), ("ben", PAYLOAD[::-1]))}
    assert find_copies({name: {"q": code} for name, code in wrapped.items()}, {}, {"q": template}) == []


def test_a_pair_made_by_an_old_caller_says_it_shares_code():
    assert CopyPair("q", "ana", "ben", 0.7).reason == SHARED


def test_markdown_escape_keeps_names_as_written_on_one_line():
    assert markdown_escape("a|b*c_d`e<f>[g](h)\r\nnext") == r"a\|b\*c\_d\`e\<f\>\[g\](h) next"
    assert markdown_escape("plain name.ipynb") == "plain name.ipynb"


def test_the_report_names_the_pairs_and_says_they_are_for_review(pairs):
    report = copies_report(pairs)
    assert "for review, not automatic zeros" in report
    assert r"| my\_attention | dan | fay | 100% | shared code |" in report
    assert rf"| my\_patchify | jon | {SOLUTION} |" in report
    assert rf"| my\_patchify | ana | {SOLUTION} | 100% | {SAME} |" in report
    starts = tuple(f"| {markdown_escape(q)} |" for q in QUESTIONS)
    assert sum(line.startswith(starts) for line in report.splitlines()) == len(COPIES)
    empty = copies_report([])
    assert "for review, not automatic zeros" in empty and "No two answers" in empty


def test_the_report_escapes_the_names_students_chose():
    hostile = "x | y\n| injected | row | 0% |<img src=x>`*_[link](u)"
    report = copies_report([CopyPair("q", hostile, "ben", 0.9)])
    assert len(report.splitlines()) == 7 and re.search(r"(?<!\\)[<`*_\[]", report.splitlines()[-1]) is None
    assert len(re.findall(r"(?<!\\)\|", report.splitlines()[-1])) == 6  # five cells, however the name is spelt
