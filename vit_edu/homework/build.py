"""``make homework``: from each master, the student notebook, the autograder zip and the instructor's master.

``python -m vit_edu.homework.build book/homework _build/homework``. For every ``book/homework/hw*.ipynb``:

1. The hidden checks of ``book/homework/hidden/<name>.py`` become hidden otter test cells (one per check, with
   its points) after each question's public test, in a generated master ``_build/homework/masters/<name>.ipynb``
   (the instructor's site shows these). The public tests are worth 0 points: they check the public example only.
2. ``otter assign`` turns the generated master into the student notebook (no solutions, no hidden tests) and
   the autograder zip, which carries what otter needs on Gradescope: the hidden module, the answer key
   (``hidden/<name>_key.json`` merged with what ``hidden/<name>_key.py`` computes, e.g. experiment results), the
   ``vit_edu`` wheel and the pinned requirements that install it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from vit_edu.book.launch import TAG as SETUP_TAG
from vit_edu.homework.grade import load_module

ROOT = Path(__file__).resolve().parents[2]
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


def hidden_test_source(module: str, question: str, check: str, index: int, answers: tuple[str, ...]) -> str:
    """One hidden otter test cell: probe and judge in the kernel (otter's way; ``make grade`` splits them)."""
    args = ", ".join(answers)
    env = ", ".join(f"{a!r}: {a}" for a in answers)
    return (
        '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n'
        f"def test_{question}_{index}({args}):\n"
        f"    import {module} as hidden\n"
        f"    hidden.cases.check({question!r}, {check!r}, {{{env}}}, hidden.cases.load_key(hidden.__file__))\n\n"
        f"test_{question}_{index}({args})\n"
    )


def generated_master(master: Path, hidden: Path, files: list[str]) -> nbformat.NotebookNode:
    """The master with the hidden checks as test cells, each question's points, the autograder's files."""
    name = master.stem
    cases = load_module(f"hidden_{name}", hidden.read_text()).cases
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
            question = re.search(r"name:\s*(\w+)", cell.source).group(1)
            if question not in cases.answers:
                raise ValueError(f"{master}: question {question!r} has no hidden checks in {hidden}")
            points = [0, *cases.points(question)]
            cell.source = re.sub(r"\npoints:.*", "", cell.source).rstrip() + f"\npoints: {points}\n"
            seen.add(question)
        if cell.cell_type == "raw" and cell.source.strip() == "# END TESTS" and question is not None:
            checks = [c for c in cases.cases if c.question == question]
            cells += [nbformat.v4.new_code_cell(hidden_test_source(f"hidden_{name}", question, c.name, i + 1,
                                                                   cases.answers[question]))
                      for i, c in enumerate(checks)]
        cells.append(cell)
    if seen != set(cases.answers):
        raise ValueError(f"{hidden} checks questions the master lacks: {sorted(set(cases.answers) - seen)}")
    nb.cells = cells
    return nb


def answer_key(hidden_dir: Path, name: str) -> dict | None:
    """The key of one assignment: the committed JSON, updated with what its key script computes."""
    key = None
    if (path := hidden_dir / f"{name}_key.json").exists():
        key = json.loads(path.read_text())
    if (script := hidden_dir / f"{name}_key.py").exists():
        key = {**(key or {}), **load_module(f"{name}_key", script.read_text()).make_key()}
    return key


def build_homework(masters: Path, out: Path) -> list[str]:
    """Student notebooks in ``out/student``, zips in ``out/autograder``, generated masters in ``out/masters``."""
    wheel = build_wheel(out / "wheel")
    names = []
    for master in sorted(masters.glob("hw*.ipynb")):
        name = master.stem
        work = out / "masters"
        work.mkdir(parents=True, exist_ok=True)
        hidden = masters / "hidden" / f"{name}.py"
        shutil.copyfile(hidden, work / f"hidden_{name}.py")
        files = [f"hidden_{name}.py", wheel.name]
        key = answer_key(masters / "hidden", name)
        if key is not None:
            (work / f"hidden_{name}_key.json").write_text(json.dumps(key, indent=1))
            files.append(f"hidden_{name}_key.json")
        shutil.copyfile(wheel, work / wheel.name)
        (work / "requirements.txt").write_text("\n".join(pinned_requirements(ROOT / "requirements.txt", wheel)) + "\n")
        nbformat.write(generated_master(master, hidden, files), str(work / f"{name}.ipynb"))
        dist = out / "dist" / name
        shutil.rmtree(dist, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "otter", "assign", f"{name}.ipynb", str(dist.resolve())], cwd=work,
                       check=True, stdout=subprocess.DEVNULL)
        for sub, pattern, target in (("student", f"{name}.ipynb", f"{name}.ipynb"),
                                     ("autograder", f"{name}-autograder_*.zip", f"{name}.zip")):
            (found,) = sorted((dist / sub).glob(pattern))
            (out / sub).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found, out / sub / target)
        student = out / "student" / f"{name}.ipynb"
        nb = nbformat.read(str(student), as_version=4)
        # The page opens with the title and instructions, then the set-up cell (it installs otter where it is
        # missing), then otter's init cell, which otter assign puts first.
        init = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Initialize Otter"))
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
    """``python -m vit_edu.homework.build MASTERS OUT``."""
    masters, out = map(Path, (sys.argv[1:] if argv is None else argv)[:2])
    names = build_homework(masters, out)
    print(f"{', '.join(names)}: student notebooks in {out / 'student'}, autograders in {out / 'autograder'}, "
          f"masters with hidden tests in {out / 'masters'}")


if __name__ == "__main__":
    main()
