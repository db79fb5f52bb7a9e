"""Patch explorer: pick an image size and a patch size, see the grid and the sequence it makes.

The view draws the sample photo resized to ``image_size`` with its patch grid and writes the numbers a ViT
cares about: the number of patches N, the sequence length S = N + 1 (with a CLS token), the token length
C·P·P and the entries of one head's S×S attention matrix. A size that does not divide by the patch size is
not an error here: the leftover strip is shaded and the caption says what ``vit_edu.patchify`` would do.
"""

from __future__ import annotations

import html
from functools import lru_cache

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.book.plotting import show_patch_grid
from vit_edu.data import sample_photo
from vit_edu.patches import patchify

CHANNELS = 3  # the photo is RGB

CONTROLS: dict[str, list] = {
    "image_size": [32, 64, 96, 128, 160, 192, 224, 225, 240, 256, 320, 384, 448],
    "patch_size": [4, 8, 14, 16, 32],
}
# The website shows a precomputed frame per combination: 3 × 4 = 12 frames. 224 divides by every patch size,
# 225 by none, 240 by 8 and 16 only. (P = 4, with its dense grid, is left to the live widget.)
SITE_CONTROLS: dict[str, list] = {
    "image_size": [224, 225, 240],
    "patch_size": [8, 14, 16, 32],
}


@lru_cache(maxsize=16)
def _photo(size: int) -> torch.Tensor:
    return sample_photo(size)  # (1, 3, size, size); cached, never modified


def patch_numbers(image_size: int, patch_size: int, channels: int = CHANNELS) -> dict[str, int]:
    """The counts for a square image: grid side, leftover pixels, N, S = N + 1, C·P·P and S².

    For a size that does not divide, the counts describe the whole patches that fit (the image cropped to
    ``grid · patch_size``); ``remainder`` says how many pixels are left over on each side's end.
    """
    grid, remainder = divmod(image_size, patch_size)
    n = grid * grid
    s = n + 1
    return {
        "grid": grid,
        "remainder": remainder,
        "cropped": grid * patch_size,
        "N": n,
        "S": s,
        "token_length": channels * patch_size * patch_size,
        "attention_entries": s * s,
    }


def _numbers_html(k: dict[str, int], patch_size: int) -> str:
    patches = "patch" if k["N"] == 1 else "patches"
    return (
        f"the grid is {k['grid']}×{k['grid']}, so N = {k['N']:,} {patches}, "
        f"S = N + 1 = {k['S']:,} tokens with the CLS token; "
        f"each token holds C·P·P = {CHANNELS}·{patch_size}·{patch_size} = {k['token_length']:,} numbers; "
        f"one head's attention matrix has S² = {k['attention_entries']:,} entries."
    )


def patch_explorer_view(image_size: int, patch_size: int) -> tuple[Figure, str]:
    """The photo at ``image_size``² with a ``patch_size`` grid, and a caption with N, S, C·P·P and S²."""
    k = patch_numbers(image_size, patch_size)
    image = _photo(image_size)
    fig, ax = plt.subplots(figsize=(3.6, 3.6))
    show_patch_grid(ax, image, patch_size)
    head = f"<b>{image_size}×{image_size}, P = {patch_size}</b>: "
    if k["remainder"] == 0:
        tokens = patchify(image, patch_size)  # the package decides; the caption reports its shape
        n, length = tokens.shape[1], tokens.shape[2]
        assert (n, length) == (k["N"], k["token_length"])
        ax.set_title(f"{image_size}×{image_size}, P = {patch_size}: {k['grid']}×{k['grid']} patches", fontsize=9)
        return fig, head + _numbers_html(k, patch_size)

    try:
        patchify(image, patch_size)
        message = "(no error?)"
    except ValueError as error:  # expected: the package names the sizes and the fix
        message = str(error)
    r, cut, edge = k["remainder"], k["cropped"], image_size - 0.5
    strip = {"facecolor": (1, 0, 0, 0.45), "edgecolor": "red", "linewidth": 1.5}  # the edge keeps 1 px visible
    ax.add_patch(Rectangle((cut - 0.5, -0.5), r, image_size, **strip))  # right: columns no patch covers
    ax.add_patch(Rectangle((-0.5, cut - 0.5), cut, r, **strip))  # bottom: rows no patch covers
    ax.set_xlim(-0.5, edge)
    ax.set_ylim(edge, -0.5)
    ax.set_title(f"{image_size} is not divisible by {patch_size}: {r}-pixel strip left over", fontsize=9)
    caption = (
        head + f"{image_size} is not divisible by {patch_size}: {image_size} = {k['grid']}·{patch_size} + {r}, "
        f"a remainder of {r} pixel{'s' if r != 1 else ''} (the red strips). "
        f"<code>vit_edu.patchify</code> refuses it: <i>{html.escape(message)}</i>. "
    )
    if k["grid"] == 0:
        return fig, caption + "Not even one whole patch fits."
    return fig, caption + f"Cropped to {cut}×{cut}: " + _numbers_html(k, patch_size)
