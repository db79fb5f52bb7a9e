"""``make homework``: from each master, the student notebook, the instructor's master and, with the course's
secret, the autograder zip.

``python -m vit_edu.homework.build book/homework _build/homework [--secret-file F]``. For every
``book/homework/hw*.ipynb``, the instructor's module ``book/homework/hidden/<name>.py`` builds the questions
(:mod:`vit_edu.homework.assignment`): their public examples and, with the secret, their hidden checks.

1. The master's public test cells call :func:`vit_edu.homework.checks.check`; with the secret, each hidden check
   becomes a hidden otter test cell with its points (the public tests are worth 0). The generated master is in
   ``_build/homework/masters/<name>.ipynb`` (the instructor's site shows it).
2. ``otter assign`` turns it into the student notebook (no solutions, no hidden checks) and, with the secret, the
   autograder zip, which carries what otter needs on Gradescope: the hidden checks as data
   (``hidden_<name>.json``, with the set-up cells the grader runs before each question), the ``vit_edu`` wheel and
   the pinned requirements that install it.

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
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import nbformat

from vit_edu.book.launch import TAG as SETUP_TAG
from vit_edu.homework.assignment import SECRET_ENV, Assignment, drawer, read_secret
from vit_edu.homework.checks import PUBLIC

ROOT = Path(__file__).resolve().parents[2]
OTTER_INIT = "# Initialize Otter"
# What the autograder's environment installs, pinned as in requirements.txt: the package's own dependencies,
# otter's grading extra and the kernel.
RUNTIME = ("torch", "torchvision", "numpy", "matplotlib", "einops", "ipython", "ipywidgets", "tqdm", "ipykernel",
           "nbformat", "nbconvert", "otter-grader")


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


def hidden_test_source(assignment: str, question: str, answers: tuple[str, ...], index: int) -> str:
    """One hidden otter test cell: the check's data from the zip, run and judged in the kernel (otter's way)."""
    kwargs = ", ".join(f"{a}={a}" for a in answers)
    return test_cell(question, answers, index + 1, "    from vit_edu.homework.checks import check_hidden\n"
                     f"    check_hidden('hidden_{assignment}.json', {question!r}, {index}, {kwargs})\n")


def generated_master(master: Path, assignment: Assignment, files: list[str]) -> nbformat.NotebookNode:
    """The master with the public check cells written from the questions, the hidden checks (when the assignment
    has them, that is with a secret) as hidden test cells, each question's points and the autograder's files."""
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
                f"\npoints: {[0, *(c.points for c in question.checks)] if question.checks else 0}\n"
            seen.add(question.name)
        if cell.cell_type == "code" and cell.source.startswith("def test_") and question is not None:
            cell.source = public_test_source(question.name, question.answers)
        if cell.cell_type == "raw" and cell.source.strip() == "# END TESTS" and question is not None:
            cells += [nbformat.v4.new_code_cell(hidden_test_source(assignment.name, question.name, question.answers, i))
                      for i in range(len(question.checks))]
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


def build_homework(masters: Path, out: Path, secret: str | None = None) -> list[str]:
    """Student notebooks in ``out/student``, generated masters in ``out/masters``; with the course's ``secret``,
    the hidden checks drawn from it and the autograder zips in ``out/autograder``."""
    wheel = build_wheel(out / "wheel")
    names = []
    for master in sorted(masters.glob("hw*.ipynb")):
        name = master.stem
        work = out / "masters"
        work.mkdir(parents=True, exist_ok=True)
        assignment = make_assignment(masters, name, drawer(secret, name) if secret else public_draw)
        if not secret:
            for q in assignment.questions.values():
                q.checks = []
        files = [wheel.name]
        if secret:
            data = assignment.data()
            for q, cells in given_cells(master).items():
                data["questions"][q]["given"] = cells
            (work / f"hidden_{name}.json").write_text(json.dumps(data))
            files.insert(0, f"hidden_{name}.json")
        shutil.copyfile(wheel, work / wheel.name)
        (work / "requirements.txt").write_text("\n".join(pinned_requirements(ROOT / "requirements.txt", wheel)) + "\n")
        nbformat.write(generated_master(master, assignment, files), str(work / f"{name}.ipynb"))
        dist = out / "dist" / name
        shutil.rmtree(dist, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "otter", "assign", f"{name}.ipynb", str(dist.resolve())], cwd=work,
                       check=True, stdout=subprocess.DEVNULL)
        targets = [("student", f"{name}.ipynb", f"{name}.ipynb")]
        if secret:
            targets.append(("autograder", f"{name}-autograder_*.zip", f"{name}.zip"))
        for sub, pattern, target in targets:
            (found,) = sorted((dist / sub).glob(pattern))
            (out / sub).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found, out / sub / target)
        student = out / "student" / f"{name}.ipynb"
        nb = nbformat.read(str(student), as_version=4)
        # The page opens with the title and instructions, then the set-up cell (it installs otter where it is
        # missing), then otter's init cell, which otter assign puts first.
        init = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(OTTER_INIT))
        setup = next(c for c in nb.cells if SETUP_TAG in c.metadata.get("tags", []))
        nb.cells.remove(init)
        nb.cells.insert(nb.cells.index(setup) + 1, init)
        nbformat.write(nb, str(student))
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
          (f", autograders with the hidden checks in {args.out / 'autograder'}" if secret else
           f"; no autograders (no secret: set {SECRET_ENV} or pass --secret-file to build them)"))


if __name__ == "__main__":
    main()
