"""The site's Sphinx extensions (book/_ext), each in a small Sphinx build of its own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from vit_edu.book.launch import TAG, setup_source

EXT = Path(__file__).resolve().parents[1] / "book" / "_ext"


def _build(tmp_path: Path, nb: nbformat.NotebookNode) -> str:
    from sphinx.application import Sphinx

    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
                                 "extensions = ['myst_nb', 'setup_cell']\nnb_execution_mode = 'off'\n")
    nbformat.write(nb, src / "index.ipynb")
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None, warning=sys.stderr)
    app.build()
    return (out / "index.html").read_text(encoding="utf-8")


def test_the_set_up_cell_is_collapsed_on_the_site_and_other_cells_are_not(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("setup_cell", EXT / "setup_cell.py")
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    setup = nbformat.v4.new_code_cell(setup_source(""), metadata={"tags": [TAG]})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter"), setup,
                                         nbformat.v4.new_code_cell("shown_code = 1")])
    page = _build(tmp_path, nb)
    hidden = re.findall(r"<details class=\"[^\"]*\bhide\b.*?</details>", page, re.S)
    assert len(hidden) == 1 and extension.PROMPT_SHOW.replace("'", "&#x27;") in hidden[0]
    assert "find_spec" in hidden[0]  # the set-up cell's code is inside the toggle
    assert "shown_code" in page and "shown_code" not in hidden[0]
