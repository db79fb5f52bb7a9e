"""The homework system: otter assign builds, the grader's scores, classic mistakes, hostile submissions.

Run alone with ``pytest tests/test_homework.py`` (``-k homework``). One ``vit_edu.grade`` call grades every
submission below (two at a time), so the slow part runs once per session.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch

from vit_edu import feedback, patchify_without_permute
from vit_edu.grade import Limits, build_homework, grade_folder, write_csv

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "homework"
POINTS = {"hw1_tokens": 22, "hw2_encoder": 21, "hw3_training": 25}

NO_PERMUTE = '''def my_patchify(images, patch_size):
    b, c, h, w = images.shape
    return images.reshape(b, (h // patch_size) * (w // patch_size), c * patch_size * patch_size)
'''
N_NOT_N_PLUS_1 = '''def pos_embed_shape(height, width, patch_size, dim, cls):
    return (1, (height // patch_size) * (width // patch_size), dim)
'''
NO_SQRT_D = '''def my_attention(q, k, v):
    weights = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    return weights @ v, weights
'''
MEAN_NOT_CLS = '''def readout(tokens, pool):
    return tokens.mean(dim=1)
'''
ROLLOUT_NO_IDENTITY = '''def my_rollout(attentions):
    b, _, s, _ = attentions[0].shape
    rollout = torch.eye(s).expand(b, s, s)
    for a in attentions:
        rollout = a.mean(1) @ rollout
    return rollout
'''
INTERPOLATE_NO_TRANSPOSE = '''def my_interpolate(pos, old_grid, new_grid):
    d = pos.shape[-1]
    image = pos[:, 1:].reshape(1, d, *old_grid)
    image = torch.nn.functional.interpolate(image, size=new_grid, mode="bicubic", align_corners=True)
    return torch.cat([pos[:, :1], image.reshape(1, d, -1).transpose(1, 2)], dim=1)
'''
# Hostile answers: each must fail its own question only.
HOSTILE_A = {
    "ch00_shapes": "raise ValueError('a cell that raises')\nvit_b16_shapes = {'N': 196, 'S': 197, 'D': 768}",
    "ch01_token_count": "import sys\nsys.exit()\ndef token_count(h, w, p, c):\n    return (h // p) * (w // p), c * p * p",
    "ch02_toy_tokens": "import os\nos._exit(1)\ntoy_tokens = [[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]]",
    "ch03_patch_params": "def patch_embedding_params(c, p, d:\n    return d * c * p * p + d",
}
HOSTILE_B = {
    "ch01_patchify": "def my_patchify(images, patch_size):\n    while True:\n        pass",
    "ch02_toy_projection": "while True:\n    pass\ntoy_projected = [[14, -5], [22, -5], [46, -5], [54, -5]]",
    "ch03_linear_to_conv": (
        "import os\nfor name in os.listdir('.'):\n    if os.path.isfile(name):\n"
        "        open(name, 'w').write('overwritten')\n        os.remove(name)\nlinear_to_conv = None"
    ),
    "ch04_seq_len": "big = bytearray(8 * 1024**3)\ndef pos_embed_shape(h, w, p, d, cls):\n    return (1, (h // p) * (w // p) + cls, d)",
}


def question_cells(nb: nbformat.NotebookNode) -> dict[str, int]:
    """Question name -> index of its answer cell in a student notebook (the cell before its check)."""
    found = {}
    for i, cell in enumerate(nb.cells):
        m = re.fullmatch(r'grader\.check\("(\w+)"\)', cell.source.strip())
        if m:
            found[m.group(1)] = max(j for j in range(i) if "otter_answer_cell" in nb.cells[j].metadata.get("tags", []))
    return found


def solutions(master: Path) -> dict[str, str]:
    """Question name -> solution source from a master notebook."""
    nb = nbformat.read(master, as_version=4)
    out, name = {}, None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            name = re.search(r"name:\s*(\w+)", cell.source).group(1)
        if cell.cell_type == "raw" and cell.source.strip() == "# BEGIN SOLUTION":
            out[name] = nb.cells[i + 1].source
    return out


def submission(student: Path, master: Path, answers: dict[str, str], dest: Path) -> None:
    """The student notebook with the master's solutions, then ``answers`` replacing some of them."""
    nb = nbformat.read(student, as_version=4)
    cells = question_cells(nb)
    for name, source in {**solutions(master), **answers}.items():
        nb.cells[cells[name]].source = source
    nbformat.write(nb, dest)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("homework")
    build_homework(MASTERS, out)
    return out


@pytest.fixture(scope="session")
def graded(built, tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    for name in POINTS:
        (subs / f"{name}.ipynb").write_bytes((MASTERS / f"{name}.ipynb").read_bytes())  # a master, as handed in
        (subs / f"untouched_{name}.ipynb").write_bytes((built / "student" / f"{name}.ipynb").read_bytes())
    hw1 = (built / "student" / "hw1_tokens.ipynb", MASTERS / "hw1_tokens.ipynb")
    hw2 = (built / "student" / "hw2_encoder.ipynb", MASTERS / "hw2_encoder.ipynb")
    submission(*hw1, {"ch01_patchify": NO_PERMUTE, "ch04_seq_len": N_NOT_N_PLUS_1}, subs / "wrong_hw1_tokens.ipynb")
    submission(*hw2, {"ch05_attention": NO_SQRT_D, "ch08_readout": MEAN_NOT_CLS}, subs / "wrong_hw2_encoder.ipynb")
    survives = {"ch04_embed_tokens": "quit()\n" + solutions(MASTERS / "hw1_tokens.ipynb")["ch04_embed_tokens"]}
    submission(*hw1, {**HOSTILE_A, **survives}, subs / "hostile_a_hw1_tokens.ipynb")  # quit() is ignored
    submission(*hw1, HOSTILE_B, subs / "hostile_b_hw1_tokens.ipynb")
    (subs / "garbage_hw1_tokens.ipynb").write_text("this is not a notebook")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in subs.iterdir()}
    start = time.monotonic()
    limits = Limits(timeout=240, cell_timeout=30, test_timeout=5)
    rows = grade_folder(subs, built / "autograder", limits=limits, jobs=2)
    seconds = time.monotonic() - start
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in subs.iterdir()}
    out = tmp_path_factory.mktemp("grades") / "grades.csv"
    write_csv(rows, out)
    with open(out) as f:
        table = {r["submission"].removesuffix(".ipynb"): r for r in csv.DictReader(f)}
    print(f"graded {len(rows)} submissions in {seconds:.0f} s", file=sys.stderr)
    return {"table": table, "before": before, "after": after, "rows": rows}


def scores(row: dict[str, str]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k.startswith("ch") and v != ""}


def test_student_notebooks_have_no_solutions_or_hidden_tests(built):
    for name in POINTS:
        text = (built / "student" / f"{name}.ipynb").read_text()
        master = (MASTERS / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" in master and "hidden: true" in master
        assert "BEGIN SOLUTION" not in text and "# SOLUTION" not in text
        assert "hidden=True" not in text and "hidden: true" not in text
        nb = nbformat.reads(text, as_version=4)
        assert len(question_cells(nb)) >= 8, "every question has an answer cell and a grader.check cell"
        assert all("..." in nb.cells[i].source for i in question_cells(nb).values())
        assert (built / "autograder" / f"{name}.zip").stat().st_size > 0


def test_hidden_tests_are_in_the_autograder(built):
    import zipfile

    with zipfile.ZipFile(built / "autograder" / "hw1_tokens.zip") as z:
        test = z.read("tests/ch01_patchify.py").decode()
    assert test.count("hidden=True") == 2 and test.count("hidden=False") == 1


def test_masters_score_full_marks(graded):
    for name, points in POINTS.items():
        row = graded["table"][name]
        assert row["status"] == "graded", row["error"]
        assert float(row["total"]) == float(row["possible"]) == points


def test_untouched_student_notebooks_score_zero(graded):
    for name, points in POINTS.items():
        row = graded["table"][f"untouched_{name}"]
        assert row["status"] == "graded", row["error"]
        assert float(row["total"]) == 0 and float(row["possible"]) == points


def test_classic_mistakes_get_the_intended_partial_marks(graded):
    hw1, hw2 = scores(graded["table"]["wrong_hw1_tokens"]), scores(graded["table"]["wrong_hw2_encoder"])
    assert hw1["ch01_patchify"] == 1  # the shape test passes, the toy and the random values fail
    assert hw1["ch04_seq_len"] == 1  # only the no-CLS cases are right
    assert hw2["ch05_attention"] == 1  # shape and row sums pass, the values fail
    assert hw2["ch08_readout"] == 1  # the mean case passes, both CLS cases fail
    assert sum(hw1.values()) == 22 - 2 - 2 and sum(hw2.values()) == 21 - 2 - 2


def _defined(source: str, name: str):
    env: dict = {"torch": torch}
    exec(source, env)
    return env[name]


@pytest.mark.parametrize(
    "check, source, name, words",
    [
        (feedback.check_patchify, NO_PERMUTE, "my_patchify", "did you permute before the final reshape"),
        (feedback.check_seq_len, N_NOT_N_PLUS_1, "pos_embed_shape", "S = N + 1"),
        (feedback.check_attention, NO_SQRT_D, "my_attention", "divide the scores by √d"),
        (feedback.check_readout, MEAN_NOT_CLS, "readout", "not the mean of the tokens"),
        (feedback.check_rollout, ROLLOUT_NO_IDENTITY, "my_rollout", "add the identity"),
        (feedback.check_interpolate, INTERPOLATE_NO_TRANSPOSE, "my_interpolate", "transpose (1, N, D) to (1, D, N)"),
    ],
)
def test_public_check_names_the_mistake(check, source, name, words):
    with pytest.raises(AssertionError, match=re.escape(words)):
        check(_defined(source, name), "public")


def test_public_patchify_message_is_the_books_example():
    with pytest.raises(AssertionError, match=re.escape("token 0 should be [1, 2, 5, 6], got [1, 2, 3, 4]")):
        feedback.check_patchify(patchify_without_permute, "public")


def test_missing_and_placeholder_answers_say_what_to_do():
    with pytest.raises(AssertionError, match="not defined"):
        feedback.check_patchify(None)
    with pytest.raises(AssertionError, match="still `...`"):
        feedback.check_toy_tokens(...)
    with pytest.raises(AssertionError, match="returned None"):
        feedback.check_token_count(lambda *a: None)


@pytest.mark.parametrize("hostile, name", [(HOSTILE_A, "hostile_a_hw1_tokens"), (HOSTILE_B, "hostile_b_hw1_tokens")])
def test_hostile_answers_fail_only_their_question(graded, hostile, name):
    row = graded["table"][name]
    assert row["status"] == "graded", row["error"]
    got = scores(row)
    full = scores(graded["table"]["hw1_tokens"])
    for question, points in full.items():
        assert got[question] == (0 if question in hostile else points), question


def test_a_bad_file_fails_its_row_only(graded):
    row = graded["table"]["garbage_hw1_tokens"]
    assert row["status"] == "failed" and "not a readable notebook" in row["error"]
    assert sum(r.status == "graded" for r in graded["rows"]) == len(graded["rows"]) - 1


def test_submissions_are_never_modified(graded):
    assert graded["before"] == graded["after"]


def test_grading_time_per_submission(graded):
    times = [r.seconds for r in graded["rows"] if r.status == "graded"]
    print(f"seconds per submission: {sorted(times)}", file=sys.stderr)
    assert max(times) < 180


def test_grade_command_line_writes_one_csv(built, tmp_path):
    from vit_edu.grade import main

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "not_homework.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                          "nbformat_minor": 5}))
    main([str(subs), "--autograder-dir", str(built / "autograder"), "--out", str(tmp_path / "g.csv")])
    rows = list(csv.DictReader(open(tmp_path / "g.csv")))
    assert len(rows) == 1 and rows[0]["status"] == "failed" and "--assignment" in rows[0]["error"]
