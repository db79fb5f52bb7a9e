"""The Gradescope zips grade the way Gradescope runs them: unpacked into an ``/autograder`` layout, their
environment built in a fresh virtual environment from what the zip names, without network, their own
``run_autograder`` run as root gives the same scores as ``make grade``'s pipeline, on the masters, an untouched
notebook, a classic mistake and answers that try to read what the zip keeps from students.

The layout is simulated with bubblewrap: a temporary folder bound at ``/autograder``, the rest of the system
read-only, no network, root with the capabilities Docker leaves it. The zip's grader then starts its own
bubblewrap sandboxes where it can (it prints which; without, its questions run as an unprivileged user), and the
zip's secrets must be out of the questions' reach either way.
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

from vit_edu.homework.grade import grade_folder
from vit_edu.homework.sandbox import sandbox_problem

from homework_helpers import answered
from test_grade_commands import IM2COL
from test_homework import MASTERS, SECRET

pytestmark = [pytest.mark.skipif(sandbox_problem() is not None and "CI" not in os.environ,
                                 reason=f"no sandbox here: {sandbox_problem()}"),
              pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs run_autograder as root"),
              pytest.mark.timeout(1800)]  # an environment built offline, then four runs of the zip
NAME = "hw1_tokens"
STUDENT = "12345"
DOCKER_CAPABILITIES = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
                       "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_MKNOD",
                       "CAP_AUDIT_WRITE", "CAP_SETFCAP")
# Answers that look for what the zip keeps from students (the grader's own package, the hidden module, the secret)
# and use it if they can; otherwise they give a classic mistake (worth 1 of ch01_patchify's points) or nothing.
SNOOP = {
    "ch01_patchify": "import importlib.util\n_ref = None\n"
                     "for _path in ['/autograder/judge/vit_edu/patches.py', '/autograder/source/files/x']:\n"
                     "    try:\n        _spec = importlib.util.spec_from_file_location('_p', _path)\n"
                     "        _m = importlib.util.module_from_spec(_spec)\n        _spec.loader.exec_module(_m)\n        import torch\n"
                     "        _m.patchify(torch.zeros(1, 1, 2, 2), 1)  # the book's, not the stripped copy\n"
                     "        _ref = _m.patchify\n        break\n    except Exception:\n        pass\n"
                     "def my_patchify(images, patch_size):\n    if _ref is not None:\n"
                     "        return _ref(images, patch_size)\n    b, c, h, w = images.shape\n"
                     "    return images.reshape(b, (h // patch_size) * (w // patch_size), c * patch_size * patch_size)\n",
    "ch00_shapes": "import os\n_seen = []\nfor _p in ['/autograder/source/homework/secret', "
                   "'/autograder/source/homework/source/hidden/hw1_tokens.py', '/autograder/source/files',\n"
                   "             '/autograder/judge/vit_edu-0.3.0.dist-info']:\n"
                   "    try:\n        open(_p).read() if os.path.isfile(_p) else os.listdir(_p)\n        _seen.append(_p)\n"
                   "    except OSError:\n        pass\n"
                   "vit_b16_shapes = {'N': 0, 'S': 0, 'D': 0} if _seen else {'N': 196, 'S': 197, 'D': 768}\n",
    "ch03_patch_params": "try:\n    open('/autograder/results/results.json', 'w').write('{\"score\": 100}')\n"
                         "except OSError:\n    pass\n"
                         "patch_embedding_params = lambda c, p, d: d * c * p * p + d\n",
}


def boxed(args: list[str], autograder: Path, writable: list[Path], timeout: float,
          network: bool = False) -> subprocess.CompletedProcess:
    """Run ``args`` with ``autograder`` at /autograder, only ``writable`` (and /tmp) writable, by default no network."""
    argv = ["bwrap"]
    for entry in sorted(os.listdir("/")):  # the system read-only, on bwrap's own root, where /autograder can be made
        path = f"/{entry}"
        if entry in ("proc", "dev", "tmp", "run", "autograder"):
            continue
        if entry == "root":  # as root's home on Gradescope: passable once run_autograder opens it, Python inside
            argv += ["--perms", "0700", "--tmpfs", "/root"]
            python = Path(sys.base_prefix).resolve()
            if python.is_relative_to("/root"):
                for parent in reversed(python.parents[:-2]):
                    argv += ["--perms", "0755", "--dir", str(parent)]
                argv += ["--ro-bind", str(python), str(python)]
            continue
        argv += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind", path, path]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run", "--bind", str(autograder),
             "/autograder",
             *([] if network else ["--unshare-net"]), "--unshare-pid", "--die-with-parent", "--setenv", "HOME", "/tmp",
             "--setenv", "OMP_NUM_THREADS", "1"]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for capability in DOCKER_CAPABILITIES:  # what root keeps in a Docker container: no CAP_SYS_ADMIN, so no bwrap
        argv += ["--cap-add", capability]
    return subprocess.run([*argv, "--", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def environment(built, tmp_path_factory):
    """``/autograder/source`` unpacked from the zip, and a fresh venv with the zip's requirements, built offline.

    The requirements' wheels are first gathered into a folder (``pip download``, from wherever this machine's
    pip finds them); the venv is then built from that folder alone, with no index and no network.
    """
    root = tmp_path_factory.mktemp("gradescope")
    autograder, wheels = root / "autograder", root / "wheels"
    with zipfile.ZipFile(built / "autograder" / f"{NAME}.zip") as z:
        z.extractall(autograder / "source")
        run = autograder / "source" / "run_autograder"
        run.chmod(0o755)
    spec = yaml.safe_load((autograder / "source" / "environment.yml").read_text())
    (pip,) = [d["pip"] for d in spec["dependencies"] if isinstance(d, dict)]
    (autograder / "source" / "pip.txt").write_text("\n".join(pip) + "\n")
    wheels.mkdir()
    python = Path(sys.base_prefix) / "bin" / "python3"
    pip = ["/autograder/env/bin/pip", "--disable-pip-version-check"]
    steps = [([str(python), "-m", "venv", "/autograder/env"], False),
             ([*pip, "download", "--quiet", "--dest", str(wheels), "-r", "/autograder/source/pip.txt"], True),
             ([*pip, "install", "--quiet", "--no-index", "--find-links", str(wheels), "-r",
               "/autograder/source/pip.txt"], False)]
    for step, network in steps:
        done = boxed(step, autograder, [wheels], timeout=1500, network=network)
        assert done.returncode == 0, done.stderr[-2000:]
    for folder in (root, autograder):  # as on Gradescope: /autograder is root's, readable by others
        folder.chmod(0o755)
    return autograder


def run_autograder(autograder: Path, notebook: Path) -> dict[str, float]:
    """Grade ``notebook`` with the zip's own ``run_autograder``, as Gradescope does: question -> score."""
    for sub in ("submission", "results"):
        shutil.rmtree(autograder / sub, ignore_errors=True)
        (autograder / sub).mkdir()
    shutil.copyfile(notebook, autograder / "submission" / notebook.name)
    (autograder / "submission_metadata.json").write_text(json.dumps({"users": [{"id": STUDENT, "name": "A"}]}))
    done = boxed(["env", "AUTOGRADER_PYTHON=/autograder/env/bin/python", "/autograder/source/run_autograder"],
                 autograder, [], timeout=900)
    results = autograder / "results" / "results.json"
    assert done.returncode == 0 and results.exists(), (done.stdout + done.stderr)[-3000:]
    print(done.stdout.splitlines()[0])  # which sandbox the zip found
    data = json.loads(results.read_text())
    assert "Traceback" not in data["output"] and "/autograder" not in data["output"]
    return {test["name"]: float(test["score"]) for test in data["tests"]}


def test_zip_grades_like_make_grade(environment, built, tmp_path):
    autograder = environment
    subs = tmp_path / "subs"
    subs.mkdir()
    # What students hand in: the student notebook (it names its assignment) with the master's answers, answers that
    # look for the zip's secrets (their fallback is a classic mistake, worth partial marks), a forbidden kernel, or
    # nothing. (Other mistakes' marks are make grade's, checked in test_homework: the zip runs the same judge.)
    student, master = built / "student" / f"{NAME}.ipynb", MASTERS / f"{NAME}.ipynb"
    nbformat.write(answered(student, master), str(subs / f"solved_{NAME}.ipynb"))
    nbformat.write(answered(student, master, SNOOP), str(subs / f"snoop_{NAME}.ipynb"))
    nbformat.write(answered(student, master, {"ch01_patchify": IM2COL}), str(subs / f"im2col_{NAME}.ipynb"))
    shutil.copyfile(student, subs / f"untouched_{NAME}.ipynb")
    rows = {r.submission: r for r in grade_folder(subs, built, SECRET, jobs=2, student_of=lambda _: STUDENT)}
    for notebook in sorted(subs.iterdir()):
        ours = {q: v["score"] for q, v in rows[notebook.name].questions.items()}
        theirs = run_autograder(autograder, notebook)
        assert theirs == ours, notebook.name
    solved, snoop = rows[f"solved_{NAME}.ipynb"], rows[f"snoop_{NAME}.ipynb"]
    assert solved.total == solved.possible > 0 and rows[f"untouched_{NAME}.ipynb"].total == 0
    assert rows[f"im2col_{NAME}.ipynb"].questions["ch01_patchify"]["score"] == 0
    # Nothing read, nothing written: the snooping answers score as their fallbacks do.
    assert snoop.questions["ch01_patchify"]["score"] == 1
    assert snoop.total == solved.total - (solved.questions["ch01_patchify"]["score"] - 1)
