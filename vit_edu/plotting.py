"""Matplotlib figures the chapters share: images with their patch grid, token strips, attention heatmaps."""

from __future__ import annotations

import matplotlib.pyplot as plt
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


def patch_strip(image: torch.Tensor, patch_size: int, *, per_row: int | None = None) -> Figure:
    """The image's patches as tiles in sequence order (row-major), numbered, ``per_row`` tiles a line."""
    if image.ndim == 3:
        image = image[None]
    tokens = patchify(image, patch_size)[0]  # (N, C·P·P)
    channels = image.shape[1]
    tiles = tokens.reshape(-1, channels, patch_size, patch_size)  # (N, C, P, P)
    n = tiles.shape[0]
    per_row = per_row or n
    rows = -(-n // per_row)
    fig, axes = plt.subplots(rows, per_row, figsize=(per_row * 0.45, rows * 0.6), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < n:
            ax.imshow(to_hwc(tiles[i]), cmap="gray" if channels == 1 else None)
            ax.set_title(str(i), fontsize=6, pad=1)
    fig.subplots_adjust(wspace=0.08, hspace=0.35)
    return fig
