"""Wide figures are boxed for a phone (vit_edu.book.wide_figures); the browser test checks how they show."""

from __future__ import annotations

import pytest

from vit_edu.book.wide_figures import NARROWEST, wide_box, widen
from vit_edu.widgets.frames import png_size

PNG_HEADER = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (1211).to_bytes(4, "big") + (300).to_bytes(4, "big")


def test_png_size_reads_the_header_and_refuses_what_is_not_a_png():
    assert png_size(PNG_HEADER) == (1211, 300)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + bytes(20))


def test_only_wide_figures_are_boxed_with_their_size():
    sizes = {"wide.png": (1211, 300), "narrow.png": (NARROWEST, 200)}
    body = ('<p><img alt="A wide one." src="../_images/wide.png" /></p><img alt="A narrow one." '
            'src="../_images/narrow.png" /><img alt="Elsewhere." src="../elsewhere/wide.png" />'
            '<img alt="Unknown." src="../_images/gone.png" />')
    boxed = widen(body, sizes.get)
    assert boxed.count('class="vit-wide-figure"') == 1
    assert ('<div class="vit-wide-figure" style="--vit-width: 1211px"><img width="1211" height="300" '
            'alt="A wide one." src="../_images/wide.png" /></div>') in boxed
    # Fits a phone as it is: no box, but its size, so that the page does not move as it loads.
    assert f'<img width="{NARROWEST}" height="200" alt="A narrow one." src="../_images/narrow.png" />' in boxed
    assert widen(boxed, sizes.get) == boxed  # a figure boxed before is left alone


def test_a_box_only_where_the_width_needs_one():
    assert wide_box("<img>", NARROWEST) == "<img>"
    assert wide_box("<img>", NARROWEST + 1).startswith('<div class="vit-wide-figure"')
