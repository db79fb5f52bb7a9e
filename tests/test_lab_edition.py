import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from vit_edu.book.lab_copies import MANIFEST
from vit_edu.book.lab_edition import (
    SAVE_HOOK,
    SITE_PHRASES,
    WIDGET_VIEW,
    _font_style,
    bib_labels,
    book_language,
    glued_values,
    lab_command,
    lab_markdown,
    main,
    plain_glossary,
    pre_save_hook,
    site_phrases,
    write_lab_edition,
)
from vit_edu.book.lab_server import DEFAULTS, lab_environment, trust, write_font_style
from vit_edu.widgets import LAB_KERNEL, LIVE_FALLBACK_CLASS

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
                                "text/html": '<div class="vit-frames">player</div>',
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


def test_a_chinese_page_word_after_the_role_joins_the_phrase():
    phrases = ("本书网站上的“{text}”页面", "“{text}”（见本书网站）")
    assert lab_markdown("打开 {doc}`try_it` 页面，运行它。", {}, LABELS, PAGES, phrases) == (
        "打开 本书网站上的“Try it: the trained ViT in your browser”页面，运行它。")
    assert lab_markdown("见{doc}`05_qkv`页面。", {}, LABELS, PAGES, phrases) == (
        "见[Queries, keys and values](05_qkv.ipynb)页面。")


def test_the_glossary_is_plain_markdown_with_bold_terms_on_lines_of_their_own(tmp_path):
    write_lab_edition(ROOT / "book", tmp_path)
    text = (tmp_path / "glossary.md").read_text(encoding="utf-8")
    assert "```" not in text and ":sorted:" not in text
    terms = re.findall(r"^\*\*(.+)\*\*\\\n[^*\n]", text, re.M)  # bold term, a hard break, its definition below
    assert len(terms) == (ROOT / "book/glossary.md").read_text().count("\n\n") - 2 and terms[0].startswith("ablation")
    assert terms == sorted(terms, key=str.lower)
    assert plain_glossary("```{glossary}\nb\n  two\n  lines\n\na\n  one\n```") == "**b**\\\ntwo lines\n\n**a**\\\none"


def test_a_wrong_fresh_name_ends_in_one_line_and_a_failure(tmp_path, capsys):
    book = _book(tmp_path / "book")
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "lab"), "--book", str(book), "--fresh", "05"])
    assert exit_.value.code not in (0, None) and "--fresh names ['05']" in str(exit_.value.code)
    assert "01_one" in str(exit_.value.code) and "Traceback" not in capsys.readouterr().err


def _lab_kernel_save(tmp_path: Path, source: str) -> dict:
    """A save from a Lab kernel's run of 01_one: its widget cell holds the widget view and the live fallback."""
    book, lab = _book(tmp_path / "book"), tmp_path / "lab"
    write_lab_edition(book, lab)
    saved = json.loads((lab / "01_one.ipynb").read_text())
    cell = saved["cells"][2]
    cell["source"] = source
    cell["outputs"][0]["data"] = {WIDGET_VIEW: {"model_id": "z"}, "text/plain": "An interactive view",
                                  "text/html": f'<div class="{LIVE_FALLBACK_CLASS}"><img src="data:,"></div>'}
    model = {"type": "notebook", "content": saved}
    pre_save_hook(model=model, path="01_one.ipynb", contents_manager=SimpleNamespace(root_dir=str(lab)))
    return cell["outputs"][0]["data"]


def test_the_save_hook_puts_the_chapters_own_player_back_where_the_cell_is_unchanged(tmp_path):
    data = _lab_kernel_save(tmp_path / "same", "explore(view, CONTROLS)")
    assert data == {"text/plain": "An interactive view", "text/html": '<div class="vit-frames">player</div>'}
    edited = _lab_kernel_save(tmp_path / "edited", "explore(view, CONTROLS, start={'n': 2})")
    assert WIDGET_VIEW not in edited and LIVE_FALLBACK_CLASS in edited["text/html"]  # no player for a new source


def test_the_makefile_installs_the_kernel_under_the_chapters_name():
    makefile = (ROOT / "Makefile").read_text()
    install = re.search(r"^KERNELSPEC = .*ipykernel install .*--display-name \"([^\"]+)\"", makefile, re.M)
    names = {nbformat.read(p, as_version=4).metadata.kernelspec.display_name for p in (ROOT / "book").glob("*.ipynb")}
    assert install and names == {install.group(1)}
    assert re.search(r"^lab:.*\n(\t@#.*\n)*\t@\$\(KERNELSPEC\)$", makefile, re.M), "make lab fixes an older .venv too"
    spec = json.loads((Path(sys.prefix) / "share/jupyter/kernels/python3/kernel.json").read_text())
    assert spec["display_name"] == install.group(1), "this .venv's kernel: run make lab (or the KERNELSPEC line)"


def test_lab_kernels_learn_the_language_and_lab_starts_quiet(tmp_path):
    env = lab_environment("zh", {"JUPYTER_CONFIG_PATH": "/mine"})
    assert env[LAB_KERNEL] == "zh" and env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(DEFAULTS), "/mine"]
    overrides = json.loads((DEFAULTS / "labconfig/default_setting_overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Markdown Preview"
    if os.name == "posix":
        assert "--KernelManager.transport=ipc" in lab_command(tmp_path)
    # Jupyter refuses root without being told: make lab as a container's root must still start.
    assert ("--allow-root" in lab_command(tmp_path)) == (hasattr(os, "geteuid") and os.geteuid() == 0)
    assert book_language(ROOT / "book") == "en"


def test_the_copies_are_trusted_when_written(tmp_path):
    from nbformat.sign import NotebookNotary

    write_lab_edition(_book(tmp_path / "book"), tmp_path / "lab")
    path, data = tmp_path / "lab/01_one.ipynb", tmp_path / "data"  # data: a folder Jupyter has not made yet
    trust([path], data)
    notary = NotebookNotary(data_dir=str(data))  # what Jupyter Lab reads when it opens the copy
    assert notary.check_signature(nbformat.read(path, as_version=4))
    assert not notary.check_signature(nbformat.read(tmp_path / "book/01_one.ipynb", as_version=4))


def test_the_chinese_lab_gets_a_font_cut_to_its_characters(tmp_path, capsys):
    from fontTools.ttLib import TTFont

    noto = "usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
    font = next((p for p in (Path("/") / noto, ROOT / "_build/fonts" / noto) if p.exists()), None)
    if font is None:
        pytest.skip("no Noto Sans CJK here (make book unpacks it into _build/fonts)")
    style = tmp_path / "style"
    assert write_font_style(font, set("视觉变换器"), style)
    css = (style / "custom.css").read_text()
    assert "@font-face" in css and 'url("vit-cjk.woff2")' in css and "U+4E00-9FFF" in css
    cmap = TTFont(style / "vit-cjk.woff2").getBestCmap()
    assert all(ord(ch) in cmap for ch in "视觉变换器") and ord("猫") not in cmap
    assert not write_font_style(font, set("视觉变换器"), style)  # the same characters: nothing rewritten
    command = lab_command(tmp_path, style)
    assert "--LabApp.custom_css=True" in command and any(str(style) in c for c in command)
    assert _font_style(tmp_path / "lab", None) is None and "CJK_FONT=" in capsys.readouterr().out


# The Lab reviewer's N12: a sentence about the website's player sits in a site-only cell of its own, so that neither
# Lab edition keeps it while the rest of its paragraph stays. chapter -> (English sentence, Chinese, a kept neighbour
# in English and in Chinese).
WEBSITE_SENTENCES = {
    "09_training": ("you can watch the figure update", "在这个网页上看到的是它的最终状态", "change from run to run.)",
                    "每次运行都会变化。）"),
    "15_distillation": ("On this website the player offers τ", "本网站上的预生成版本", "## The distillation token",
                        "## 蒸馏词元"),
    "16_mae": ("On this website the player offers mask ratios", "本网站上的预生成版本", "The model was trained at 75% only",
               "模型只在 75% 下训练过"),
    "17_clip_llava": ("On this website the player offers three images", "本网站上的预生成版本", "Seen image 1, a red square",
                      "见过组合的图像 1 是一个红色正方形"),
}


@pytest.mark.parametrize("chapter", sorted(WEBSITE_SENTENCES))
def test_sentences_about_the_website_are_in_neither_lab_edition(chapter, tmp_path):
    from vit_edu.book.lab_edition import book_pages, lab_notebook
    from vit_edu.book.zh_edition import translated_page

    en_site, zh_site, en_kept, zh_kept = WEBSITE_SENTENCES[chapter]
    source = ROOT / "book" / f"{chapter}.ipynb"
    zh = tmp_path / source.name
    zh.write_text(translated_page(f"book/{chapter}", source), encoding="utf-8")
    labels, pages = bib_labels(ROOT / "book/references.bib"), book_pages(ROOT / "book")
    for path, site, kept in ((source, en_site, en_kept), (zh, zh_site, zh_kept)):
        book = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        lab = "\n".join(c.source for c in lab_notebook(path, labels, pages).cells if c.cell_type == "markdown")
        assert site in book and kept in book, f"{path}: the website's text changed; update this test"
        assert site not in lab, f"{path}: the Lab edition still says {site!r}"
        assert kept in lab, f"{path}: the Lab edition lost {kept!r} with the website's sentence"
