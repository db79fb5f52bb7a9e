"""The autograder zips work where otter usually runs (Gradescope): unpacked into an ``/autograder`` layout, their
environment built in a fresh virtual environment from what the zip names, without network, their own
``run_otter.py`` gives the same scores as ``make grade``.

The layout is simulated with bubblewrap: a temporary folder bound at ``/autograder``, the rest of the system
read-only, and no network while the environment is installed and while it grades.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import nbformat

from vit_edu.homework.build import build_homework
from vit_edu.homework.grade import grade_folder
from vit_edu.homework.sandbox import sandbox_problem

from homework_helpers import answered
from test_homework import MASTERS, NO_PERMUTE, SECRET

pytestmark = pytest.mark.skipif(sandbox_problem() is not None and "CI" not in os.environ,
                                reason=f"no sandbox here: {sandbox_problem()}")
NAME = "hw1_tokens"


def boxed(args: list[str], autograder: Path, writable: list[Path], timeout: float,
          network: bool = False) -> subprocess.CompletedProcess:
    """Run ``args`` with ``autograder`` at /autograder, only ``writable`` (and /tmp) writable, by default no network."""
    argv = ["bwrap"]
    for entry in sorted(os.listdir("/")):  # the system read-only, on bwrap's own root, where /autograder can be made
        path = f"/{entry}"
        if entry in ("proc", "dev", "tmp", "autograder"):
            continue
        argv += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind", path, path]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", str(autograder), "/autograder",
             *([] if network else ["--unshare-net"]), "--unshare-pid", "--die-with-parent", "--setenv", "HOME", "/tmp",
             "--setenv", "OMP_NUM_THREADS", "1"]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    return subprocess.run([*argv, "--", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("homework_zip")
    build_homework(MASTERS, out, SECRET)
    return out


@pytest.fixture(scope="module")
def environment(built, tmp_path_factory):
    """``/autograder/source`` unpacked from the zip, and a fresh venv with the zip's requirements, built offline.

    The requirements' wheels are first gathered into a folder (``pip download``, from wherever this machine's
    pip finds them); the venv is then built from that folder alone, with no index and no network.
    """
    root = tmp_path_factory.mktemp("gradescope")
    autograder, env, wheels = root / "autograder", root / "env", root / "wheels"
    with zipfile.ZipFile(built / "autograder" / f"{NAME}.zip") as z:
        z.extractall(autograder / "source")
    spec = yaml.safe_load((autograder / "source" / "environment.yml").read_text())
    (pip,) = [d["pip"] for d in spec["dependencies"] if isinstance(d, dict)]
    (autograder / "source" / "pip.txt").write_text("\n".join(pip) + "\n")
    env.mkdir()
    wheels.mkdir()
    python = Path(sys.base_prefix) / "bin" / "python3"
    pip = [str(env / "bin" / "pip"), "--disable-pip-version-check"]
    steps = [([str(python), "-m", "venv", str(env)], False),
             ([*pip, "download", "--quiet", "--dest", str(wheels), "-r", "/autograder/source/pip.txt"], True),
             ([*pip, "install", "--quiet", "--no-index", "--find-links", str(wheels), "-r",
               "/autograder/source/pip.txt"], False)]
    for step, network in steps:
        done = boxed(step, autograder, [env, wheels], timeout=1500, network=network)
        assert done.returncode == 0, done.stderr[-2000:]
    return autograder, env


def run_otter(autograder: Path, env: Path, notebook: Path) -> dict[str, float]:
    """Grade ``notebook`` with the zip's own ``run_otter.py``: question -> score."""
    for sub in ("submission", "results"):
        shutil.rmtree(autograder / sub, ignore_errors=True)
        (autograder / sub).mkdir()
    shutil.copyfile(notebook, autograder / "submission" / f"{NAME}.ipynb")
    done = boxed([str(env / "bin" / "python"), "/autograder/source/run_otter.py"], autograder, [env], timeout=900)
    results = autograder / "results" / "results.json"
    assert results.exists(), (done.stdout + done.stderr)[-3000:]
    scores: dict[str, float] = {}
    for test in json.loads(results.read_text())["tests"]:
        question = test["name"].split(" - ")[0].split(" ")[0]
        scores[question] = scores.get(question, 0.0) + float(test.get("score", 0))
    return scores


def test_zip_grades_like_make_grade(environment, built, tmp_path):
    autograder, env = environment
    subs = tmp_path / "subs"
    subs.mkdir()
    # What students hand in: the student notebook (it names its assignment) with the master's answers, or a mistake.
    student, master = built / "student" / f"{NAME}.ipynb", MASTERS / f"{NAME}.ipynb"
    nbformat.write(answered(student, master), str(subs / f"solved_{NAME}.ipynb"))
    nbformat.write(answered(student, master, {"ch01_patchify": NO_PERMUTE}), str(subs / f"wrong_{NAME}.ipynb"))
    rows = {r.submission: r for r in grade_folder(subs, built, jobs=2)}
    for notebook in sorted(subs.iterdir()):
        ours = {q: v["score"] for q, v in rows[notebook.name].questions.items()}
        theirs = run_otter(autograder, env, notebook)
        assert {q: theirs.get(q, 0.0) for q in ours} == ours, notebook.name
    assert rows[f"solved_{NAME}.ipynb"].total == rows[f"solved_{NAME}.ipynb"].possible > 0
    assert rows[f"wrong_{NAME}.ipynb"].questions["ch01_patchify"]["score"] == 1
