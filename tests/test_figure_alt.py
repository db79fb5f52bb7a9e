"""Every figure a chapter's code draws says what it shows to a reader who cannot see it (WCAG 1.1.1), in both
editions: myst-nb's cell option ``mystnb.image.alt``, translated through the page's output catalogue."""

import re

import nbformat
import pytest

from vit_edu.book import i18n, output_text, zh_edition

CHAPTERS = [f for f in i18n.toc_files() if re.match(r"book/\d\d_", f)]
PATH_LIKE = re.compile(r"\.(?:png|svg|jpe?g|gif)\b|_images/|^\S+$")


def _figure_cells(nb: nbformat.NotebookNode) -> list[dict]:
    return [c for c in nb.cells if c.cell_type == "code" and any(
        k.startswith("image/") for o in c.get("outputs", []) for k in o.get("data", {}))]


@pytest.mark.parametrize("file", CHAPTERS)
def test_every_figure_has_a_one_sentence_description(file):
    nb = nbformat.read(zh_edition.english_file(file), as_version=4)
    for cell in _figure_cells(nb):
        alt = output_text.figure_alt(cell) or ""
        words = alt.split()
        assert 5 <= len(words) <= 60 and alt.endswith(".") and not PATH_LIKE.search(alt), (
            f"{file}: the figure of the cell starting {cell.source[:80]!r} needs a one-sentence alt text "
            f"(cell metadata mystnb.image.alt), not {alt!r}")


@pytest.mark.parametrize("file", CHAPTERS)
def test_the_chinese_edition_describes_its_figures_in_chinese(file):
    nb = nbformat.reads(zh_edition.translated_page(file, zh_edition.english_file(file)), as_version=4)
    for cell in _figure_cells(nb):
        alt = output_text.figure_alt(cell)
        assert alt and i18n.CJK.search(alt) and alt.endswith("。"), alt
