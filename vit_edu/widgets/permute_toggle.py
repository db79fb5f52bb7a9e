"""Permute toggle: what does token i really hold, with and without the permute in patchify?

The photo is 224×224 with P = 16, so there are 196 tokens of 768 numbers. The view draws the 768 numbers
of one token back as a 16×16 RGB tile (read in vit_edu's ``(c, p_h, p_w)`` order), the true patch at that
grid position, and the photo with the true patch outlined and the pixels the numbers came from shaded.
Where the numbers came from is computed, not guessed: the same cut is applied to a tensor whose entries
are their own memory offsets.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.book.plotting import to_hwc
from vit_edu.data import sample_photo
from vit_edu.widgets.toy_tracer import token_sources as trace_tokens

IMAGE_SIZE = 224
PATCH_SIZE = 16
GRID = IMAGE_SIZE // PATCH_SIZE  # 14
CHANNEL_NAMES = ("red", "green", "blue")
MODES = ["with permute", "without permute"]

CONTROLS: dict[str, list] = {"token": list(range(GRID * GRID)), "permute": MODES}
# The website: token 0 with its right and lower neighbours 1 and 14; 64 (still all red), 66 (all green),
# 131 (all blue) and the last token 195. 7 × 2 = 14 frames. Tokens 65 and 130, where a channel ends in
# memory, are left out on purpose: finding them is chapter 1's exercise 3.
SITE_CONTROLS: dict[str, list] = {"token": [0, 1, 14, 64, 66, 131, 195], "permute": MODES}


@lru_cache(maxsize=1)
def photo() -> torch.Tensor:
    """The 224×224 sample photo, (1, 3, 224, 224); cached, never modified."""
    return sample_photo(IMAGE_SIZE)


@lru_cache(maxsize=2)
def _traced(mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The photo's tokens (196, 768) and each number's source pixel (196, 768, 3), traced by the toy tracer."""
    if mode not in MODES:
        raise ValueError(f"permute must be one of {MODES}, got {mode!r}")
    return trace_tokens(photo(), PATCH_SIZE, "permute" if mode == "with permute" else "without permute")


def token_tile(token: int, mode: str) -> torch.Tensor:
    """The 768 numbers of ``token`` as a (3, 16, 16) tile, in the ``(c, p_h, p_w)`` order vit_edu uses."""
    return _traced(mode)[0][token].reshape(3, PATCH_SIZE, PATCH_SIZE)


def true_patch(token: int) -> torch.Tensor:
    """The (3, 16, 16) pixels of the patch at ``token``'s row-major grid position."""
    row, col = divmod(token, GRID)
    p = PATCH_SIZE
    return photo()[0, :, row * p : (row + 1) * p, col * p : (col + 1) * p]


def token_sources(token: int, mode: str) -> torch.Tensor:
    """(768, 3) integer ``(channel, y, x)`` of the photo pixel behind each of ``token``'s numbers."""
    return _traced(mode)[1][token]


def describe_sources(token: int, mode: str) -> dict:
    """Measured facts about where ``token``'s numbers come from: channels, and per channel how many numbers
    and which image rows (first, last); the patches touched; how many numbers sit in their right place."""
    src = token_sources(token, mode)
    channel, y, x = src.unbind(1)
    patches = torch.unique((y // PATCH_SIZE) * GRID + x // PATCH_SIZE)
    row, col = divmod(token, GRID)
    p = PATCH_SIZE
    # Where each number *should* come from: the (c, p_h, p_w) position inside the token's own patch.
    want_c, within = torch.arange(3 * p * p) // (p * p), torch.arange(3 * p * p) % (p * p)
    want = torch.stack([want_c, row * p + within // p, col * p + within % p], dim=1)
    channels = torch.unique(channel).tolist()
    # Per channel, not min–max over all: a token that ends red and starts green holds the red channel's last
    # rows and the green channel's first rows, not every row in between.
    rows = {CHANNEL_NAMES[c]: (int(y[channel == c].min()), int(y[channel == c].max())) for c in channels}
    return {
        "channels": [CHANNEL_NAMES[c] for c in channels],
        "counts": {CHANNEL_NAMES[c]: int((channel == c).sum()) for c in channels},
        "rows": rows,
        "patches": patches.tolist(),
        "in_place": int((src == want).all(dim=1).sum()),
    }


def _bands(src: torch.Tensor) -> list[tuple[int, int, int, int]]:
    """Runs of consecutive image rows among the source pixels, as (y_lo, y_hi, x_lo, x_hi) boxes."""
    y, x = src[:, 1], src[:, 2]
    rows = torch.unique(y).tolist()
    runs, start = [], rows[0]
    for prev, cur in zip(rows, rows[1:] + [None]):
        if cur is None or cur != prev + 1:
            runs.append((start, prev))
            start = cur
    boxes = []
    for lo, hi in runs:
        inside = (y >= lo) & (y <= hi)
        boxes.append((lo, hi, int(x[inside].min()), int(x[inside].max())))
    return boxes


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _span(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _where(facts: dict) -> str:
    """'the red channel (768 numbers, image rows 0–3)', per channel; one clause when all channels agree."""
    names, counts, rows = facts["channels"], facts["counts"], facts["rows"]
    if len(names) > 1 and len(set(counts.values())) == 1 and len(set(rows.values())) == 1:
        count, (lo, hi) = counts[names[0]], rows[names[0]]
        return f"the {_and(names)} channels ({count} numbers each, image rows {_span(lo, hi)} in each)"
    parts = [f"the {name} channel ({counts[name]} numbers, image rows {_span(*rows[name])})" for name in names]
    return _and(parts)


def permute_toggle_view(token: int, permute: str) -> tuple[Figure, str]:
    """Token ``token``'s numbers drawn as a tile, next to the true patch and the photo; caption: match or not."""
    if permute not in MODES:
        raise ValueError(f"permute must be one of {MODES}, got {permute!r}")
    n = GRID * GRID
    fig, axes = plt.subplots(1, 3, figsize=(7.5, 3), gridspec_kw={"width_ratios": [1.6, 1, 1]})
    if not 0 <= token < n:
        for ax in axes:
            ax.axis("off")
        axes[1].text(0.5, 0.5, f"no token {token}", ha="center", va="center")
        return fig, f"There are {n} tokens (0 to {n - 1}); token {token} does not exist."
    row, col = divmod(token, GRID)
    tile, truth = token_tile(token, permute), true_patch(token)
    match = torch.equal(tile, truth)
    facts = describe_sources(token, permute)

    src = token_sources(token, permute)
    mask = np.zeros((IMAGE_SIZE, IMAGE_SIZE), dtype=bool)
    mask[src[:, 1].numpy(), src[:, 2].numpy()] = True
    shade = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 4))
    shade[mask] = (0.0, 1.0, 1.0, 0.7)  # cyan: pixels this token's numbers were read from
    ax = axes[0]
    ax.imshow(to_hwc(photo()))
    ax.imshow(shade)
    for y_lo, y_hi, x_lo, x_hi in _bands(src):  # outline each band of source rows so thin ones stay visible
        ax.add_patch(
            Rectangle((x_lo - 0.5, y_lo - 0.5), x_hi - x_lo + 1, y_hi - y_lo + 1, fill=False, edgecolor="cyan", lw=1)
        )
    p = PATCH_SIZE
    ax.add_patch(Rectangle((col * p - 0.5, row * p - 0.5), p, p, fill=False, edgecolor="yellow", linewidth=1.5))
    ax.set_title("true patch (yellow),\nsource pixels (cyan)", fontsize=9)
    axes[1].imshow(to_hwc(tile))
    axes[1].set_title(f"token {token}, {permute}:\nits 768 numbers", fontsize=9)
    axes[2].imshow(to_hwc(truth))
    axes[2].set_title(f"true patch:\ngrid row {row}, col {col}", fontsize=9)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])

    where = (
        f"its numbers come from {_where(facts)}, "
        f"touching {len(facts['patches'])} patch{'es' if len(facts['patches']) > 1 else ''}"
    )
    if match:
        verdict = (
            f"<b>match</b>: the tile equals the patch at grid row {row}, column {col} "
            f"(all {facts['in_place']} numbers in place); {where}."
        )
    else:
        verdict = (
            f"<b>no match</b>: the tile differs from the patch at grid row {row}, column {col}; {where}; "
            f"only {facts['in_place']} of 768 numbers sit where that patch's pixel belongs."
        )
    return fig, f"Token {token}, {permute}: {verdict}"
