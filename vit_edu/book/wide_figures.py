"""Figures a phone can read: a wide figure keeps at least :data:`MIN_SCALE` of its size and scrolls sideways.

A chapter's figures and the players' frames are PNGs drawn at about 100 dpi, up to 1,200 px wide, with 10-point
labels (about 14 px). Shrunk to a 390-px phone's column they fell to 30-45 % of their size and their labels to
4-7 px. On the website each PNG wider than :data:`NARROWEST` sits in a ``vit-wide-figure`` box that knows its width:
on a narrow screen (vit.css) the picture keeps at least :data:`MIN_SCALE` of it and the box scrolls sideways (the
page itself does not); figures.js makes such a box a keyboard stop, named by the picture's alt text, while it
scrolls. On a wide screen nothing changes. Sphinx's part is book/_ext/wide_figures.py; the players' part is
:mod:`vit_edu.book.site_frames`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MIN_SCALE = 0.65  # vit.css: 10-point labels stay 9 px or more
NARROWEST = 500  # a picture this wide or less fits a phone's column (358 px; a player's, 338) at MIN_SCALE: left alone
# A figure of the page: an <img> of a PNG that Sphinx copied into _images/.
SITE_IMAGE = re.compile(r'<img\b[^>]*\bsrc="(?:\.\./)*_images/([^"/]+\.png)"[^>]*>')


def wide_box(image: str, width: int) -> str:
    """``image`` (an ``<img>`` tag) in a box that scrolls it on a narrow screen, if ``width`` needs one."""
    if width <= NARROWEST:
        return image
    return f'<div class="vit-wide-figure" style="--vit-width: {width}px">{image}</div>'


def widen(body: str, size_of: Callable[[str], tuple[int, int] | None]) -> str:
    """Each figure of ``body`` (HTML) with its PNG's size (``size_of(name)``, None if unknown) on its ``<img>``, so
    that the page does not move as it loads, and boxed if it is wide."""

    def box(match: re.Match) -> str:
        size = size_of(match.group(1))
        if size is None or "width=" in match.group(0):
            return match.group(0)
        width, height = size
        return wide_box(match.group(0).replace("<img ", f'<img width="{width}" height="{height}" ', 1), width)

    return SITE_IMAGE.sub(box, body)
