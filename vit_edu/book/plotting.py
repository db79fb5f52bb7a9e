"""Matplotlib figures the chapters share: images with their patch grid, token strips, attention heatmaps."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from vit_edu._checks import check_ndim
from vit_edu.patches import patchify


def to_hwc(image: torch.Tensor):
    """``(1, C, H, W)`` or ``(C, H, W)`` tensor -> ``(H, W, C)`` numpy array for ``imshow`` (C=1 squeezed)."""
    if image.ndim == 4:
        image = image[0]
    check_ndim("image", image, 3, "(C, H, W)")
    array = image.detach().permute(1, 2, 0).cpu().numpy()
    return array[..., 0] if array.shape[-1] == 1 else array


def show_patch_grid(ax: Axes, image: torch.Tensor, patch_size: int, *, color: str = "white") -> None:
    """Draw ``image`` with lines every ``patch_size`` pixels; the lines fall on patch borders."""
    array = to_hwc(image)
    height, width = array.shape[:2]
    ax.imshow(array, cmap="gray" if array.ndim == 2 else None)
    for y in range(patch_size, height, patch_size):
        ax.axhline(y - 0.5, color=color, linewidth=0.6)
    for x in range(patch_size, width, patch_size):
        ax.axvline(x - 0.5, color=color, linewidth=0.6)
    ax.set_xticks([])
    ax.set_yticks([])


def tile_mosaic(tiles: np.ndarray, per_row: int, gap: int, label_height: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Lay ``(N, P, P[, C])`` tiles row by row on a white canvas; return it and each tile's top-left (y, x).

    Each tile has a band of ``label_height`` pixels above it for its number and ``gap`` pixels around it.
    """
    n, p = tiles.shape[0], tiles.shape[1]
    rows = -(-n // per_row)
    cell_h, cell_w = label_height + p + gap, p + gap
    canvas = np.ones((rows * cell_h, per_row * cell_w) + tiles.shape[3:], dtype=np.float32)
    origins = []
    for i in range(n):
        y, x = (i // per_row) * cell_h + label_height, (i % per_row) * cell_w
        canvas[y : y + p, x : x + p] = tiles[i]
        origins.append((y, x))
    return canvas, origins


def patch_strip(image: torch.Tensor, patch_size: int, *, per_row: int | None = None) -> Figure:
    """The image's patches as numbered tiles in sequence order (row-major), ``per_row`` tiles a line.

    Drawn as one mosaic image rather than one axes per tile, so even 196 tiles draw in a blink.
    """
    if image.ndim == 3:
        image = image[None]
    channels = image.shape[1]
    tokens = patchify(image, patch_size)[0]  # (N, C·P·P)
    tiles = tokens.reshape(-1, channels, patch_size, patch_size).permute(0, 2, 3, 1).numpy()  # (N, P, P, C)
    if channels == 1:
        tiles = tiles[..., 0]
    n = tiles.shape[0]
    per_row = per_row or n
    label = max(4, patch_size // 2)
    canvas, origins = tile_mosaic(tiles, per_row, gap=max(1, patch_size // 8), label_height=label)
    height, width = canvas.shape[:2]
    fig, ax = plt.subplots(figsize=(min(12, width / 40), min(12, width / 40) * height / width))
    ax.imshow(canvas, cmap="gray" if channels == 1 else None, vmin=0, vmax=1, interpolation="nearest")
    for i, (y, x) in enumerate(origins):
        ax.text(x + patch_size / 2, y - 1, str(i), ha="center", va="bottom", fontsize=5)
    ax.axis("off")
    return fig
