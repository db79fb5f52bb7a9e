import re
from pathlib import Path

import nbformat
import pytest

from vit_edu.book.lab_edition import bib_labels, glued_values, lab_markdown, write_lab_edition

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
    written = write_lab_edition(ROOT / "book", tmp_path)
    assert len(written) >= 14
    for path in written:
        nb = nbformat.read(path, as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not re.search(r"\{(glue|cite)[^}]*\}`", prose), f"{path.name} still holds a placeholder"
        original = nbformat.read(ROOT / "book" / path.name, as_version=4)
        assert [c.source for c in nb.cells if c.cell_type == "code"] == [
            c.source for c in original.cells if c.cell_type == "code"
        ]
    ch10 = nbformat.read(tmp_path / "10_attention_maps.ipynb", as_version=4)
    assert glued_values(ch10)  # the copy keeps its outputs, so it can be run and compared like the original


def test_a_copy_the_learner_changed_is_kept(tmp_path):
    import os

    write_lab_edition(ROOT / "book", tmp_path)
    mine = tmp_path / "05_qkv.ipynb"
    mine.write_text(mine.read_text() + " ")  # the learner's edit: newer than the chapter
    later = (ROOT / "book/05_qkv.ipynb").stat().st_mtime + 10
    os.utime(mine, (later, later))
    written = write_lab_edition(ROOT / "book", tmp_path)
    assert mine not in written and mine.read_text().endswith(" ")
