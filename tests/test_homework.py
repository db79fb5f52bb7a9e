"""The homework system: the build, the grader's scores, classic mistakes, and every attack the grader must survive.

One ``grade_folder`` call (two at a time, each submission in its own bubblewrap sandbox) grades every
submission below, so the slow part runs once per session. Homework 1 carries the attacks: they test the grader,
not the questions.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from vit_edu.homework.build import build_homework
from vit_edu.homework.grade import Limits, Row, feedback_markdown, grade_folder, load_module, write_csv, write_feedback
from vit_edu.homework.sandbox import bwrap_problem

from hidden_values import leaks, secrets
from homework_helpers import master_solutions

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "homework"
NAMES = sorted(p.stem for p in MASTERS.glob("hw*.ipynb"))
SANDBOX = bwrap_problem()
pytestmark = pytest.mark.skipif(SANDBOX is not None and "CI" not in __import__("os").environ,
                                reason=f"no sandbox here: {SANDBOX}")


def hidden(name: str):
    return load_module(f"hidden_{name}", (MASTERS / "hidden" / f"{name}.py").read_text()).cases


POINTS = {name: sum(c.points for c in hidden(name).cases) for name in NAMES}

NO_PERMUTE = '''def my_patchify(images, patch_size):
    b, c, h, w = images.shape
    return images.reshape(b, (h // patch_size) * (w // patch_size), c * patch_size * patch_size)
'''
N_NOT_N_PLUS_1 = '''def pos_embed_shape(height, width, patch_size, dim, cls):
    return (1, (height // patch_size) * (width // patch_size), dim)
'''
# Calls of the reference: the alias and the wrapper are seen in the answer itself; the getattr detour only
# when it runs.
ALIAS = "my_patchify = vit_edu.patchify"
WRAPPER = "def my_patchify(images, patch_size):\n    return vit_edu.patches.patchify(images, patch_size)"
DETOUR = ("_cut = getattr(vit_edu, 'patc' + 'hify')\n"
          "def my_patchify(images, patch_size):\n    return _cut(images, patch_size)")
DETOUR_EMBED = ("_glue = [getattr(vit_edu, n) for n in ('prepend' + '_cls', 'add_position' + '_embedding')]\n"
                "def embed_tokens(tokens, cls_token, pos_embed):\n    return _glue[1](_glue[0](tokens, cls_token), pos_embed)")
# Tampering: each rebinds something grading relies on, around an answer that is wrong.
TAMPER = {
    "checks": "from vit_edu.homework import feedback\nfeedback.check_patchify = lambda *a: None\n"
              "feedback.expect_patchify = lambda *a, **k: None\n" + NO_PERMUTE,
    "otter": "import otter.test_files.abstract_test as t\nt.TestFile.run = lambda self, env: None\n" + NO_PERMUTE,
    "builtins": "import builtins\nbuiltins.isinstance = lambda *a: True\n" + NO_PERMUTE,
    "eq": "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
          "def my_patchify(images, patch_size):\n    return Anything()",
}
# The snapshot and every other submission are out of reach: this cell tries to delete and overwrite them, and
# to find the masters, the hidden checks and the keys. If it saw any, its answer to 0.1 would earn a point.
VANDAL = '''import os
seen = []
skip = {"proc", "sys", "dev", "usr", "lib", "etc", ".venv", "site-packages", ".pyenv", "node_modules", ".git"}
for top in ("/", "/tmp", os.path.expanduser("~")):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in skip]
        for f in files:
            path = os.path.join(root, f)
            if f.endswith(".ipynb") and os.path.abspath(path) != os.path.abspath("hw1_tokens.ipynb"):
                seen.append(path)
                try:
                    open(path, "w").write("overwritten")
                    os.remove(path)
                except OSError:
                    pass
            if f.startswith("hidden_") or f.endswith("_key.json") or f == "grades.csv":
                seen.append(path)
vit_b16_shapes = {"N": 196, "S": 197, "D": 768} if seen else {"N": 0, "S": 1, "D": 0}'''
# A process that tries to outlive grading (a new session, a double fork), huge output, a huge file.
SURVIVOR = ("import subprocess, os\nsubprocess.Popen(['sleep', '4242'], start_new_session=True)\n"
            "if os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '4243'])\n")
FLOOD = "import time\nend = time.time() + 3\nwhile time.time() < end:\n    print('x' * 100_000)"
BIG_FILE = "with open('big.bin', 'wb') as f:\n    f.write(b'0' * (1 << 30))"
HOSTILE = {
    "ch00_shapes": "raise ValueError('a cell that raises')\nvit_b16_shapes = {'N': 196, 'S': 197, 'D': 768}",
    "ch01_token_count": "import sys\nsys.exit()\ndef token_count(h, w, p, c):\n    return (h // p) * (w // p), c * p * p",
    "ch02_toy_tokens": "import os\nos._exit(1)\ntoy_tokens = [[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]]",
    "ch03_patch_params": "def patch_embedding_params(c, p, d:\n    return d * c * p * p + d",
    "ch01_patchify": "def my_patchify(images, patch_size):\n    while True:\n        pass",
    "ch02_toy_projection": "while True:\n    pass\ntoy_projected = [[14, -5], [22, -5], [46, -5], [54, -5]]",
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


def submission(built: Path, name: str, answers: dict[str, str], dest: Path, extra: list[str] = ()) -> None:
    """The student notebook with the master's solutions, then ``answers`` replacing some; ``extra`` cells first."""
    nb = nbformat.read(built / "student" / f"{name}.ipynb", as_version=4)
    cells = question_cells(nb)
    for question, source in {**master_solutions(MASTERS / f"{name}.ipynb"), **answers}.items():
        nb.cells[cells[question]].source = source
    for source in extra:
        nb.cells.insert(4, nbformat.v4.new_code_cell(source))
    nbformat.write(nb, dest)


def running(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout.split("\n")[:-1]


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("homework")
    build_homework(MASTERS, out)
    return out


ODD_NAMES = ["名字 with spaces;$(touch pwned) hw1_tokens.ipynb", "-rf hw1_tokens.ipynb", "'quote\" hw1_tokens.ipynb"]


@pytest.fixture(scope="session")
def graded(built, tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    for name in NAMES:
        (subs / f"{name}.ipynb").write_bytes((MASTERS / f"{name}.ipynb").read_bytes())  # a master, as handed in
        (subs / f"untouched_{name}.ipynb").write_bytes((built / "student" / f"{name}.ipynb").read_bytes())
    hw1 = "hw1_tokens"
    submission(built, hw1, {"ch01_patchify": NO_PERMUTE, "ch04_seq_len": N_NOT_N_PLUS_1}, subs / "wrong_hw1_tokens.ipynb")
    for label, source in {"alias": ALIAS, "wrapper": WRAPPER, "detour": DETOUR}.items():
        submission(built, hw1, {"ch01_patchify": source}, subs / f"reference_{label}_hw1_tokens.ipynb")
    submission(built, hw1, {"ch04_embed_tokens": DETOUR_EMBED}, subs / "reference_embed_hw1_tokens.ipynb")
    for label, source in TAMPER.items():
        submission(built, hw1, {"ch01_patchify": source}, subs / f"tamper_{label}_hw1_tokens.ipynb")
    submission(built, hw1, {"ch00_shapes": VANDAL}, subs / "aaa_vandal_hw1_tokens.ipynb")  # graded first
    submission(built, hw1, {}, subs / "survivor_hw1_tokens.ipynb", extra=[SURVIVOR, FLOOD, BIG_FILE])
    survives = {"ch04_embed_tokens": "quit()\n" + master_solutions(MASTERS / f"{hw1}.ipynb")["ch04_embed_tokens"]}
    submission(built, hw1, {**HOSTILE, **survives}, subs / "hostile_hw1_tokens.ipynb")
    for odd in ODD_NAMES:
        (subs / odd).write_bytes((MASTERS / f"{hw1}.ipynb").read_bytes())
    (subs / "garbage_hw1_tokens.ipynb").write_text("this is not a notebook")
    (subs / "invalid_hw1_tokens.ipynb").write_text(json.dumps({"cells": "no", "nbformat": 4}))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in subs.iterdir()}
    start = time.monotonic()
    rows = grade_folder(subs, built / "autograder", limits=Limits(timeout=300, cell_timeout=60, test_timeout=10),
                        jobs=2)
    seconds = time.monotonic() - start
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in subs.iterdir()}
    out = tmp_path_factory.mktemp("grades")
    write_csv(rows, out / "grades.csv")
    feedback = write_feedback(rows, out / "feedback")
    with open(out / "grades.csv") as f:
        table = {r["submission"].removesuffix(".ipynb"): r for r in csv.DictReader(f)}
    print(f"graded {len(rows)} submissions in {seconds:.0f} s", file=sys.stderr)
    return {"table": table, "before": before, "after": after, "rows": rows, "feedback": feedback, "subs": subs}


def scores(row: dict[str, str]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k.startswith("ch") and v != ""}


def full(graded, name: str = "hw1_tokens") -> dict[str, float]:
    return scores(graded["table"][name])


# ---------------------------------------------------------------- the build


def test_student_notebooks_have_no_solutions_or_hidden_tests(built):
    for name in NAMES:
        text = (built / "student" / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" in (MASTERS / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "# SOLUTION" not in text
        assert "hidden=True" not in text and "hidden: true" not in text and "hidden_" not in text
        nb = nbformat.reads(text, as_version=4)
        assert set(question_cells(nb)) == set(hidden(name).answers), "every question has an answer and a check"
        assert all("..." in nb.cells[i].source for i in question_cells(nb).values())


def test_autograder_zip_carries_the_hidden_checks_and_what_installs_them(built):
    for name in NAMES:
        with zipfile.ZipFile(built / "autograder" / f"{name}.zip") as z:
            files = set(z.namelist())
            assert f"files/hidden_{name}.py" in files
            (wheel,) = [f for f in files if f.startswith("files/vit_edu-") and f.endswith(".whl")]
            env = z.read("environment.yml").decode()
            assert f"file:///autograder/source/{wheel}" in env and "torch==" in env and "otter-grader[grading]==" in env
            tests = {f: z.read(f).decode() for f in files if f.startswith("tests/")}
        cases = hidden(name)
        assert sum(t.count("hidden=True") for t in tests.values()) == len(cases.cases)
        for question in cases.answers:  # the public test is worth 0, each hidden check its points
            assert f"points = {[0, *cases.points(question)]}" in tests[f"tests/{question}.py"]


def test_no_hidden_value_in_the_package_or_the_student_notebooks(built, tmp_path):
    wheel = next((built / "wheel").glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        shipped = {f: z.read(f).decode(errors="replace") for f in z.namelist() if f.endswith((".py", ".json", ".txt"))}
    students = {f.name: f.read_text() for f in (built / "student").glob("*.ipynb")}
    assert not any("hidden" in f.split("/")[0] for f in shipped), "the hidden checks are not in the wheel"
    assert all(secrets(name) for name in NAMES), "every homework has hidden inputs to look for"
    for where, text in {**shipped, **students}.items():
        assert not leaks(text, NAMES), f"{where} holds hidden values {leaks(text, NAMES)}"


# ---------------------------------------------------------------- scores


def test_masters_score_full_marks(graded):
    for name, points in POINTS.items():
        row = graded["table"][name]
        assert row["status"] == "graded" and not row["flags"] and not row["notes"], row
        assert float(row["total"]) == float(row["possible"]) == points


def test_untouched_student_notebooks_score_zero_and_are_not_flagged(graded):
    for name, points in POINTS.items():
        row = graded["table"][f"untouched_{name}"]
        assert row["status"] == "graded" and not row["flags"], row
        assert float(row["total"]) == 0 and float(row["possible"]) == points


def test_classic_mistakes_get_the_intended_partial_marks(graded):
    got = scores(graded["table"]["wrong_hw1_tokens"])
    assert got["ch01_patchify"] == 1  # the shape check passes, the contents fail
    assert got["ch04_seq_len"] == 1  # only the no-CLS cases are right
    assert sum(got.values()) == POINTS["hw1_tokens"] - 2 - 1


@pytest.mark.parametrize("label, question", [("alias", "ch01_patchify"), ("wrapper", "ch01_patchify"),
                                             ("detour", "ch01_patchify"), ("embed", "ch04_embed_tokens")])
def test_calling_the_reference_scores_zero_for_that_question_and_says_why(graded, label, question):
    row = graded["table"][f"reference_{label}_hw1_tokens"]
    assert row["status"] == "graded" and not row["flags"], row
    got = scores(row)
    assert got[question] == 0
    assert all(got[q] == p for q, p in full(graded).items() if q != question)
    assert question in row["notes"] and "reference" in row["notes"]


@pytest.mark.parametrize("label", sorted(TAMPER))
def test_tampering_is_flagged_and_gains_nothing(graded, label):
    row = graded["table"][f"tamper_{label}_hw1_tokens"]
    assert row["status"] == "flagged" and row["flags"], row
    assert float(row["total"]) == 0


def test_honest_submissions_are_never_flagged(graded):
    honest = [n for n in graded["table"] if n in NAMES or n.startswith(("untouched_", "wrong_", "reference_"))]
    assert len(honest) >= 2 * len(NAMES) + 5
    for name in honest:
        assert not graded["table"][name]["flags"], name


def test_a_vandal_reaches_no_other_submission_and_no_secret(graded):
    row = graded["table"]["aaa_vandal_hw1_tokens"]
    assert row["status"] == "graded" and scores(row)["ch00_shapes"] == 0  # it saw nothing to overwrite or read
    assert graded["before"] == graded["after"]
    for name in NAMES:  # graded after the vandal, and intact
        assert float(graded["table"][name]["total"]) == POINTS[name]


def test_nothing_outlives_grading_and_floods_cost_nothing(graded):
    assert running("sleep 424[23]") == []
    row = graded["table"]["survivor_hw1_tokens"]
    assert row["status"] == "graded" and scores(row) == full(graded), row


def test_hostile_answers_fail_only_their_question(graded):
    row = graded["table"]["hostile_hw1_tokens"]
    assert row["status"] == "graded", row
    got = scores(row)
    for question, points in full(graded).items():
        assert got[question] == (0 if question in HOSTILE else points), question


def test_odd_file_names_are_graded_under_their_own_names(graded):
    for odd in ODD_NAMES:
        row = graded["table"][odd.removesuffix(".ipynb")]
        assert row["status"] == "graded" and float(row["total"]) == POINTS["hw1_tokens"]
    assert not (Path.cwd() / "pwned").exists()


def test_bad_files_fail_their_row_only(graded):
    for name in ("garbage_hw1_tokens", "invalid_hw1_tokens"):
        row = graded["table"][name]
        assert row["status"] == "failed" and "not a readable notebook" in row["error"]


def test_submissions_are_never_modified(graded):
    assert graded["before"] == graded["after"]


def test_every_row_has_a_feedback_file_without_hidden_inputs(graded):
    assert len(graded["feedback"]) == len(graded["rows"])
    wrong = next(p for p in graded["feedback"] if "wrong_hw1_tokens" in p.name).read_text()
    assert "ch01_patchify" in wrong and "Hidden checks failed: token order and contents" in wrong
    for path in graded["feedback"]:
        text = path.read_text()
        assert "Score:" in text and not leaks(text, NAMES), path.name
    flagged = next(p for p in graded["feedback"] if "tamper_checks" in p.name).read_text()
    assert "set aside" in flagged and "rebinds feedback.check_patchify" in flagged


def test_grading_time_per_submission(graded):
    times = sorted(r.seconds for r in graded["rows"] if r.status == "graded")
    print(f"seconds per submission: {times}", file=sys.stderr)
    assert times[len(times) // 2] < 60


# ---------------------------------------------------------------- the command line


def test_grade_command_line_writes_csv_and_feedback(built, tmp_path):
    from vit_edu.homework.grade import main

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "not_homework.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                          "nbformat_minor": 5}))
    main([str(subs), "--autograder-dir", str(built / "autograder"), "--out", str(tmp_path / "g.csv")])
    rows = list(csv.DictReader(open(tmp_path / "g.csv")))
    assert len(rows) == 1 and rows[0]["status"] == "failed" and "--assignment" in rows[0]["error"]
    assert len(list((tmp_path / "g_feedback").glob("*.md"))) == 1


def test_no_sandbox_refuses_clearly_unless_asked(built, tmp_path, monkeypatch):
    from vit_edu.homework import grade

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "hw1_tokens.ipynb").write_bytes((MASTERS / "hw1_tokens.ipynb").read_bytes())
    monkeypatch.setattr(grade, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(RuntimeError, match="bwrap.*--no-sandbox"):
        grade_folder(subs, built / "autograder")
    (row,) = grade_folder(subs, built / "autograder", sandboxed=False)
    assert row.status == "graded" and row.total == POINTS["hw1_tokens"]


def test_row_totals_and_feedback_of_a_failed_row():
    row = Row("x.ipynb", "hw1_tokens", error="not a readable notebook: ValueError")
    assert row.total == row.possible == 0
    assert "could not run everything" in feedback_markdown(row)


def test_the_sandbox_sees_read_only_paths_that_live_under_tmp(tmp_path, monkeypatch):
    # A checkout (package and venv) under /tmp must stay visible in the sandbox, whose own /tmp is a fresh tmpfs.
    from vit_edu.homework import sandbox

    shipped, work = tmp_path / "checkout", tmp_path / "work"
    shipped.mkdir()
    work.mkdir()
    (shipped / "marker.txt").write_text("from the checkout")
    monkeypatch.setattr(sandbox, "_readonly_paths", lambda: [shipped.resolve()])
    argv = sandbox.sandbox_argv(work)
    seen = subprocess.run([*argv, "cat", str(shipped.resolve() / "marker.txt")], capture_output=True, text=True)
    assert seen.returncode == 0 and seen.stdout == "from the checkout", seen.stderr
    wrote = subprocess.run([*argv, "sh", "-c", f"echo x > {shipped.resolve()}/new.txt"], capture_output=True, text=True)
    assert wrote.returncode != 0 and not (shipped / "new.txt").exists()  # and it is read-only there
