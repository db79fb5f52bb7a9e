"""The package installs without make: a wheel, an editable install, and the notebooks' Colab set-up cell.

Each test makes an empty venv. Installing torch and the rest into it again would copy gigabytes, so the venv
sees this checkout's third-party packages (not vit_edu) through a folder of links, as Colab's preinstalled
stack; pip runs with no index, so nothing is downloaded and every vit_edu dependency must already be met.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from vit_edu.book.launch import TAG

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, env=OFFLINE)
    (path,) = out.glob("vit_edu-*.whl")
    return path


def empty_venv(where: Path) -> Path:
    """A new venv whose only extra packages are links to this environment's third-party ones."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    stack = where / "stack"
    stack.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("vit_edu", "__editable__")) and entry.suffix != ".pth":
            (stack / entry.name).symlink_to(entry)
    (site / "preinstalled.pth").write_text(f"{stack}\n")
    return python


def run_in(python: Path, code: str, cwd: Path) -> str:
    return subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True, cwd=cwd,
                          env=OFFLINE).stdout.strip()


IMPORT_CHECK = ("import vit_edu, vit_edu.training as t; "
                "print(vit_edu.__file__); print(sorted(p.name for p in t.CHECKPOINTS.iterdir()))")


def test_wheel_carries_the_package_and_its_shipped_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.name for p in (ROOT / "vit_edu" / "checkpoints").iterdir())
    assert shipped and all(f"vit_edu/checkpoints/{name}" in names for name in shipped)
    assert "vit_edu/widgets/patch_explorer.py" in names
    assert "vit_edu/book/lab_config/labconfig/default_setting_overrides.json" in names  # Lab's quiet defaults
    assert not any(name.startswith(("tests/", "book/")) for name in names)


def test_wheel_installs_offline_into_an_empty_venv_and_imports(wheel, tmp_path):
    python = empty_venv(tmp_path)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, env=OFFLINE)
    path, files = run_in(python, IMPORT_CHECK, tmp_path).splitlines()
    assert str(tmp_path / "venv") in path  # the installed copy, not this checkout
    assert "shapes_vit.pt" in files


def test_editable_install_into_an_empty_venv(tmp_path):
    python = empty_venv(tmp_path)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-build-isolation", "-e", str(ROOT)],
                   check=True, env=OFFLINE)
    path, _ = run_in(python, IMPORT_CHECK, tmp_path).splitlines()
    assert path == str(ROOT / "vit_edu" / "__init__.py")


def test_colab_setup_cell_installs_the_package_and_chapter_1_runs(wheel, tmp_path, monkeypatch):
    """Chapter 1, top to bottom, in a kernel that starts without vit_edu: its set-up cell installs the wheel."""
    python = empty_venv(tmp_path)
    assert run_in(python, "import importlib.util; print(importlib.util.find_spec('vit_edu'))", tmp_path) == "None"
    kernel = tmp_path / "jupyter" / "kernels" / "fresh"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps(
        {"argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "fresh",
         "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("VIT_EDU_SOURCE", wheel.as_uri())  # instead of the repository, which needs a network
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    nb = nbformat.read(ROOT / "book" / "01_patches.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert TAG in setup.metadata["tags"]
    NotebookClient(nb, kernel_name="fresh", timeout=180, resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    path, files = run_in(python, IMPORT_CHECK, tmp_path).splitlines()
    assert str(tmp_path / "venv") in path and "shapes_vit.pt" in files
