"""The whole ViT on one picture: every stage of the forward pass, labelled with the shape the model gave it.

The shapes are not typed: :func:`architecture_boxes` reads them from a :func:`vit_edu.trace_shapes` run, so the
diagram of chapter 0 changes when the configuration does.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from .model import VisionTransformer
from .trace import Shape, format_shape, trace_shapes


@dataclass(frozen=True)
class Box:
    """One stage of the diagram: what happens, the shape it produces, and whether it sits inside a block."""

    label: str
    shape: Shape
    in_block: bool = False
    residual: bool = False  # a "+" that adds the stream from before the preceding LayerNorm


# (label, trace stage, in a block, residual add); ``{…}`` fields are filled from the configuration.
_LAYOUT = [
    ("image", "input image", False, False),
    ("cut into {n} patches of {p}×{p}, flatten,\nproject to D = {d} (patch embedding)", "patch tokens (projected)", False, False),
    ("prepend the CLS token", "with CLS token", False, False),
    ("add the position embedding", "with position embedding", False, False),
    ("LayerNorm", "with position embedding", True, False),
    ("multi-head self-attention, {h} heads\nQ, K, V: {qkv} each; weights: {att}", "heads merged", True, False),
    ("+  (residual)", "attention output", True, True),
    ("LayerNorm", "attention output", True, False),
    ("MLP: widen to {m}, GELU, back to {d}", "MLP hidden", True, False),
    ("+  (residual)", "block output", True, True),
    ("final LayerNorm", "final tokens", False, False),
    ("take the CLS token (row 0)", "final CLS", False, False),
    ("classifier head: {k} logits", "logits", False, False),
]


def architecture_boxes(model: VisionTransformer, image: torch.Tensor) -> tuple[list[Box], int]:
    """The diagram's boxes, top to bottom, with the shapes one forward pass of ``model`` on ``image`` records.

    Returns the boxes and the number of encoder blocks. Only the book's standard ViT (Pre-LN, CLS readout) is
    drawn this way; other variants raise ``ValueError``.
    """
    cfg = model.config
    if cfg.norm != "pre" or cfg.pool != "cls":
        raise ValueError(
            f"the diagram draws a Pre-LN ViT read out through its CLS token; this model has norm={cfg.norm!r}, "
            f"pool={cfg.pool!r}"
        )
    trace = trace_shapes(model, image, all_blocks=True)
    depth = len({stage.split(":")[0] for stage, _ in trace if stage.startswith("block ")})
    shapes = {stage.removeprefix("block 1: "): shape for stage, shape in trace if not stage.startswith("block ") or stage.startswith("block 1:")}
    fields = {
        "n": cfg.num_patches, "p": cfg.patch_size, "d": cfg.embed_dim, "h": cfg.num_heads, "m": cfg.mlp_dim,
        "k": cfg.num_classes,
        "qkv": _compact(shapes["Q per head"]), "att": _compact(shapes["attention weights"]),
    }
    boxes = [Box(label.format(**fields), shapes[stage], in_block, residual) for label, stage, in_block, residual in _LAYOUT]
    return boxes, depth


def _compact(shape: Shape) -> str:
    """``(1, 12, 197, 64)`` -> ``"B×12×197×64"``: short enough to sit inside a box."""
    return format_shape(shape, batch="B").replace(" × ", "×")


def draw_vit(model: VisionTransformer, image: torch.Tensor, ax: Axes | None = None) -> Axes:
    """Draw the architecture as a column of boxes, each arrow labelled with the shape of the tensor it carries."""
    boxes, depth = architecture_boxes(model, image)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.62 * len(boxes) + 0.6))
    step, width = 1.0, 6.0
    ys = [-i * step for i in range(len(boxes))]
    block = [y for b, y in zip(boxes, ys) if b.in_block]
    ax.add_patch(Rectangle((-width / 2 - 0.2, block[-1] - 0.42), width + 0.7, block[0] - block[-1] + 0.84,
                           facecolor="#eef3fb", edgecolor="#4a6fa5", lw=1.2, ls="--"))
    ax.text(-width / 2 - 0.3, (block[0] + block[-1]) / 2, f"encoder block\n× {depth}", ha="right", va="center",
            fontsize=10, color="#4a6fa5", fontweight="bold")
    for i, (b, y) in enumerate(zip(boxes, ys)):
        colour = "#fff4d6" if b.residual else "white"
        ax.add_patch(FancyBboxPatch((-width / 2, y - 0.3), width, 0.6, boxstyle="round,pad=0.02",
                                    facecolor=colour, edgecolor="#333", lw=1))
        ax.text(0, y, b.label, ha="center", va="center", fontsize=9)
        # The shape of the tensor this stage hands on, beside the arrow that carries it.
        ax.text(0.12, y - 0.5, format_shape(b.shape, batch="B"), ha="left", va="center",
                fontsize=8.5, family="monospace", color="#a33")
        if i + 1 < len(boxes):
            ax.add_patch(FancyArrowPatch((0, y - 0.3), (0, ys[i + 1] + 0.3), arrowstyle="-|>", mutation_scale=10, lw=1))
    # Residual paths: from the input of each LayerNorm round to its "+".
    for i, b in enumerate(boxes):
        if b.residual:
            start, end, x = ys[i - 2] + 0.37, ys[i], width / 2 + 0.05
            ax.plot([0, x + 0.25, x + 0.25], [start, start, end], color="#c77d00", lw=1.2)
            ax.add_patch(FancyArrowPatch((x + 0.25, end), (x, end), arrowstyle="-|>", mutation_scale=10, lw=1.2,
                                         color="#c77d00"))
    ax.set_xlim(-width / 2 - 1.6, width / 2 + 0.6)
    ax.set_ylim(ys[-1] - 0.8, 0.6)
    ax.axis("off")
    return ax
