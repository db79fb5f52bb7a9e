import importlib
import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from vit_edu.book.lab_copies import MANIFEST
from vit_edu.book.lab_edition import (
    SAVE_HOOK,
    SITE_PHRASES,
    WIDGET_VIEW,
    bib_labels,
    glued_values,
    lab_markdown,
    pre_save_hook,
    site_phrases,
    write_lab_edition,
)

ROOT = Path(__file__).resolve().parents[1]
LABELS = {"dosovitskiy2021vit": ("Dosovitskiy et al.", "2021"), "xiong2020layer": ("Xiong et al.", "2020")}


def test_glue_and_citations_are_written_in():
    text = "Accuracy {glue:text}`acc`%, loss {glue:text}`loss:.2f` {cite:p}`dosovitskiy2021vit,xiong2020layer`."
    out = lab_markdown(text, {"acc": "'98.7'", "loss": "0.4567"}, LABELS)
    assert out == "Accuracy 98.7%, loss 0.46 (Dosovitskiy et al., 2021; Xiong et al., 2020)."


def test_unknown_names_raise():
    with pytest.raises(ValueError, match="no glued value"):
        lab_markdown("{glue:text}`missing`", {}, LABELS)
    with pytest.raises(ValueError, match="not in the bibliography"):
        lab_markdown("{cite:p}`nobody1999`", {}, LABELS)


def test_bibliography_labels():
    labels = bib_labels(ROOT / "book/references.bib")
    assert labels["dosovitskiy2021vit"] == ("Dosovitskiy et al.", "2021")
    assert labels["nostalgebraist2020logitlens"] == ("nostalgebraist", "2020")


def test_every_chapter_reads_without_placeholders(tmp_path):
    updates = write_lab_edition(ROOT / "book", tmp_path)
    chapters = [u.path for u in updates if u.path.suffix == ".ipynb"]
    assert len(chapters) >= 14 and {u.status for u in updates} == {"new"}
    for path in chapters:
        nb = nbformat.read(path, as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not re.search(r"\{(glue|cite|doc)[^}]*\}`", prose), f"{path.name} still holds a placeholder"
        assert not [c for c in nb.cells if "site-only" in c.metadata.get("tags", [])], path.name
        assert not [o for c in nb.cells for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})], path.name
        original = nbformat.read(ROOT / "book" / path.name, as_version=4)
        assert [c.source for c in nb.cells if c.cell_type == "code"] == [
            c.source for c in original.cells if c.cell_type == "code"
        ]
    ch10 = nbformat.read(tmp_path / "10_attention_maps.ipynb", as_version=4)
    assert glued_values(ch10)  # the copy keeps its outputs, so it can be run and compared like the original


PAGES = {"try_it": ("Try it: the trained ViT in your browser", None), "glossary": ("Glossary", "glossary.md"),
         "05_qkv": ("Queries, keys and values", "05_qkv.ipynb")}


def test_doc_links_point_into_the_lab_folder_or_name_the_website():
    def md(text):
        return lab_markdown(text, {}, LABELS, PAGES)

    assert md("Open the {doc}`try_it` page: it runs.") == (
        "Open the “Try it: the trained ViT in your browser” page on the book's website: it runs.")
    assert md("See {doc}`try_it`.") == "See “Try it: the trained ViT in your browser” (on the book's website)."
    assert md("See {doc}`the glossary <glossary>` and {doc}`/book/05_qkv`.") == (
        "See [the glossary](glossary.md) and [Queries, keys and values](05_qkv.ipynb).")
    with pytest.raises(ValueError, match="names no page"):
        md("{doc}`nowhere`")


def _book(folder: Path, prose: str = "# One\n\nSee {doc}`try_it`.") -> Path:
    """A two-chapter book: 01 with a glued number, a site-only cell and a widget cell; 02 plain."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "references.bib").write_text("")
    (folder / "glossary.md").write_text("# Glossary\n")
    (folder / "try_it.md").write_text("# Try it: in your browser\n")
    glue = nbformat.v4.new_code_cell("glue('n', 3)", outputs=[nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": "3"},
        metadata={"scrapbook": {"name": "n", "mime_prefix": "application/papermill.record/"}})])
    widget = nbformat.v4.new_code_cell("explore(view, CONTROLS)", outputs=[nbformat.v4.new_output(
        "execute_result", data={WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0},
                                "text/html": "<div class='vit-frames'>player</div>",
                                "text/plain": "An interactive view"},
        execution_count=1)])
    site = nbformat.v4.new_markdown_cell("On this website the player offers a subset.",
                                         metadata={"tags": ["site-only"]})
    one = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(prose), glue, widget, site,
                                          nbformat.v4.new_markdown_cell("n = {glue:text}`n`")])
    nbformat.write(one, folder / "01_one.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Two")]), folder / "02_two.ipynb")
    return folder


def test_a_copy_drops_site_only_cells_and_keeps_the_widget_cells_fallback(tmp_path):
    book = _book(tmp_path / "book")
    write_lab_edition(book, tmp_path / "lab")
    nb = nbformat.read(tmp_path / "lab/01_one.ipynb", as_version=4)
    prose = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert prose == ["# One\n\nSee “Try it: in your browser” (on the book's website).", "n = 3"]
    assert list(nb.cells[2].outputs[0].data) == ["text/html", "text/plain"]


def test_the_save_hook_keeps_the_fallback_and_leaves_other_widgets_and_files_alone():
    bare = {"data": {WIDGET_VIEW: {"model_id": "x"}, "text/plain": "IntSlider(value=0)"}}  # no fallback to show
    ours = {"data": {WIDGET_VIEW: {"model_id": "y"}, "text/html": "<div>player</div>", "text/plain": "view"}}
    model = {"type": "notebook", "content": {"cells": [{"cell_type": "code", "outputs": [bare, ours]}]}}
    pre_save_hook(model=model, path="01_one.ipynb", contents_manager=None)
    assert WIDGET_VIEW in bare["data"] and list(ours["data"]) == ["text/html", "text/plain"]
    text = {"type": "file", "content": "x"}
    pre_save_hook(model=text, path="notes.txt")
    assert text == {"type": "file", "content": "x"}


def test_binder_installs_the_same_save_hook(tmp_path):
    from traitlets.config import Config

    script = (ROOT / "binder" / "postBuild").read_text()
    hook_lines = script[script.index('mkdir -p "$HOME/.jupyter"'):]  # after the pip install
    subprocess.run(["bash", "-euc", hook_lines], env={**os.environ, "HOME": str(tmp_path)}, check=True)
    config = Config()
    exec((tmp_path / ".jupyter" / "jupyter_server_config.py").read_text(), {"c": config})
    assert config.ContentsManager.pre_save_hook == SAVE_HOOK
    module, name = SAVE_HOOK.rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) is pre_save_hook


def _run(path: Path) -> None:
    """What running a chapter and saving it changes: outputs and counts, not cells or sources."""
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].outputs.append(nbformat.v4.new_output("stream", text="ran\n"))
    nb.cells[1].execution_count = 7
    nbformat.write(nb, path)


def _edit(path: Path, text: str = "MY NOTES") -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, path)


def test_a_copy_the_learner_only_ran_follows_the_book_and_an_edited_one_is_kept(tmp_path):
    book, lab = _book(tmp_path / "book"), tmp_path / "lab"
    write_lab_edition(book, lab)
    _run(lab / "01_one.ipynb")
    _edit(lab / "02_two.ipynb")
    statuses = {u.path.name: u.status for u in write_lab_edition(book, lab)}
    assert statuses["01_one.ipynb"] == "unchanged" and statuses["02_two.ipynb"] == "yours"
    assert "ran" in (lab / "01_one.ipynb").read_text()  # the same chapter: the learner's outputs stay

    _book(book, prose="# One, revised")  # the book changes (git pull)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Two, revised")]),
                   book / "02_two.ipynb")
    updates = {u.path.name: u for u in write_lab_edition(book, lab)}
    assert updates["01_one.ipynb"].status == "updated" and "# One, revised" in (lab / "01_one.ipynb").read_text()
    kept = updates["02_two.ipynb"]
    assert kept.status == "kept" and "MY NOTES" in (lab / "02_two.ipynb").read_text()
    assert "FRESH=02_two" in kept.message and "--fresh 02_two" in kept.message
    assert not list(lab.glob("*.backup-*"))


def test_fresh_copies_replace_edited_or_damaged_ones_and_keep_them_beside(tmp_path):
    book, lab = _book(tmp_path / "book"), tmp_path / "lab"
    write_lab_edition(book, lab)
    nb = nbformat.read(lab / "01_one.ipynb", as_version=4)
    nb.cells[2].cell_type = "raw"  # "r" pressed on a widget's menu, then autosaved (the review's N2)
    nb.cells[2].pop("outputs"), nb.cells[2].pop("execution_count")
    nbformat.write(nb, lab / "01_one.ipynb")
    _edit(lab / "02_two.ipynb")
    (lab / "glossary.md").write_text("{ not what was written")
    statuses = {u.path.name: u.status for u in write_lab_edition(book, lab)}
    assert statuses == {"01_one.ipynb": "yours", "02_two.ipynb": "yours", "glossary.md": "yours",
                        "references.bib": "unchanged"}  # nothing is overwritten unasked

    updates = {u.path.name: u for u in write_lab_edition(book, lab, fresh=["01_one", "glossary.md"])}
    fresh = updates["01_one.ipynb"]
    assert fresh.status == "fresh" and fresh.backup.name.startswith("01_one.backup-")
    assert fresh.backup.suffix == ".ipynb"
    assert nbformat.read(lab / "01_one.ipynb", as_version=4).cells[2].cell_type == "code"
    assert nbformat.read(fresh.backup, as_version=4).cells[2].cell_type == "raw"  # the learner's copy, beside it
    assert (lab / "glossary.md").read_text() == "# Glossary\n" and updates["02_two.ipynb"].status == "yours"
    assert fresh.backup.name in fresh.message
    with pytest.raises(ValueError, match="not in the Lab edition"):
        write_lab_edition(book, lab, fresh=["03_three"])


def test_a_folder_from_before_the_manifest_is_treated_as_the_learners(tmp_path):
    book, lab = _book(tmp_path / "book"), tmp_path / "lab"
    write_lab_edition(book, lab)
    (lab / MANIFEST).unlink()
    _edit(lab / "02_two.ipynb")
    statuses = {u.path.name: u.status for u in write_lab_edition(book, lab)}
    assert statuses == {"01_one.ipynb": "unchanged", "02_two.ipynb": "kept", "glossary.md": "unchanged",
                        "references.bib": "unchanged"}


def test_the_chinese_lab_edition_names_a_website_page_in_chinese(tmp_path):
    (tmp_path / "_config.yml").write_text("sphinx:\n  config:\n    language: zh_CN\n", encoding="utf-8")
    phrases = site_phrases(tmp_path / "book")
    text = lab_markdown("见 {doc}`try_it`。", {}, LABELS, PAGES, phrases)
    assert text == "见 “Try it: the trained ViT in your browser”（见本书网站）。", text
    assert site_phrases(ROOT / "book") == SITE_PHRASES  # the English book
