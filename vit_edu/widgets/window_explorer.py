"""Chapter 14's widget: pick a window size, shifted windows or not, a depth and a token of an 8×8 token grid, and see
which input tokens that token's output depends on after 1, 2, … window-attention layers.

Each panel is one depth: the thick lines are that layer's windows drawn on the original grid (a shifted layer's
windows are a grid moved by s = ⌊M/2⌋, cut at the border), the blue cells the tokens reached so far, the ringed cell
the token. The numbers come from :func:`vit_edu.variants.receptive_field`. A window as large as the grid is one
window, global attention as in ViT; Swin then skips the shift, and so does this view.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from vit_edu.variants.windows import receptive_field, window_groups
from vit_edu.widgets.frames import problem_frame

GRID = 8
SHIFTS = ("every second layer (Swin)", "never")
MAX_LAYERS = 8  # enough for every token to reach the whole grid with 2×2 shifted windows (a corner needs 7)
PER_ROW = 4  # panels per row of the figure
CONTROLS: dict[str, list] = {
    "window_size": [2, 4, 8],
    "shifted_windows": list(SHIFTS),
    "layers": list(range(1, MAX_LAYERS + 1)),
    "row": list(range(GRID)),
    "column": list(range(GRID)),
}
# The website's player: windows of 2 and 4, shift or not, 4 or 8 layers (with 8, every token of the grid is reached
# with the shift, a corner's 2×2 windows included), four tokens (rows 0 and 3 by columns 0 and 2: a corner, two
# edges and an inner one). Every control has at least two values, so every slider moves: 2·2·2·2·2 = 32 frames.
SITE_CONTROLS: dict[str, list] = {
    "window_size": [2, 4],
    "shifted_windows": list(SHIFTS),
    "layers": [4, MAX_LAYERS],
    "row": [0, 3],
    "column": [0, 2],
}
START = {"window_size": 2, "shifted_windows": SHIFTS[0], "layers": 4, "row": 3, "column": 2}


def layer_shift(window_size: int, layer: int, shifted: bool) -> int:
    """The shift of layer ``layer`` (1-based): ⌊M/2⌋ in every second layer if ``shifted`` and M < GRID, else 0."""
    return window_size // 2 if shifted and layer % 2 == 0 and window_size < GRID else 0


def fields(window_size: int, shifted: bool, layers: int, row: int, column: int):
    """``(layers, GRID, GRID)`` booleans: what the token's output depends on after each depth (as the view draws)."""
    return receptive_field(GRID, GRID, window_size, layers, row, column, shifted=shifted and window_size < GRID)


def _problem(window_size: object, shifted_windows: object, layers: object, row: object, column: object) -> str | None:
    if window_size not in CONTROLS["window_size"]:
        return (f"window size must be one of {CONTROLS['window_size']} (it must divide the {GRID}×{GRID} grid); "
                f"got {window_size!r}.")
    if shifted_windows not in SHIFTS:
        return f"shifted windows must be one of {', '.join(SHIFTS)}; got {shifted_windows!r}."
    if layers not in CONTROLS["layers"]:
        return f"layers must be a whole number from 1 to {MAX_LAYERS}; got {layers!r}."
    if row not in CONTROLS["row"] or column not in CONTROLS["column"]:
        return f"row and column must be whole numbers from 0 to {GRID - 1}; got {row!r} and {column!r}."
    return None


def _draw_windows(ax, groups: np.ndarray) -> None:
    """Thin lines between all cells (tokens); thick ones between cells of different windows, and around the grid."""
    for t in range(GRID - 1):
        ax.axhline(t + 0.5, color="white", lw=0.6)
        ax.axvline(t + 0.5, color="white", lw=0.6)
    for r in range(GRID):
        for c in range(GRID - 1):
            if groups[r, c] != groups[r, c + 1]:
                ax.plot([c + 0.5, c + 0.5], [r - 0.5, r + 0.5], color="black", lw=1.6)
    for r in range(GRID - 1):
        for c in range(GRID):
            if groups[r, c] != groups[r + 1, c]:
                ax.plot([c - 0.5, c + 0.5], [r + 0.5, r + 0.5], color="black", lw=1.6)
    edge = [-0.5, GRID - 0.5, GRID - 0.5, -0.5, -0.5]
    ax.plot(edge, edge[-1:] + edge[:-1], color="black", lw=1.6)  # the frame around the grid


def _listed(numbers: list[int]) -> str:
    """'2', '2 and 4', '2, 4 and 6': numbers in words."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _how(window_size: int, shifted: bool, layers: int) -> str:
    """The caption's first part: the windows, and which of the layers shown are shifted."""
    if window_size == GRID:
        return f"one {GRID}×{GRID} window covers the grid: global attention, as in ViT (no shift is applied)"
    if not shifted:
        return f"{window_size}×{window_size} windows, never shifted"
    moved = [d for d in range(1, layers + 1) if layer_shift(window_size, d, shifted)]
    if not moved:
        return (f"{window_size}×{window_size} windows, shifted by {window_size // 2} in every second layer "
                "(from layer 2, so not in the one layer shown)")
    plural = "s" if len(moved) > 1 else ""
    return f"{window_size}×{window_size} windows, shifted by {window_size // 2} in layer{plural} {_listed(moved)}"


def _reach(counts: list[int], grows: bool) -> str:
    """The caption's second part: how many input tokens the output depends on after each layer shown.

    ``grows``: whether the field can grow at all (shifted windows); without a shift it stays one window.
    """
    layers = len(counts)
    after = {1: "After layer 1", 2: "After layers 1 and 2"}.get(layers, f"After layers 1 to {layers}")
    text = (f"{after} its output depends on <b>{', '.join(map(str, counts))}</b> of the {GRID * GRID} input tokens"
            + ("" if layers == 1 else ", layer by layer"))
    full = next((d for d, n in enumerate(counts, start=1) if n == GRID * GRID), None)
    if full is None:
        return text + (": not yet on all of them." if grows else
                       ": only its own window's, at any depth (without a shift nothing crosses a window border).")
    if layers == 1:
        return text + ": on all of them."
    return text + f": on all of them from layer <b>{full}</b>" + (" on." if full < layers else ", the last one shown.")


def window_explorer_view(
    window_size: int = 2, shifted_windows: str = SHIFTS[0], layers: int = 4, row: int = 3, column: int = 2
) -> tuple[Figure, str]:
    """One 8×8 panel per depth 1…``layers``: the layer's windows, the tokens reached, the chosen token."""
    problem = _problem(window_size, shifted_windows, layers, row, column)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.2))
    shifted = shifted_windows == SHIFTS[0]
    reach = fields(window_size, shifted, layers, row, column).numpy()  # (layers, GRID, GRID)
    counts = [int(r.sum()) for r in reach]
    rows, cols = -(-layers // PER_ROW), min(layers, PER_ROW)
    fig, axes = plt.subplots(rows, cols, figsize=(1.55 * cols + 0.2, 2.05 * rows), squeeze=False)
    for ax in axes.flat[layers:]:
        fig.delaxes(ax)  # the last row's unused places
    for depth, ax in enumerate(axes.flat[:layers], start=1):
        shift = layer_shift(window_size, depth, shifted)
        ax.imshow(reach[depth - 1], cmap="Blues", vmin=-0.35, vmax=1.3, interpolation="nearest")
        _draw_windows(ax, window_groups(GRID, GRID, window_size, shift).numpy())
        ax.scatter([column], [row], s=60, facecolors="none", edgecolors="tab:red", linewidths=2)
        ax.set_xticks([])
        ax.set_yticks([])
        kind = "shifted" if shift else "regular"
        ax.set_title(f"layer {depth}, {kind}\n{counts[depth - 1]} of {GRID * GRID} tokens", fontsize=8)
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.03 / rows, top=1 - 0.22 / rows, wspace=0.12, hspace=0.35)
    caption = f"{_how(window_size, shifted, layers)}; token (row {row}, column {column}). {_reach(counts, shifted)}"
    return fig, caption
