"""Toy tracer: follow one pixel of the 4×4 toy image into the token matrix (chapter 2).

The figures colour every pixel by the patch it belongs to and write its value in the cell; the token
matrix (one row per token) keeps each value's colour, so a reader can see which pixels a token holds.
Where each value lands is not computed by a formula here: :func:`token_sources` patchifies an image of
flat pixel indices with the same ``vit_edu`` function, so the picture always shows what the package does.
"""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.patches import patchify, patchify_without_permute, toy_image

METHODS = ("permute", "without permute")

CONTROLS: dict[str, list] = {
    "row": [0, 1, 2, 3],
    "col": [0, 1, 2, 3],
    "patch_size": [1, 2, 3, 4],
    "method": list(METHODS),
}
# The website shows P = 2 only (the one size where the two methods differ): 4·4·2 = 32 frames.
SITE_CONTROLS: dict[str, list] = {
    "row": [0, 1, 2, 3],
    "col": [0, 1, 2, 3],
    "method": list(METHODS),
}

_CELL = 0.36  # inches per grid cell
_HIGHLIGHT = "#d62728"


def _cut(images: torch.Tensor, patch_size: int, method: str) -> torch.Tensor:
    if method == "permute":
        return patchify(images, patch_size)
    if method == "without permute":
        return patchify_without_permute(images, patch_size)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def token_sources(images: torch.Tensor, patch_size: int, method: str = "permute") -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens ``(N, C·P·P)`` of the first image, and for each entry the pixel it came from as ``(c, row, col)``.

    ``method`` is ``"permute"`` (:func:`vit_edu.patchify`) or ``"without permute"``
    (:func:`vit_edu.patchify_without_permute`). Raises ``ValueError`` like those functions do.
    """
    _, channels, height, width = images.shape
    tokens = _cut(images, patch_size, method)[0]  # (N, C·P·P)
    flat = torch.arange(channels * height * width, dtype=torch.float64).reshape(1, channels, height, width)
    index = _cut(flat, patch_size, method)[0].long()  # (N, C·P·P): flat pixel index of every entry
    sources = torch.stack([index // (height * width), (index // width) % height, index % width], dim=-1)
    return tokens, sources  # sources: (N, C·P·P, 3)


def _palette(n: int) -> np.ndarray:
    """``n`` light, distinct colours (RGB in [0, 1]) so black numbers stay readable on them."""
    if n <= 10:
        base = np.array([plt.get_cmap("tab10")(i)[:3] for i in range(n)])
    else:  # tab20's ten strong hues first, then their pale partners
        order = list(range(0, 20, 2)) + list(range(1, 20, 2))
        base = np.array([plt.get_cmap("tab20")(order[i % 20])[:3] for i in range(n)])
    return 0.55 * base + 0.45  # mixed with white


def pixel_colours(channels: int, height: int, width: int, patch_size: int) -> np.ndarray:
    """``(C, H, W, 3)`` colours: one hue per patch (row-major), channel 1, 2, ... a little lighter."""
    grid_w = -(-width // patch_size)
    grid_h = -(-height // patch_size)
    palette = _palette(grid_h * grid_w)
    rows = np.arange(height)[:, None] // patch_size
    cols = np.arange(width)[None, :] // patch_size
    colours = palette[rows * grid_w + cols]  # (H, W, 3)
    return np.stack([1.0 - (1.0 - colours) * (0.55 ** c) for c in range(channels)])


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def draw_grid(
    ax: Axes,
    values: np.ndarray,
    colours: np.ndarray,
    *,
    x0: float = 0.0,
    highlight: tuple[int, int] | None = None,
    row_labels: list[str] | None = None,
    col_labels: list[str] | None = None,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    fontsize: float = 9,
) -> None:
    """Coloured cells with their value written in, cell (i, j) centred at (x0 + j, i); red frame at ``highlight``.

    Labels are plain texts (matplotlib's tick objects cost more than the whole grid); the caller sets the
    limits, with the y axis pointing down (``ax.set_ylim(bottom, top)`` with bottom > top).
    """
    rows, cols = values.shape
    left, right = x0 - 0.5, x0 + cols - 0.5
    ax.imshow(colours, interpolation="nearest", extent=(left, right, rows - 0.5, -0.5))
    for i in range(rows):
        for j in range(cols):
            ax.text(x0 + j, i, _fmt(values[i, j]), ha="center", va="center", fontsize=fontsize)
    ax.hlines(np.arange(-0.5, rows), left, right, color="white", linewidth=1.0)
    ax.vlines(np.arange(left, right + 0.5), -0.5, rows - 0.5, color="white", linewidth=1.0)
    if highlight is not None:
        i, j = highlight
        ax.add_patch(Rectangle((x0 + j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=_HIGHLIGHT, linewidth=2.5))
    for i, label in enumerate(row_labels or []):
        ax.text(left - 0.2, i, label, ha="right", va="center", fontsize=7)
    for j, label in enumerate(col_labels or []):
        ax.text(x0 + j, rows - 0.35, label, ha="center", va="top", fontsize=7)
    if xlabel:
        ax.text(x0 + (cols - 1) / 2, rows + 0.2, xlabel, ha="center", va="top", fontsize=8)
    if ylabel:
        ax.text(left - 0.75, (rows - 1) / 2, ylabel, ha="right", va="center", rotation=90, fontsize=8)
    if title:
        ax.text(x0 + (cols - 1) / 2, -0.7, title, ha="center", va="bottom", fontsize=8.5)


def trace_figure(
    images: torch.Tensor,
    patch_size: int,
    method: str = "permute",
    *,
    highlight: tuple[int, int, int] | None = None,
    title: str | None = None,
) -> Figure:
    """Image channel(s) on the left, token matrix on the right, colours following each pixel.

    ``images`` is ``(1, C, H, W)``; ``highlight`` = ``(c, row, col)`` frames one pixel and its token entry.
    Raises ``ValueError`` (from ``vit_edu``) when ``patch_size`` does not divide the image.
    One axes holds all panels, placed side by side in cell units (cheaper than one axes per panel).
    """
    _, channels, height, width = images.shape
    tokens, sources = token_sources(images, patch_size, method)
    n, length = tokens.shape
    colours = pixel_colours(channels, height, width, patch_size)
    token_colours = colours[sources[..., 0].numpy(), sources[..., 1].numpy(), sources[..., 2].numpy()]

    gap_image, gap_tokens = 1.4, 2.6  # in cells: room for row labels / "token t" labels
    starts = [gap_image + c * (width + gap_image) for c in range(channels)]
    starts.append(starts[-1] + width + gap_tokens)
    total_w = starts[-1] + length + 0.2
    top, bottom = 1.7 + 0.8 * bool(title), max(height, n) + 1.0  # cells above row 0 / below the top edge
    cell = min(_CELL, 8.0 / total_w)  # at most 8 inches wide
    fig = plt.figure(figsize=(cell * total_w, cell * (top + bottom)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-0.5, total_w - 0.5)
    ax.set_ylim(bottom - 0.5, -top - 0.5)
    ax.axis("off")

    for c in range(channels):
        mark = (highlight[1], highlight[2]) if highlight is not None and highlight[0] == c else None
        draw_grid(
            ax, images[0, c].numpy(), colours[c], x0=starts[c], highlight=mark,
            row_labels=[str(i) for i in range(height)], col_labels=[str(j) for j in range(width)],
            xlabel="column", ylabel="row" if c == 0 else "",
            title=f"image, channel {c}" if channels > 1 else f"image {height}×{width}, P = {patch_size}",
        )
        x0 = starts[c] - 0.5  # black lines on the patch borders
        ax.hlines(np.arange(patch_size, height, patch_size) - 0.5, x0, x0 + width, color="black", linewidth=1.6)
        ax.vlines(x0 + np.arange(patch_size, width, patch_size), -0.5, height - 0.5, color="black", linewidth=1.6)

    mark = None
    if highlight is not None:
        hit = (sources == torch.tensor(highlight)).all(dim=-1).nonzero()
        mark = (int(hit[0, 0]), int(hit[0, 1]))
    x0 = starts[-1]
    draw_grid(
        ax, tokens.numpy(), token_colours, x0=x0, highlight=mark,
        row_labels=[f"token {t}" for t in range(n)], col_labels=[str(k) for k in range(length)],
        xlabel="position in token",
        title=f"tokens ({method})\n{_count(n, 'token')} × {_count(length, 'value')}",
    )
    if channels > 1:  # where one channel's block ends inside a token
        edges = x0 - 0.5 + np.arange(1, channels) * patch_size**2
        ax.vlines(edges, -0.5, n - 0.5, color="black", linewidth=1.6)
    if title:
        ax.text((total_w - 1) / 2, -top, title, ha="center", va="top", fontsize=10)
    return fig


def _message_figure(text: str) -> Figure:
    fig, ax = plt.subplots(figsize=(4.5, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True)
    return fig


def locate(row: int, col: int, patch_size: int, method: str = "permute") -> tuple[int, int]:
    """``(token, position)`` where pixel (row, col) of the 4×4 toy image lands."""
    _, sources = token_sources(toy_image(), patch_size, method)
    hit = (sources == torch.tensor([0, row, col])).all(dim=-1).nonzero()
    return int(hit[0, 0]), int(hit[0, 1])


def toy_tracer_view(row: int = 0, col: int = 0, patch_size: int = 2, method: str = "permute") -> tuple[Figure, str]:
    """Highlight pixel (row, col) of the 4×4 toy image and the (token, position) it lands in."""
    image = toy_image()
    size = image.shape[-1]
    if method not in METHODS:
        text = f"method must be one of {', '.join(METHODS)}; got {method!r}."
        return _message_figure(text), html.escape(text)
    if not (isinstance(row, int) and isinstance(col, int) and 0 <= row < size and 0 <= col < size):
        text = f"The toy image is {size}×{size}: row and column go from 0 to {size - 1}; got ({row}, {col})."
        return _message_figure(text), html.escape(text)
    try:
        _, sources = token_sources(image, patch_size, method)
    except ValueError as error:
        text = f"Patch size {patch_size} does not fit the {size}×{size} image: {error}."
        fig = _message_figure(f"P = {patch_size} does not divide {size}:\nno patch grid, no tokens")
        return fig, html.escape(text)

    token, position = locate(row, col, patch_size, method)
    value = int(image[0, 0, row, col])
    fig = trace_figure(image, patch_size, method, highlight=(0, row, col))
    p, grid_w = patch_size, size // patch_size
    head = f"pixel ({row}, {col}) with value {value} → token {token}, position {position}"
    if method == "permute":
        why = (
            f"It sits in patch row {row // p}, patch column {col // p}, so token {row // p}·{grid_w} + {col // p}"
            f" = {token}; inside that patch it is at ({row % p}, {col % p}), so position {row % p}·{p} + {col % p}"
            f" = {position}."
        )
    else:
        flat = row * size + col
        why = (
            f"Without the permute, reshape reads the numbers in memory order: flat index {row}·{size} + {col} = {flat},"
            f" so token {flat} // {p * p} = {token}, position {flat} % {p * p} = {position}."
        )
        patches = sorted({int(r) // p * grid_w + int(c) // p for _, r, c in sources[token].tolist()})
        if len(patches) > 1:
            why += f" Token {token} mixes pixels of patches {', '.join(map(str, patches))}: it is not a square of the image."
    if torch.equal(patchify(image, p), patchify_without_permute(image, p)):
        why += f" (With P = {p} both methods give the same tokens.)"
    return fig, f"<b>{html.escape(head)}</b><br>{html.escape(why)}"

