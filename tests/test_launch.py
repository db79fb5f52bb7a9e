"""vit_edu.book.launch: every notebook opens with the set-up cell for the configured repository, and the cell works."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess

import nbformat
import pytest

from vit_edu.book import launch


@pytest.mark.parametrize("path", launch.book_notebooks(), ids=lambda p: p.name)
def test_every_notebook_opens_with_the_current_setup_cell(path):
    url, branch = launch.repository()
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert launch.TAG in first.metadata.get("tags", [])
    assert first.source == launch.setup_source(url, branch, launch.extras_for(path))
    assert "hide-input" not in first.metadata.get("tags", [])  # visible, so a reader sees what it installs


def run_setup(source: str, monkeypatch, installed: bool) -> list[list[str]]:
    """Execute the cell's code with vit_edu present or missing; the pip commands it would run."""
    calls = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if installed else None)
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd))
    exec(source, {})
    return calls


def test_cell_does_nothing_where_vit_edu_is_installed(monkeypatch):
    assert run_setup(launch.setup_source("https://github.com/o/r"), monkeypatch, installed=True) == []


def test_cell_installs_from_the_repository_or_from_vit_edu_source(monkeypatch):
    monkeypatch.delenv("VIT_EDU_SOURCE", raising=False)
    (cmd,) = run_setup(launch.setup_source("https://github.com/o/r", "dev"), monkeypatch, installed=False)
    assert cmd[1:5] == ["-m", "pip", "install", "--quiet"]
    assert cmd[-1] == "vit-edu[notebooks] @ git+https://github.com/o/r@dev"
    monkeypatch.setenv("VIT_EDU_SOURCE", "file:///tmp/vit_edu-0.3.0-py3-none-any.whl")
    (cmd,) = run_setup(launch.setup_source("https://github.com/o/r", "dev", "notebooks,homework"), monkeypatch,
                       installed=False)
    assert cmd[-1] == "vit-edu[notebooks,homework] @ file:///tmp/vit_edu-0.3.0-py3-none-any.whl"


def test_cell_without_a_repository_says_how_to_install(monkeypatch):
    monkeypatch.delenv("VIT_EDU_SOURCE", raising=False)
    with pytest.raises(RuntimeError, match=r'pip install -e "\.\[notebooks\]"'):
        run_setup(launch.setup_source(""), monkeypatch, installed=False)


def test_repository_url_override(monkeypatch, tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text('repository:\n  url: ""\n  branch: main\n')
    monkeypatch.delenv("BOOK_REPOSITORY_URL", raising=False)
    assert launch.repository(config) == ("", "main")
    monkeypatch.setenv("BOOK_REPOSITORY_URL", "https://github.com/o/r/")
    assert launch.repository(config) == ("https://github.com/o/r", "main")


def test_sync_inserts_once_then_updates_in_place(tmp_path):
    path = tmp_path / "homework" / "hw.ipynb"
    path.parent.mkdir()
    shutil.copyfile(launch.book_notebooks()[0], path)
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if launch.TAG not in c.metadata.get("tags", [])]  # as before the cell existed
    n_cells = len(nb.cells)
    nbformat.write(nb, path)
    assert launch.sync([path], "", "main") == [path]
    assert launch.sync([path], "", "main") == []  # nothing to change
    assert launch.sync([path], "https://github.com/o/r", "main") == [path]
    cells = nbformat.read(path, as_version=4).cells
    assert len(cells) == n_cells + 1
    setup = [c for c in cells if launch.TAG in c.metadata.get("tags", [])]
    assert len(setup) == 1 and "git+https://github.com/o/r@main" in setup[0].source
    assert "vit-edu[notebooks,homework]" in setup[0].source  # a homework notebook also gets otter
