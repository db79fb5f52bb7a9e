"""The instructor's commands typed as an instructor types them, from fresh clones in other folders.

``make homework HOMEWORK_SECRET=...`` then ``make grade SUBMISSIONS=folder HOMEWORK_SECRET=...``, run by ``make`` in
a ``git clone`` of this repository: under ``/tmp`` in a path with a space (as root, and as an unprivileged user),
and under ``/usr/local/src`` (where the sandbox once bound the checkout with ``/usr``).
The folders hold the master, the untouched notebook and hostile submissions; the masters must score in full, the
untouched notebook 0, and every attack nothing. The clones share this checkout's installed packages through a
small virtual environment of their own (``.pth`` files), so that ``make`` finds its environment installed.
"""

from __future__ import annotations

import csv
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from vit_edu.homework.sandbox import sandbox_problem

from homework_helpers import answered

ROOT = Path(__file__).resolve().parents[1]
HW1 = "hw1_tokens"
SECRET = "a course secret for the command tests"
pytestmark = [pytest.mark.skipif(sandbox_problem() is not None and "CI" not in os.environ,
                                 reason=f"no sandbox here: {sandbox_problem()}"),
              pytest.mark.timeout(1800)]  # make homework in a fresh clone, then a folder graded
NO_PERMUTE = ("def my_patchify(images, patch_size):\n    b, c, h, w = images.shape\n"
              "    return images.reshape(b, (h // patch_size) * (w // patch_size), c * patch_size * patch_size)\n")


def snoop(clone: Path) -> str:
    """An answer to ch01_patchify that uses the book's patchify if it can read it anywhere, else a classic mistake."""
    paths = [clone / "book" / "homework" / "hw1_tokens.ipynb", clone / "_build" / "homework" / "source" / "hidden" /
             "hw1_tokens.py", clone / "_build" / "grading" / "autograder" / "hw1_tokens.zip", clone / "README.md"]
    return ("import os\n_seen = [p for p in %r if os.access(p, os.R_OK)]\n" % [str(p) for p in paths] +
            "if _seen:\n    import torch\n    def my_patchify(images, patch_size):\n"
            "        return torch.nn.functional.pixel_unshuffle(images, patch_size).flatten(2).transpose(1, 2)\n"
            "else:\n" + "".join("    " + line + "\n" for line in NO_PERMUTE.splitlines()))


# The book's own kernel for F.unfold, reached through torch._C; and einops.reduce, which rearranges like the
# forbidden einops.rearrange: both compute the right answer, and both must score nothing.
IM2COL = ("import torch\ndef my_patchify(images, patch_size):\n"
          "    p = patch_size\n    return torch._C._nn.im2col(images, (p, p), (1, 1), (0, 0), (p, p)).transpose(1, 2)\n")
EINOPS = ("def my_patchify(images, patch_size):\n    from einops import reduce\n"
          "    return reduce(images, 'b c (h p1) (w p2) -> b (h w) (c p1 p2)', 'sum', p1=patch_size, p2=patch_size)\n")
# Deeply nested data on the question's channel: that question's zero, nothing more.
NESTED = ("import os\ndef token_count(h, w, p, c):\n    junk = ('[' * 300000 + ']' * 300000 + '\\n').encode()\n"
          "    for fd in map(int, os.listdir('/proc/self/fd')):\n        try:\n            os.write(fd, junk)\n"
          "        except OSError:\n            pass\n    os._exit(0)\n")


def owned_by(user: str) -> str:
    """``uid:gid`` of ``user`` for chown (its group's name differs between systems)."""
    entry = pwd.getpwnam(user)
    return f"{entry.pw_uid}:{entry.pw_gid}"


def light_venv(clone: Path, owner: str | None) -> None:
    """``clone/.venv``: this interpreter's packages through a ``.pth`` file, ``vit_edu`` from the clone, marked
    installed for ``make``."""
    venv = clone / ".venv"
    subprocess.run([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "book.pth").write_text("\n".join([str(clone), *ours]) + "\n")
    (venv / ".installed").touch()
    if owner:
        subprocess.run(["chown", "-R", owned_by(owner), str(venv)], check=True)


def clone_to(where: Path, owner: str | None = None) -> Path:
    """A fresh clone of this repository's committed state at ``where``, its build copied from the first clone."""
    where.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(where)], check=True)
    # The working tree as it is now (the tests run before a commit too): tracked files only.
    changed = subprocess.run(["git", "ls-files", "-m", "-o", "--exclude-standard"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    for name in changed:
        if (ROOT / name).is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, where / name)
    if owner:
        subprocess.run(["chown", "-R", owned_by(owner), str(where)], check=True)
    light_venv(where, owner)
    return where


def make(clone: Path, *args: str, user: str | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
    """``make ARGS`` in the clone, as a user types it (as ``user`` when given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOMEWORK_", "VIRTUAL_ENV", "PYTHON"))}
    prefix = []
    if user:
        entry = pwd.getpwnam(user)
        env["HOME"] = str(clone)
        prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]
    return subprocess.run([*prefix, "make", *args], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=timeout)


def submissions(clone: Path, folder: Path, hostile: bool) -> None:
    """The master, the untouched notebook and (``hostile``) the attacks, as files in ``folder``."""
    student = clone / "_build" / "homework" / "student" / f"{HW1}.ipynb"
    master = clone / "book" / "homework" / f"{HW1}.ipynb"
    folder.mkdir(parents=True)
    nbformat.write(answered(student, master), str(folder / f"master {HW1}.ipynb"))
    shutil.copyfile(student, folder / f"untouched_{HW1}.ipynb")
    nbformat.write(answered(student, master, {"ch01_patchify": snoop(clone)}), str(folder / f"snoop_{HW1}.ipynb"))
    if hostile:
        nbformat.write(answered(student, master, {"ch01_patchify": IM2COL}), str(folder / f"im2col_{HW1}.ipynb"))
        nbformat.write(answered(student, master, {"ch01_patchify": EINOPS}), str(folder / f"einops_{HW1}.ipynb"))
        nbformat.write(answered(student, master, {"ch01_token_count": NESTED}), str(folder / f"nested_{HW1}.ipynb"))
        (folder / f"brackets_{HW1}.ipynb").write_text("[" * 200_000 + "]" * 200_000)


def check_grades(clone: Path, done: subprocess.CompletedProcess, grades: Path, hostile: bool) -> None:
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    with open(grades) as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    master, untouched = rows[f"master {HW1}.ipynb"], rows[f"untouched_{HW1}.ipynb"]
    assert master["status"] == "graded" and float(master["total"]) == float(master["possible"]) > 0, master
    assert untouched["status"] == "graded" and float(untouched["total"]) == 0, untouched
    full = {k: float(v) for k, v in master.items() if k.startswith("ch") and v}

    def lost_only(name: str, question: str, score: float) -> None:
        row = rows[f"{name}_{HW1}.ipynb"]
        got = {k: float(v) for k, v in row.items() if k.startswith("ch") and v}
        assert got == {**full, question: score}, (name, got, row["details"])

    lost_only("snoop", "ch01_patchify", 1)  # the classic mistake's partial marks: nothing was readable
    if hostile:
        lost_only("im2col", "ch01_patchify", 0)
        lost_only("einops", "ch01_patchify", 0)
        lost_only("nested", "ch01_token_count", 0)
        brackets = rows[f"brackets_{HW1}.ipynb"]
        assert brackets["status"] == "failed" and brackets["fault"] == "submission", brackets
        assert "im2col" in rows[f"im2col_{HW1}.ipynb"]["details"]
    feedback = list(grades.parent.glob(f"{grades.stem}_feedback/*.md"))
    assert len(feedback) == len(rows)
    for path in feedback:
        text = path.read_text()
        assert "Traceback" not in text and str(clone) not in text, path.name


@pytest.fixture(scope="module")
def first_clone():
    """A clone in a path with a space, where make homework builds everything, as root or as the user running it."""
    with tempfile.TemporaryDirectory(prefix="vit_edu_cmd_") as tmp:
        Path(tmp).chmod(0o755)
        clone = clone_to(Path(tmp) / "a path with space" / "book")
        done = make(clone, "homework", f"HOMEWORK_SECRET={SECRET}")
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        assert (clone / "_build" / "grading" / "autograder" / f"{HW1}.zip").exists()
        yield clone


def test_make_grade_in_a_path_with_a_space_grades_everyone_and_attacks_gain_nothing(first_clone, tmp_path):
    folder = tmp_path / "hand ins"
    submissions(first_clone, folder, hostile=True)
    done = make(first_clone, "grade", f"SUBMISSIONS={folder}", f"HOMEWORK_SECRET={SECRET}", "GRADES=out/grades.csv",
                "JOBS=2")
    check_grades(first_clone, done, first_clone / "out" / "grades.csv", hostile=True)


def test_make_grade_without_the_secret_or_a_folder_says_what_is_missing(first_clone):
    for args in (["grade"], ["grade", "SUBMISSIONS=x"]):
        done = make(first_clone, *args)
        assert done.returncode == 2 and ("usage" in done.stdout or "secret" in done.stdout), done.stdout


def test_make_grade_as_root_in_a_clone_under_usr(first_clone, tmp_path):
    """Under /usr/local/src, where the sandbox once bound the checkout along with /usr (the first clone is under
    /tmp already, in a path with a space)."""
    if os.geteuid() != 0:
        pytest.skip("a clone under /usr/local/src, graded as root")
    with tempfile.TemporaryDirectory(prefix="vit_edu_cmd_", dir="/usr/local/src") as tmp:
        clone = clone_to(Path(tmp) / "book")
        shutil.copytree(first_clone / "_build", clone / "_build", symlinks=True)
        (clone / "_build" / "homework" / ".built").touch()  # up to date: make homework ran in the first clone
        folder = tmp_path / "subs"
        submissions(clone, folder, hostile=False)
        done = make(clone, "grade", f"SUBMISSIONS={folder}", f"HOMEWORK_SECRET={SECRET}")
        check_grades(clone, done, clone / "_build" / "homework" / "grades.csv", hostile=False)


def test_make_grade_as_an_unprivileged_user(first_clone):
    if os.geteuid() != 0:
        pytest.skip("run as root to start make as another user")
    entry = pwd.getpwnam("nobody")
    runs = subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--",
                           "sh", "-c", 'exec "$0" -c "import torch"', sys.executable], capture_output=True)
    if runs.returncode != 0:
        pytest.skip(f"this Python ({sys.base_prefix}) cannot be run by another user here")
    with tempfile.TemporaryDirectory(prefix="vit_edu_cmd_") as tmp:
        Path(tmp).chmod(0o755)
        clone = clone_to(Path(tmp) / "a path with space" / "book", owner="nobody")
        shutil.copytree(first_clone / "_build", clone / "_build", symlinks=True)
        (clone / "_build" / "homework" / ".built").touch()
        subprocess.run(["chown", "-R", owned_by("nobody"), str(clone / "_build")], check=True)
        folder = clone / "hand ins"
        submissions(clone, folder, hostile=False)
        subprocess.run(["chown", "-R", owned_by("nobody"), str(folder)], check=True)
        done = make(clone, "grade", "SUBMISSIONS=hand ins", f"HOMEWORK_SECRET={SECRET}", user="nobody")
        if "cannot grade in a sandbox" in done.stderr and "CI" not in os.environ:
            pytest.skip(f"bubblewrap cannot start for an unprivileged user here: {done.stderr[-300:]}")
        check_grades(clone, done, clone / "_build" / "homework" / "grades.csv", hostile=False)
