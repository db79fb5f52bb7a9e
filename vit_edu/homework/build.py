"""``make homework``: from each master, the student notebook, the instructor's master and, with the course's
secret, the Gradescope zip.

``python -m vit_edu.homework.build book/homework _build/homework [--secret-file F]``. For every
``book/homework/hw*.ipynb``, the instructor's module ``book/homework/hidden/<name>.py`` builds the questions
(:mod:`vit_edu.homework.assignment`) and their public examples; hidden inputs are drawn per student when grading.

1. The master's public test cells call :func:`vit_edu.homework.checks.check`; the generated master, with each
   question's points, is in ``_build/homework/masters/<name>.ipynb`` (the instructor's site shows it).
2. ``otter assign`` turns it into the student notebook (no solutions) in ``student/``.
3. ``source/`` keeps the masters and their hidden modules: what the grader draws each student's hidden checks
   with (:class:`vit_edu.homework.grade.Homework`).
4. With the secret, ``autograder/<name>.zip`` for Gradescope: otter's ``setup.sh`` and environment (without
   ``vit_edu``), bubblewrap, the ``vit_edu`` wheel, ``source/``, the student notebook and the secret, and a
   ``run_autograder`` that runs the same grader as ``make grade`` (:mod:`vit_edu.homework.gradescope`). The zip is
   the instructor's: it holds the solutions and the secret.

``--public`` writes the public examples into ``vit_edu/homework/public/`` instead (``make homework-public``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import nbformat

from vit_edu.book.launch import TAG as SETUP_TAG
from vit_edu.homework.assignment import SECRET_ENV, Assignment, read_secret
from vit_edu.homework.checks import PUBLIC

ROOT = Path(__file__).resolve().parents[2]
OTTER_INIT = "# Initialize Otter"
# What the autograder's environment installs, pinned as in requirements.txt: the package's own dependencies,
# otter's grading extra, the kernel and the copy check.
RUNTIME = ("torch", "torchvision", "numpy", "matplotlib", "einops", "ipython", "ipywidgets", "tqdm", "ipykernel",
           "nbformat", "nbconvert", "otter-grader", "copydetect")


def pinned_requirements(requirements: Path, wheel: Path) -> list[str]:
    """The runtime pins from ``requirements.txt`` and the wheel, as the autograder installs them on Gradescope."""
    pins = {}
    for line in requirements.read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m and m.group(1).lower() in RUNTIME:
            pins[m.group(1).lower()] = f"{m.group(1)}=={m.group(2)}"
    missing = sorted(set(RUNTIME) - set(pins))
    if missing:
        raise ValueError(f"{requirements} pins none of {missing}")
    pins["otter-grader"] = pins["otter-grader"].replace("otter-grader", "otter-grader[grading]")
    return [*pins.values(), f"vit-edu @ file:///autograder/source/files/{wheel.name}"]


def build_wheel(out: Path) -> Path:
    """The ``vit_edu`` wheel, built without network from a clean copy of the package (no stale ``build/``)."""
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("pyproject.toml", "README.md"):
            shutil.copyfile(ROOT / name, Path(tmp) / name)
        shutil.copytree(ROOT / "vit_edu", Path(tmp) / "vit_edu", ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                        str(out.resolve()), tmp], check=True, stdout=subprocess.DEVNULL)
    (wheel,) = out.glob("vit_edu-*.whl")
    return wheel


def load_module(name: str, path: Path) -> ModuleType:
    """A module made from the file at ``path`` (not registered in ``sys.modules``)."""
    module = ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def make_assignment(masters: Path, name: str, draw: Callable[[str], int]) -> Assignment:
    """The assignment that ``masters/hidden/<name>.py`` builds with ``draw`` (instructor side: it uses references)."""
    assignment = load_module(f"hidden_{name}", masters / "hidden" / f"{name}.py").make(draw)
    if assignment.name != name:
        raise ValueError(f"{masters / 'hidden' / name}.py builds {assignment.name!r}, not {name!r}")
    return assignment


def public_draw(label: str) -> int:
    """The seeds of the hidden inputs when only the public examples are wanted (their values are not used)."""
    return 0


def write_public(masters: Path, dest: Path = PUBLIC) -> list[Path]:
    """``vit_edu/homework/public/<name>.json``: each assignment's public examples, the data the public checks read."""
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for master in sorted(masters.glob("hw*.ipynb")):
        path = dest / f"{master.stem}.json"
        path.write_text(json.dumps(make_assignment(masters, master.stem, public_draw).public_data(), indent=1) + "\n")
        paths.append(path)
    return paths


def test_cell(question: str, answers: tuple[str, ...], index: int, body: str) -> str:
    """An otter test cell (public when ``index`` is 0) whose function takes the question's answers."""
    args = ", ".join(answers)
    hidden = '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n' if index else ""
    return f"{hidden}def test_{question}_{index}({args}):\n{body}\ntest_{question}_{index}({args})\n"


def public_test_source(question: str, answers: tuple[str, ...]) -> str:
    kwargs = ", ".join(f"{a}={a}" for a in answers)
    return test_cell(question, answers, 0, "    from vit_edu.homework.checks import check\n"
                                           f"    check({question!r}, {kwargs})\n")


def generated_master(master: Path, assignment: Assignment, files: list[str]) -> nbformat.NotebookNode:
    """The master with the public check cells written from the questions, each question's points (its hidden
    checks', drawn per student when grading) and the autograder's files."""
    nb = nbformat.read(str(master), as_version=4)
    config = nb.cells[0]
    if not config.source.startswith("# ASSIGNMENT CONFIG"):
        raise ValueError(f"{master}: the first cell should be the ASSIGNMENT CONFIG raw cell")
    config.source = config.source.rstrip() + "\n" + "\n".join([
        'python_version: "3.11"', "requirements: requirements.txt", "overwrite_requirements: true",
        "autograder_files:", *[f"  - {f}" for f in files]]) + "\n"
    seen = set()
    cells = []
    question = None
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            question = assignment.questions.get(re.search(r"name:\s*(\w+)", cell.source).group(1))
            if question is None:
                raise ValueError(f"{master}: question {cell.source.split()[-1]!r} has no checks in its hidden module")
            cell.source = re.sub(r"\npoints:.*", "", cell.source).rstrip() + \
                f"\npoints: {question.points:g}\n"
            seen.add(question.name)
        if cell.cell_type == "code" and cell.source.startswith("def test_") and question is not None:
            cell.source = public_test_source(question.name, question.answers)
        cells.append(cell)
    if seen != set(assignment.questions):
        raise ValueError(f"{master.stem}'s hidden module checks questions the master lacks: "
                         f"{sorted(set(assignment.questions) - seen)}")
    nb.cells = cells
    return nb


def given_cells(master: Path) -> dict[str, list[str]]:
    """Per question, the master's code cells outside every question that come before it (the set-up the grader
    runs, in the instructor's version, before the question's own cells)."""
    nb = nbformat.read(str(master), as_version=4)
    given: list[str] = []
    out: dict[str, list[str]] = {}
    inside = False
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            out[re.search(r"name:\s*(\w+)", cell.source).group(1)] = list(given)
            inside = True
        elif cell.cell_type == "raw" and cell.source.startswith("# END QUESTION"):
            inside = False
        elif cell.cell_type == "code" and not inside:
            given.append(cell.source)
    return out


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this as root after setup.sh: the same grader as make grade, on /autograder/submission.
# The questions run as an unprivileged user (in bubblewrap where the container allows it); the judge, the secret,
# the hidden modules and the grader's own vit_edu stay root's (mode 0700).
set -euo pipefail
PYTHON="${{AUTOGRADER_PYTHON:-/root/miniforge3/envs/otter-env/bin/python}}"
cd /  # no folder that holds a vit_edu first on the path
umask 077
chmod -R go-rwx /autograder/source
if [ ! -d /autograder/judge ]; then
  "$PYTHON" -m pip install --quiet --no-deps --no-index --disable-pip-version-check --target /autograder/judge \\
    /autograder/source/files/{wheel}
fi
chmod 700 /autograder/judge
# The questions' user runs the environment's python: it may pass through /root, not read it.
chmod o+x /root 2> /dev/null || true
PYTHONPATH=/autograder/judge exec "$PYTHON" -m vit_edu.homework.gradescope --assignment {name}
"""
SETUP_EXTRA = """
# vit_edu's grader: bubblewrap for the questions' sandboxes, setpriv and prlimit (util-linux) to drop privileges.
apt-get install -y bubblewrap util-linux
"""


def autograder_zip(name: str, otter_zip: Path, wheel: Path, masters: Path, student: Path, secret: str,
                   dest: Path) -> None:
    """The Gradescope zip: otter's set-up without ``vit_edu`` in the environment, and the grader's own files."""
    with zipfile.ZipFile(otter_zip) as z:
        setup = z.read("setup.sh").decode()
        environment = z.read("environment.yml").decode()
    environment = "".join(line for line in environment.splitlines(keepends=True) if "vit-edu @" not in line)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("setup.sh", setup.rstrip() + "\n" + SETUP_EXTRA)
        z.writestr("environment.yml", environment)
        info = zipfile.ZipInfo("run_autograder")
        info.external_attr = 0o755 << 16
        z.writestr(info, RUN_AUTOGRADER.format(wheel=wheel.name, name=name))
        z.write(wheel, f"files/{wheel.name}")
        z.write(masters / f"{name}.ipynb", f"homework/source/{name}.ipynb")
        z.write(masters / "hidden" / f"{name}.py", f"homework/source/hidden/{name}.py")
        z.write(student, f"homework/student/{name}.ipynb")
        z.writestr("homework/secret", secret + "\n")


def build_homework(masters: Path, out: Path, secret: str | None = None) -> list[str]:
    """Student notebooks in ``out/student``, generated masters in ``out/masters``, the masters and their hidden
    modules in ``out/source``; with the course's ``secret``, the Gradescope zips in ``out/autograder``."""
    masters, out = masters.resolve(), out.resolve()
    wheel = build_wheel(out / "wheel")
    names = []
    for master in sorted(masters.glob("hw*.ipynb")):
        name = master.stem
        work = out / "masters"
        work.mkdir(parents=True, exist_ok=True)
        assignment = make_assignment(masters, name, public_draw)
        files = [wheel.name]
        shutil.copyfile(wheel, work / wheel.name)
        (work / "requirements.txt").write_text("\n".join(pinned_requirements(ROOT / "requirements.txt", wheel)) + "\n")
        nbformat.write(generated_master(master, assignment, files), str(work / f"{name}.ipynb"))
        dist = out / "dist" / name
        shutil.rmtree(dist, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "otter", "assign", f"{name}.ipynb", str(dist.resolve())], cwd=work,
                       check=True, stdout=subprocess.DEVNULL)
        (out / "student").mkdir(parents=True, exist_ok=True)
        (found,) = sorted((dist / "student").glob(f"{name}.ipynb"))
        student = out / "student" / f"{name}.ipynb"
        nb = nbformat.read(str(found), as_version=4)
        # The page opens with the title and instructions, then the set-up cell (it installs otter where it is
        # missing), then otter's init cell, which otter assign puts first.
        init = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(OTTER_INIT))
        setup = next(c for c in nb.cells if SETUP_TAG in c.metadata.get("tags", []))
        nb.cells.remove(init)
        nb.cells.insert(nb.cells.index(setup) + 1, init)
        nbformat.write(nb, str(student))
        source = out / "source"
        (source / "hidden").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(master, source / master.name)
        shutil.copyfile(masters / "hidden" / f"{name}.py", source / "hidden" / f"{name}.py")
        if secret:
            (out / "autograder").mkdir(parents=True, exist_ok=True)
            (otter_zip,) = sorted((dist / "autograder").glob(f"{name}-autograder_*.zip"))
            autograder_zip(name, otter_zip, wheel, masters, student, secret, out / "autograder" / f"{name}.zip")
        names.append(name)
    if not names:
        raise FileNotFoundError(f"no hw*.ipynb masters in {masters}")
    for extra in ("requirements.txt", wheel.name):
        (out / "masters" / extra).unlink(missing_ok=True)
    return names


def main(argv: list[str] | None = None) -> None:
    """``python -m vit_edu.homework.build MASTERS OUT [--secret-file F]``, or ``--public MASTERS``."""
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.build", description=__doc__.split("\n")[0])
    p.add_argument("masters", type=Path)
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("--public", action="store_true", help=f"write the public examples into {PUBLIC} and stop")
    p.add_argument("--secret-file", type=Path, help=f"the course's secret (else ${SECRET_ENV}; none: no autograders)")
    args = p.parse_args(argv)
    if args.public:
        print("public examples:", ", ".join(str(path) for path in write_public(args.masters)))
        return
    if args.out is None:
        p.error("give the output folder")
    secret = None
    if args.secret_file is not None or os.environ.get(SECRET_ENV):
        try:
            secret = read_secret(args.secret_file, dict(os.environ))
        except (OSError, ValueError) as e:
            p.exit(2, f"{p.prog}: {e}\n")
    names = build_homework(args.masters, args.out, secret)
    print(f"{', '.join(names)}: student notebooks in {args.out / 'student'}, masters in {args.out / 'masters'}" +
          (f", Gradescope zips (keep them private: they hold the solutions and the secret) in "
           f"{args.out / 'autograder'}" if secret else
           f"; no Gradescope zips (no secret: set {SECRET_ENV} or pass --secret-file to build them)"))


if __name__ == "__main__":
    main()
