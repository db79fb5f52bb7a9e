"""What a ViT costs: parameters, multiply-adds and attention memory, from the configuration alone.

The formulas are plain functions so the book (chapter 8) and the widget use one source of truth; the tests
check the parameter formula against ``count_parameters`` of a real model.

Counting conventions (per image, batch 1):

* **Counts are multiply-adds (MACs)**: a ``Linear(a, b)`` applied to S tokens costs ``S·a·b``. The "FLOPs" in
  the model tables of vision papers (Swin's Table 1, timm's "GMACs") are these multiply-adds; PyTorch's
  ``FlopCounterMode`` and the "2 FLOPs per multiply-add" convention give twice as many.
* Only matrix products are counted. LayerNorm, softmax, GELU, the residual additions and the biases cost
  O(S·D) or O(h·S²) element-wise operations and are left out.
* Per encoder layer, with S tokens of width D, h heads and MLP ratio r:
  projections (Q, K, V and the output) ``4·S·D²``; attention (QKᵀ and the weighted sum of V, all heads)
  ``2·S²·D``; MLP ``2·r·S·D²``.
"""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

IN_CHANNELS = 3
BYTES_FLOAT32 = 4

CONTROLS: dict[str, list] = {
    "image_size": [32, 64, 128, 224, 384, 448, 512],
    "patch_size": [8, 14, 16, 32],
    "dim": [192, 384, 768, 1024, 1280],
    "depth": [6, 12, 24, 32],
    "heads": [3, 6, 12, 16],
}

# The website's kernel-free player: ViT-B's depth and heads, image size × patch size × three widths (18 frames).
SITE_CONTROLS: dict[str, list] = {
    "image_size": [224, 448],
    "patch_size": [8, 16, 32],
    "dim": [192, 768],
}

# Where the live widget starts: ViT-B/16 at 224×224.
START = {"image_size": 224, "patch_size": 16, "dim": 768, "depth": 12, "heads": 12}

FLOP_PARTS = ("patch embedding", "projections", "attention", "MLP", "head")
COLORS = ["#999999", "#4c72b0", "#dd8452", "#55a868", "#8172b2"]
PARAM_PARTS = ("patch embedding", "position + CLS", "attention", "MLP", "LayerNorms", "head")
FIGSIZE = (6.4, 2.4)  # inches, valid and invalid frames alike


def invalid_reason(image_size: int, patch_size: int, dim: int, heads: int) -> str | None:
    """Why this combination cannot be a ViT, or ``None`` if it can."""
    reasons = []
    if image_size % patch_size:
        reasons.append(
            f"image size {image_size} is not divisible by patch size {patch_size} "
            f"({image_size} / {patch_size} = {image_size / patch_size:.2f}): the patches would not tile the image"
        )
    if dim % heads:
        reasons.append(
            f"D = {dim} is not divisible by {heads} heads ({dim} / {heads} = {dim / heads:.2f}): "
            f"each head needs D / h features"
        )
    return "; ".join(reasons) or None


def vit_parameters(
    image_size: int,
    patch_size: int,
    dim: int,
    depth: int,
    *,
    mlp_ratio: int = 4,
    num_classes: int = 1000,
    in_channels: int = IN_CHANNELS,
    cls_token: bool = True,
) -> dict[str, int]:
    """Parameters by part for a Pre-LN ViT with learned position embeddings and a QKV bias.

    Keys: ``PARAM_PARTS`` (``"attention"``, ``"MLP"`` and ``"LayerNorms"`` summed over all layers) and
    ``"total"``. The number of heads does not change any count: the heads split D, they do not add to it.
    """
    n = (image_size // patch_size) ** 2
    s = n + int(cls_token)
    hidden = mlp_ratio * dim
    parts = {
        "patch embedding": in_channels * patch_size**2 * dim + dim,  # Conv2d(C, D, P, stride=P): weight + bias
        "position + CLS": s * dim + (dim if cls_token else 0),
        "attention": depth * (3 * dim * dim + 3 * dim + dim * dim + dim),  # qkv Linear(D, 3D) + out Linear(D, D)
        "MLP": depth * (dim * hidden + hidden + hidden * dim + dim),  # Linear(D, rD) + Linear(rD, D)
        "LayerNorms": depth * 2 * (2 * dim) + 2 * dim,  # two per block (scale + shift) + the final one
        "head": dim * num_classes + num_classes,
    }
    parts["total"] = sum(parts.values())
    return parts


def layer_macs(seq_len: int, dim: int, *, mlp_ratio: int = 4) -> dict[str, int]:
    """Multiply-adds of ONE encoder layer for ``seq_len`` tokens: projections, attention, MLP."""
    s, d = seq_len, dim
    return {
        "projections": 4 * s * d * d,  # Q, K, V: 3·S·D² ; output projection: S·D²
        "attention": 2 * s * s * d,  # QKᵀ: h·S²·(D/h) ; weights × V: the same again
        "MLP": 2 * mlp_ratio * s * d * d,  # S·D·rD + S·rD·D
    }


def vit_macs(
    image_size: int,
    patch_size: int,
    dim: int,
    depth: int,
    *,
    mlp_ratio: int = 4,
    num_classes: int = 1000,
    in_channels: int = IN_CHANNELS,
    cls_token: bool = True,
) -> dict[str, int]:
    """Multiply-adds per image by part (``FLOP_PARTS``, encoder parts summed over layers) and ``"total"``."""
    n = (image_size // patch_size) ** 2
    s = n + int(cls_token)
    per_layer = layer_macs(s, dim, mlp_ratio=mlp_ratio)
    parts = {"patch embedding": n * in_channels * patch_size**2 * dim}
    parts.update({name: depth * value for name, value in per_layer.items()})
    parts["head"] = dim * num_classes  # only one vector (CLS or the mean) reaches the head
    parts["total"] = sum(parts.values())
    return parts


def vit_costs(
    image_size: int,
    patch_size: int,
    dim: int,
    depth: int,
    heads: int,
    *,
    mlp_ratio: int = 4,
    num_classes: int = 1000,
    in_channels: int = IN_CHANNELS,
) -> dict:
    """Everything the calculator shows for a CLS-token ViT; raises ``ValueError`` for an impossible combination.

    Returns a dict with ``num_patches`` (N), ``seq_len`` (S = N + 1), ``head_dim``, ``attention_weights_per_head``
    (S²), ``params`` and ``macs`` (dicts by part, see :func:`vit_parameters` and :func:`vit_macs`) and
    ``attention_bytes``: the float32 attention weights of one layer, all heads, batch 1 (h·S²·4 bytes).
    """
    reason = invalid_reason(image_size, patch_size, dim, heads)
    if reason:
        raise ValueError(reason)
    n = (image_size // patch_size) ** 2
    s = n + 1
    kwargs = dict(mlp_ratio=mlp_ratio, num_classes=num_classes, in_channels=in_channels)
    return {
        "num_patches": n,
        "seq_len": s,
        "head_dim": dim // heads,
        "attention_weights_per_head": s * s,
        "params": vit_parameters(image_size, patch_size, dim, depth, **kwargs),
        "macs": vit_macs(image_size, patch_size, dim, depth, **kwargs),
        "attention_bytes": heads * s * s * BYTES_FLOAT32,
    }


def format_bytes(n: int) -> str:
    """``1_862_832`` -> ``"1.8 MiB"`` (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_macs(n: int) -> str:
    """Multiply-adds with a unit chosen for readability: ``17_561_223_168`` -> ``"17.56 G"``."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return str(n)


def cost_calculator_view(
    image_size: int = 224, patch_size: int = 16, dim: int = 768, depth: int = 12, heads: int = 12
) -> tuple[Figure, str]:
    """A bar plot of where the multiply-adds go, and a caption with N, S, parameters and attention memory.

    An impossible combination gives a figure and caption that say why, instead of an exception.
    """
    reason = invalid_reason(image_size, patch_size, dim, heads)
    if reason:
        # Same size as a valid frame, so the widget does not jump in height when a control makes it invalid.
        fig = plt.figure(figsize=FIGSIZE)
        fig.text(0.03, 0.5, "Not a valid ViT:\n" + reason.replace(": ", ":\n  ").replace("; ", "\n"),
                 va="center", ha="left", fontsize=9, wrap=True)
        return fig, f"<b>Not a valid ViT.</b> {html.escape(reason)}."
    c = vit_costs(image_size, patch_size, dim, depth, heads)
    macs, params = c["macs"], c["params"]
    total = macs["total"]
    shares = [100 * macs[name] / total for name in FLOP_PARTS]
    fig, ax = plt.subplots(figsize=FIGSIZE)
    fig.subplots_adjust(left=0.2, right=0.97, top=0.8, bottom=0.2)
    ys = range(len(FLOP_PARTS))
    ax.barh(ys, shares, color=COLORS)
    ax.set_yticks(list(ys), FLOP_PARTS)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)  # fixed, so the bars keep their scale when a control moves
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("% of the multiply-adds per image")
    for y, share, name in zip(ys, shares, FLOP_PARTS):
        inside = share > 60
        ax.text(share - 1 if inside else share + 1, y, f"{share:.1f}% = {format_macs(macs[name])}",
                va="center", ha="right" if inside else "left", fontsize=8, color="white" if inside else "black")
    ax.set_title(
        f"{image_size}×{image_size}, P={patch_size} → S={c['seq_len']:,};  D={dim}, depth {depth}, {heads} heads\n"
        f"{format_macs(total)} multiply-adds,  {params['total'] / 1e6:.1f} M parameters,  "
        f"attention weights {format_bytes(c['attention_bytes'])} per layer",
        fontsize=9,
    )
    caption = (
        f"N = ({image_size}/{patch_size})² = {c['num_patches']:,} patches, S = {c['seq_len']:,} tokens; "
        f"{params['total']:,} parameters; {total:,} multiply-adds per image "
        f"(projections {100 * macs['projections'] / total:.1f}%, "
        f"attention {100 * macs['attention'] / total:.1f}%, "
        f"MLP {100 * macs['MLP'] / total:.1f}%); "
        f"attention weights of one layer, {heads} heads × {c['seq_len']:,}² float32 values: "
        f"{format_bytes(c['attention_bytes'])}."
    )
    return fig, caption
