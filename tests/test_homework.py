"""The homework system: the build, the grader's scores, and every attack the grader must survive.

One ``grade_folder`` call (two submissions at a time) grades every submission below, so the slow part runs once
per session. Each question is graded in its own sandboxed process, so one hostile submission can carry a different
attack in each question: the test then asserts that every attacked question gained nothing and that every other
question of the same submission still scores in full. Homework 1 carries the attacks: they test the grader, not
the questions.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from vit_edu.homework.build import build_homework
from vit_edu.homework.checks import Example, fmt
from vit_edu.homework.grade import Homework, Limits, Row, csv_cell, feedback_markdown, grade_folder, write_csv, \
    write_feedback
from vit_edu.homework.sandbox import sandbox_problem
from vit_edu.homework.strip import PACKAGE

from conftest import HOMEWORK_SECRET
from hidden_values import leaks
from homework_helpers import answered, master_solutions

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "homework"
NAMES = sorted(p.stem for p in MASTERS.glob("hw*.ipynb"))
SECRET = HOMEWORK_SECRET
HW1 = "hw1_tokens"
SANDBOX = sandbox_problem()
pytestmark = [pytest.mark.skipif(SANDBOX is not None and "CI" not in os.environ, reason=f"no sandbox here: {SANDBOX}"),
              pytest.mark.timeout(1800)]  # the first test waits for every submission to be graded

NO_PERMUTE = '''def my_patchify(images, patch_size):
    b, c, h, w = images.shape
    return images.reshape(b, (h // patch_size) * (w // patch_size), c * patch_size * patch_size)
'''
N_NOT_N_PLUS_1 = '''def pos_embed_shape(height, width, patch_size, dim, cls):
    return (1, (height // patch_size) * (width // patch_size), dim)
'''
# Answers made with the book's code, by every route: each question scores 0 (the code is not in its process).
OWN_WORK = {
    # An alias the scan sees.
    "ch01_token_count": "token_count = lambda h, w, p, c: (vit_edu.ViTConfig(image_size=(h, w), patch_size=p, "
                        "embed_dim=8, num_heads=1).num_patches, c * p * p)",
    # A copy of the package's source file, read and run at grading time.
    "ch01_patchify": "import vit_edu.patches as _p\n_ns = {}\nexec(open(_p.__file__).read(), _ns)\n"
                     "my_patchify = lambda images, p: _ns['patchify'](images, p)",
    # A by-hand answer computed with the package.
    "ch02_toy_tokens": "toy_tokens = vit_edu.patches.patchify(vit_edu.patches.toy_image().mT, 2)[0].tolist()",
    # A renamed code object, called from a thread started before the answer.
    "ch04_embed_tokens": "import threading, types\n_parts = [getattr(vit_edu.embedding, n) for n in ('prepend' + "
                         "'_cls', 'add_position' + '_embedding')]\n"
                         "_glue = [types.FunctionType(f.__code__, f.__globals__, 'mine') for f in _parts]\n"
                         "def embed_tokens(tokens, cls_token, pos_embed):\n    out = []\n"
                         "    t = threading.Thread(target=lambda: out.append(_glue[1](_glue[0](tokens, cls_token), "
                         "pos_embed)))\n    t.start(); t.join()\n    return out[0]",
    # An oracle from what the package ships: the public example's stored answer.
    "ch03_linear_to_conv": "from vit_edu.homework.checks import public_examples\n"
                           "_known = public_examples()['ch03_linear_to_conv'][0].expect\n"
                           "def linear_to_conv(linear, c, p):\n    import torch\n"
                           "    conv = torch.nn.Conv2d(c, linear.out_features, p, stride=p)\n"
                           "    return conv",
}
# Tampering, each around a wrong answer, each in its own question: nothing gained, nothing lost elsewhere.
TAMPER = {
    # Hooks registered through aliases: an input transformer and a pre_run_cell hook.
    "ch01_patchify": "ip = get_ipython()\nip.input_transformers_post.append(lambda lines: lines)\n"
                     "ip.events.register('pre_run_cell', lambda *a: None)\n" + NO_PERMUTE,
    # Rebinding through an alias: the comparisons the old grader used.
    "ch04_seq_len": "import torch\nt = torch\nt.allclose = lambda *a, **k: True\nt.equal = lambda *a, **k: True\n"
                    + N_NOT_N_PLUS_1,
    # A forged result: every open file descriptor gets a line that claims every check passed.
    "ch01_token_count": "import os, json\n"
                        "def token_count(h, w, p, c):\n"
                        "    forged = json.dumps({'cells': [], 'results': [{'data': {'tuple': [1, 1]}}] * 9})\n"
                        "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
                        "        try:\n            os.write(fd, (forged + '\\n').encode())\n"
                        "        except OSError:\n            pass\n    os._exit(0)",
    # An answer that edits the grader's objects when a check calls it.
    "ch03_patch_params": "import gc\ndef patch_embedding_params(c, p, d):\n"
                         "    for o in gc.get_objects():\n"
                         "        if isinstance(o, dict) and 'examples' in o:\n            o['examples'] = []\n"
                         "        if type(o).__name__ == 'Example':\n            o.expect = 0\n    return 0",
    # Reading the grader's request from memory: it holds the hidden inputs, never what is expected.
    "ch02_toy_projection": "import gc\n_found = [o for o in gc.get_objects() if isinstance(o, dict) and 'examples' in o]\n"
                           "toy_projected = [[0, 0]] * 4 if not _found else _found[0].get('expect', [[0, 0]] * 4)",
    # An answer that raises with its hidden inputs in the message, to put them in the feedback.
    "ch04_embed_tokens": "def embed_tokens(tokens, cls_token, pos_embed):\n    raise ValueError(repr(tokens.tolist()))",
}
# The sandbox, attacked from inside one question each: no points, no trace, the next submissions intact.
VANDAL = {
    "ch00_shapes": "import os, subprocess\nimport vit_edu\nhome = os.path.dirname(vit_edu.__file__)\n"
                   "subprocess.run(['mount', '-o', 'remount,rw', home], capture_output=True)\n"
                   "try:\n    open(os.path.join(home, 'pwned.py'), 'w').write('x')\n    breached = True\n"
                   "except OSError:\n    breached = False\n"
                   "vit_b16_shapes = {'N': 0, 'S': 0, 'D': 0} if breached else {'N': 196, 'S': 197, 'D': 768}",
    "ch01_token_count": "import os\n"
                        "pids = []\nfor _ in range(300):\n    pid = os.fork()\n"
                        "    if pid == 0:\n        import time; time.sleep(30); os._exit(0)\n    pids.append(pid)\n"
                        "token_count = lambda h, w, p, c: ((h // p) * (w // p), c * p * p)",
    "ch02_toy_tokens": "import os\nfor _ in range(3):\n    if os.fork() == 0:\n"
                       "        x = bytearray(2500 * 1024**2)\n        import time; time.sleep(30)\n"
                       "x = bytearray(2500 * 1024**2)\n"
                       "toy_tokens = [[1, 5, 2, 6], [9, 13, 10, 14], [3, 7, 4, 8], [11, 15, 12, 16]]",
    "ch02_toy_projection": "with open('/dev/shm/fill', 'wb') as f:\n    for _ in range(8):\n"
                           "        f.write(b'0' * 1024**3)\n"
                           "toy_projected = [[14, -5], [46, -5], [22, -5], [54, -5]]",
    "ch03_patch_params": "for i in range(40):\n    with open(f'big{i}.bin', 'wb') as f:\n"
                         "        f.write(b'0' * 64 * 1024**2)\n"
                         "patch_embedding_params = lambda c, p, d: d * c * p * p + d",
    "ch04_seq_len": "import os, subprocess, pathlib\nimport vit_edu\n"
                    "open('mark', 'w').write('x')\ntry:\n    immutable = subprocess.run(['chattr', '+i', 'mark'], "
                    "capture_output=True).returncode == 0\nexcept OSError:\n    immutable = False\n"
                    "repository = pathlib.Path(vit_edu.__file__).parent.parent\n"
                    "seen = immutable or (repository / 'README.md').exists() or os.getuid() == 0\n"
                    "pos_embed_shape = lambda h, w, p, d, cls: (1, 0, 0) if seen else (1, (h // p) * (w // p) + cls, d)",
}
HOSTILE = {
    "ch00_shapes": "raise ValueError('a cell that raises')\nvit_b16_shapes = {'N': 196, 'S': 197, 'D': 768}",
    "ch01_token_count": "import sys\nsys.exit()\ndef token_count(h, w, p, c):\n    return (h // p) * (w // p), c * p * p",
    "ch03_patch_params": "def patch_embedding_params(c, p, d:\n    return d * c * p * p + d",
    "ch01_patchify": "def my_patchify(images, patch_size):\n    while True:\n        pass",
    "ch02_toy_projection": "while True:\n    pass\ntoy_projected = [[14, -5], [46, -5], [22, -5], [54, -5]]",
}
SURVIVOR = ("import subprocess, os\nsubprocess.Popen(['sleep', '4242'], start_new_session=True)\n"
            "if os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '4243'])\n")
FLOOD = "import time\nend = time.time() + 3\nwhile time.time() < end:\n    print('x' * 100_000)"
# A formula, Chinese, spaces and a shell command in one name of 255 bytes (the longest a name can be); an option.
_ODD = "=HYPERLINK(1) 名字 with spaces;$(touch pwned) "
ODD_NAMES = [_ODD + "x" * (255 - len(_ODD.encode()) - len("hw1_tokens.ipynb")) + "hw1_tokens.ipynb",
             "-rf hw1_tokens.ipynb"]


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    nbformat.write(nb, str(path))


def hw1(built: Path, answers: dict[str, str] | None = None, extra: list[str] = ()) -> nbformat.NotebookNode:
    return answered(built / "student" / f"{HW1}.ipynb", MASTERS / f"{HW1}.ipynb", answers, extra)


@functools.cache
def hidden_data(built: Path, name: str, student: str = f"{HW1}.ipynb", secret: str = SECRET) -> dict:
    """The questions of ``name`` with the hidden checks drawn for ``student`` (a file name, as make grade draws);
    computed once per student (the instructor's module runs its reference experiments for each), never mutated."""
    return Homework.load(built, name).questions_for(secret, student)


def hidden_inputs(built: Path, names: list[str], student: str = f"{HW1}.ipynb", secret: str = SECRET) -> set[str]:
    """The first numbers of every hidden input tensor (drawn from the secret), as a feedback message would show them."""
    return {fmt(a) for name in names for spec in hidden_data(built, name, student, secret).values()
            for check in spec["checks"] for data in check["examples"]
            for a in Example.from_data(data).args or [] if hasattr(a, "numel") and a.numel() > 3 and a.is_floating_point()}


def hidden_marks(built: Path, names: list[str], student: str = f"{HW1}.ipynb") -> set[str]:
    """Texts only the hidden checks hold: their inputs' numbers and their calls as the grader names them."""
    calls = {Example.from_data(data).what for name in names for spec in hidden_data(built, name, student).values()
             for check in spec["checks"] for data in check["examples"] if data["args"] is not None}
    return hidden_inputs(built, names, student) | {c for c in calls if c}


def points(built: Path, name: str) -> float:
    return sum(c["points"] for q in hidden_data(built, name).values() for c in q["checks"])


def package_digest() -> str:
    h = hashlib.sha256()
    for p in sorted(PACKAGE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="session")
def graded(built, tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    outside = tmp_path_factory.mktemp("outside")
    for name in NAMES:
        write(answered(built / "student" / f"{name}.ipynb", MASTERS / f"{name}.ipynb"), subs / f"{name}.ipynb")
        (subs / f"untouched_{name}.ipynb").write_bytes((built / "student" / f"{name}.ipynb").read_bytes())
    write(hw1(built, {"ch01_patchify": NO_PERMUTE, "ch04_seq_len": N_NOT_N_PLUS_1}), subs / f"wrong_{HW1}.ipynb")
    write(hw1(built, OWN_WORK), subs / f"own_work_{HW1}.ipynb")
    write(hw1(built, TAMPER), subs / f"tamper_{HW1}.ipynb")
    write(hw1(built, VANDAL), subs / f"aaa_vandal_{HW1}.ipynb")  # graded first
    write(hw1(built, extra=[SURVIVOR, FLOOD]), subs / f"survivor_{HW1}.ipynb")
    write(hw1(built, HOSTILE), subs / f"hostile_{HW1}.ipynb")
    solved = subs / f"{HW1}.ipynb"
    for odd in ODD_NAMES:
        (subs / odd).write_bytes(solved.read_bytes())
    (outside / "solved.ipynb").write_bytes(solved.read_bytes())
    (outside / "hidden.json").write_text(json.dumps(hidden_data(built, HW1)))
    os.symlink(outside / "solved.ipynb", subs / f"link_to_solved_{HW1}.ipynb")
    os.symlink(outside / "hidden.json", subs / f"link_to_hidden_{HW1}.ipynb")
    os.mkfifo(subs / f"fifo_{HW1}.ipynb")
    (subs / f"garbage_{HW1}.ipynb").write_text("this is not a notebook")
    (subs / f"invalid_{HW1}.ipynb").write_text(json.dumps({"cells": "no", "nbformat": 4}))
    regular = [p for p in subs.iterdir() if p.is_file() and not p.is_symlink()]
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in regular}
    package_before = package_digest()
    start = time.monotonic()
    pairs: list = []
    rows = grade_folder(subs, built, SECRET,
                        limits=Limits(notebook_seconds=240, memory_mb=4096, processes=48, disk_mb=1024),
                        jobs=2, executed=tmp_path_factory.mktemp("executed"), pairs=pairs)
    seconds = time.monotonic() - start
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in regular}
    out = tmp_path_factory.mktemp("grades")
    write_csv(rows, out / "grades.csv")
    feedback = write_feedback(rows, out / "feedback")
    with open(out / "grades.csv") as f:
        table = {r["submission"].lstrip("'").removesuffix(".ipynb"): r for r in csv.DictReader(f)}
    print(f"graded {len(rows)} submissions in {seconds:.0f} s", file=sys.stderr)
    return {"table": table, "before": before, "after": after, "rows": rows, "feedback": feedback, "subs": subs,
            "csv": out / "grades.csv", "package": (package_before, package_digest()), "pairs": pairs}


def scores(row: dict[str, str]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k.startswith("ch") and v != ""}


def full(graded, name: str = HW1) -> dict[str, float]:
    return scores(graded["table"][name])


def only_these_lost(graded, label: str, lost: dict[str, float]) -> None:
    """Row ``label`` scores ``lost[q]`` on the attacked questions and full marks on every other."""
    row = graded["table"][label]
    assert row["status"] == "graded", row
    got = scores(row)
    for question, most in full(graded).items():
        assert got[question] == lost.get(question, most), (label, question, got[question], row["notes"])


# ---------------------------------------------------------------- the build


def test_student_notebooks_have_no_solutions_or_hidden_checks(built):
    for name in NAMES:
        text = (built / "student" / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" in (MASTERS / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "# SOLUTION" not in text
        assert "hidden: true" not in text and "check_hidden" not in text and "hidden_" not in text


def test_gradescope_zip_carries_the_grader_and_no_otter_tests(built):
    for name in NAMES:
        with zipfile.ZipFile(built / "autograder" / f"{name}.zip") as z:
            files = set(z.namelist())
            env = z.read("environment.yml").decode()
            run = z.read("run_autograder").decode()
            setup = z.read("setup.sh").decode()
        assert not [f for f in files if f.startswith("tests/")] and "run_otter.py" not in files
        assert {f"homework/source/{name}.ipynb", f"homework/source/hidden/{name}.py", f"homework/student/{name}.ipynb",
                "homework/secret"} <= files
        assert "vit-edu" not in env and "torch==" in env, "the grader's package is not in the shared environment"
        assert "vit_edu.homework.gradescope" in run and "chmod -R go-rwx /autograder/source" in run
        assert "bubblewrap" in setup


def test_hidden_inputs_come_from_the_secret_and_the_student(tmp_path, built):
    mine, theirs = hidden_inputs(built, [HW1, "hw4_beyond"]), hidden_inputs(built, [HW1, "hw4_beyond"],
                                                                            secret="another course's secret")
    assert len(mine) > 20 and not mine & theirs
    classmate = hidden_inputs(built, [HW1, "hw4_beyond"], student="classmate.ipynb")
    assert len(classmate) > 20 and not mine & classmate, "no two students share a hidden input"
    none = tmp_path / "none"
    build_homework(MASTERS, none)  # no secret: student notebooks, no autograders
    assert (none / "student" / f"{HW1}.ipynb").exists() and not (none / "autograder").exists()


def test_nothing_students_get_holds_a_hidden_input_or_a_solution(built):
    wheel = next((built / "wheel").glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        shipped = {f: z.read(f).decode(errors="replace") for f in z.namelist() if f.endswith((".py", ".json", ".txt"))}
    assert not [f for f in shipped if "hidden" in f or "/feedback/" in f], "no hidden checks, no solution code"
    assert [f for f in shipped if f.startswith("vit_edu/homework/public/")], "the public examples are data"
    students = {f.name: f.read_text() for f in (built / "student").glob("*.ipynb")}
    marks = hidden_marks(built, NAMES)
    assert len(marks) > 20
    assert all(leaks((MASTERS / f"{name}.ipynb").read_text(), [name]) for name in NAMES), "the masters hold them"
    assert not list(built.glob("wheel/*hidden*")), "no hidden module in what students install"
    for where, text in {**shipped, **students}.items():
        assert not [m for m in marks if m in text], where
        assert not leaks(text, NAMES), f"{where} holds the instructor's code or answers: {leaks(text, NAMES)[:3]}"


# ---------------------------------------------------------------- scores


def test_masters_score_full_marks_and_untouched_notebooks_zero(graded, built):
    for name in NAMES:
        row = graded["table"][name]
        assert row["status"] == "graded" and not row["flags"] and not row["notes"], row
        assert float(row["total"]) == float(row["possible"]) == points(built, name) > 0, name
        untouched = graded["table"][f"untouched_{name}"]
        assert untouched["status"] == "graded" and not untouched["flags"], untouched
        assert float(untouched["total"]) == 0 and float(untouched["possible"]) == points(built, name)


def test_classic_mistakes_get_the_intended_partial_marks(graded):
    only_these_lost(graded, f"wrong_{HW1}", {"ch01_patchify": 1, "ch04_seq_len": 1})
    feedback = next(p for p in graded["feedback"] if f"wrong_{HW1}" in p.name).read_text()
    assert "Hidden checks failed: token order and contents" in feedback
    assert "did you permute before the final reshape" in feedback


def test_answers_made_with_the_books_code_score_nothing_whatever_the_route(graded):
    only_these_lost(graded, f"own_work_{HW1}", {q: 0 for q in OWN_WORK})


def test_tampering_spoils_only_the_tamperers_own_question(graded):
    only_these_lost(graded, f"tamper_{HW1}", {"ch01_patchify": 1, "ch04_seq_len": 1, "ch01_token_count": 0,
                                               "ch03_patch_params": 0, "ch02_toy_projection": 0,
                                               "ch04_embed_tokens": 0})


def test_the_sandbox_holds_as_root_and_the_next_submissions_are_intact(graded):
    only_these_lost(graded, f"aaa_vandal_{HW1}", {q: 0 for q in VANDAL if q not in ("ch00_shapes", "ch04_seq_len")})
    assert graded["package"][0] == graded["package"][1], "the package folder is unchanged"
    assert not (PACKAGE / "pwned.py").exists()
    for name in NAMES:  # graded after the vandal, and intact
        assert float(graded["table"][name]["total"]) == float(graded["table"][name]["possible"])
    assert graded["before"] == graded["after"]


def test_nothing_outlives_grading_and_floods_cost_nothing(graded):
    assert subprocess.run(["pgrep", "-f", "sleep 424[23]"], capture_output=True).stdout == b""
    only_these_lost(graded, f"survivor_{HW1}", {})


def test_hostile_answers_fail_only_their_question(graded):
    only_these_lost(graded, f"hostile_{HW1}", {q: 0 for q in HOSTILE})


def test_honest_submissions_are_never_flagged(graded):
    honest = [n for n in graded["table"] if n in NAMES or n.startswith(("untouched_", "wrong_"))]
    assert len(honest) == 2 * len(NAMES) + 1
    for name in honest:
        assert not graded["table"][name]["flags"], name


# ---------------------------------------------------------------- files and the CSV


def test_odd_file_names_are_graded_under_their_own_names_and_never_become_formulas(graded):
    for odd in ODD_NAMES:
        row = graded["table"][odd.removesuffix(".ipynb")]
        assert row["status"] == "graded" and float(row["total"]) == float(row["possible"]), odd
    assert not (Path.cwd() / "pwned").exists()
    with open(graded["csv"]) as f:
        cells = [cell for line in csv.reader(f) for cell in line]
    assert len(ODD_NAMES[0].encode()) == 255 and "'" + ODD_NAMES[0] in cells and "'-rf hw1_tokens.ipynb" in cells
    assert not any(c.startswith(("=", "+", "-", "@")) for c in cells)
    assert csv_cell("@SUM(A1)") == "'@SUM(A1)" and csv_cell("fine") == "fine"


def test_links_and_special_files_are_listed_never_followed(graded):
    for name, kind in ((f"link_to_solved_{HW1}", "a link"), (f"link_to_hidden_{HW1}", "a link"),
                       (f"fifo_{HW1}", "not a regular file")):
        row = graded["table"][name]
        assert row["status"] == "failed" and kind in row["error"] and float(row["total"]) == 0, row


def test_bad_files_fail_their_row_only(graded):
    for name in (f"garbage_{HW1}", f"invalid_{HW1}"):
        row = graded["table"][name]
        assert row["status"] == "failed" and "not a readable notebook" in row["error"]


def test_every_row_has_a_feedback_file_without_hidden_inputs_or_paths(graded, built):
    assert len(graded["feedback"]) == len(graded["rows"])
    for path, row in zip(graded["feedback"], graded["rows"]):
        text = path.read_text()
        marks = hidden_marks(built, [row.assignment], row.submission) if row.assignment == HW1 else set()
        assert "Score:" in text and not [m for m in marks if m in text], path.name
        assert "Traceback" not in text and str(ROOT) not in text and "/tmp/" not in text, path.name


def test_copies_of_the_solution_are_reported_and_untouched_notebooks_are_not(graded):
    assert any(p.second == "published solution" and p.first == f"{HW1}.ipynb" for p in graded["pairs"])
    assert "published solution" in graded["table"][HW1]["copies"]
    assert not graded["table"][f"untouched_{HW1}"]["copies"]


# ---------------------------------------------------------------- the command line


def test_grade_command_line_writes_csv_feedback_and_the_copies_report(built, tmp_path, monkeypatch):
    from vit_edu.homework.grade import main

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "not_homework.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                          "nbformat_minor": 5}))
    monkeypatch.setenv("HOMEWORK_SECRET", SECRET)
    assert main([str(subs), "--homework-dir", str(built), "--out", str(tmp_path / "g.csv")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "g.csv")))
    assert len(rows) == 1 and rows[0]["status"] == "failed" and "--assignment" in rows[0]["error"]
    assert len(list((tmp_path / "g_feedback").glob("*.md"))) == 1
    assert "for review" in (tmp_path / "g_copies.md").read_text()


def test_grading_without_the_homework_or_the_secret_says_how_to_get_them(tmp_path):
    (tmp_path / "source").mkdir()
    with pytest.raises(FileNotFoundError, match="make homework"):
        grade_folder(tmp_path, tmp_path, SECRET)
    done = subprocess.run(["make", "grade", "SUBMISSIONS=" + str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("HOMEWORK_SECRET")})
    assert done.returncode != 0 and "secret" in done.stdout + done.stderr


def test_no_sandbox_refuses_clearly_unless_asked(built, tmp_path, monkeypatch):
    from vit_edu.homework import grade

    subs = tmp_path / "subs"
    subs.mkdir()
    write(hw1(built), subs / f"{HW1}.ipynb")
    monkeypatch.setattr(grade, "sandbox_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(RuntimeError, match="bwrap.*--no-sandbox"):
        grade_folder(subs, built, SECRET)
    if os.geteuid() == 0 and os.stat(ROOT).st_mode & 0o005:
        # Without bubblewrap, a root grader runs the questions as an unprivileged user, who can read a checkout
        # that others may read, and so the book's references: the run refuses before any student.
        with pytest.raises(RuntimeError, match="not safe here.*chmod 700"):
            grade_folder(subs, built, SECRET, sandboxed=False)
    (row,) = grade_folder(subs, built, SECRET, sandboxed=False, preflight=False)
    assert row.status == "graded" and row.total == row.possible == points(built, HW1)


def test_row_totals_and_feedback_of_a_failed_row():
    row = Row("x.ipynb", HW1, error="not a readable notebook: ValueError")
    assert row.total == row.possible == 0
    assert "could not grade this file" in feedback_markdown(row)


def test_master_solutions_cover_every_question():
    for name in NAMES:
        solutions = master_solutions(MASTERS / f"{name}.ipynb")
        assert solutions and all(s.strip() for s in solutions.values()), name
