"""Chapter 6's widget: pick a layer, a head and a query token; see where that query's weights go.

The model is a small *untrained* ViT (96×96 image, 16×16 patches → 6×6 = 36 patches + CLS = 37 tokens,
4 blocks, 4 heads), built from a fixed seed. With the default Xavier initialisation its attention maps are
almost uniform, so the query/key/value projection weights are multiplied by ``QKV_SCALE``: the maps then show
structure, but it is the structure of random weights acting on one photo, not anything learned.
The maps are computed once and cached. Layers (blocks) are numbered from 1, as the book numbers blocks; heads
and tokens from 0, as the code indexes them.
"""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.book.plotting import to_hwc
from vit_edu.config import ViTConfig
from vit_edu.data import sample_photo
from vit_edu.model import VisionTransformer
from vit_edu.widgets.frames import problem_frame

IMAGE_SIZE = 96
PATCH_SIZE = 16
DEPTH = 4
HEADS = 4
SEED = 0
QKV_SCALE = 3.0  # 1.0 leaves the maps almost flat (entropy close to the uniform ln 37)
CONFIG = ViTConfig(
    image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, embed_dim=64, depth=DEPTH, num_heads=HEADS, mlp_dim=128,
    num_classes=10,
)
GRID = CONFIG.grid_size[0]  # 6 patches a side
SEQ_LEN = CONFIG.seq_len  # 37 tokens, token 0 is CLS

CONTROLS: dict[str, list] = {
    "layer": list(range(1, DEPTH + 1)),
    "head": list(range(HEADS)),  # heads count from 0, as in the code (weights[:, 0] is head 0)
    "query": list(range(SEQ_LEN)),
}
# The website's player: first and last layer × 4 heads × 4 queries = 32 frames. Queries: CLS, the blue
# background (top right), face (row 2, column 2) and jacket (row 4, column 1); rows and columns count from 0.
SITE_CONTROLS: dict[str, list] = {"layer": [1, DEPTH], "head": list(range(HEADS)), "query": [0, 6, 15, 26]}


@functools.lru_cache(maxsize=1)
def image() -> torch.Tensor:
    """The photo the maps are computed on, ``(1, 3, 96, 96)``."""
    return sample_photo(IMAGE_SIZE)


@functools.lru_cache(maxsize=1)
def attention_maps() -> torch.Tensor:
    """Every block's weights for :func:`image`, ``(DEPTH, HEADS, SEQ_LEN, SEQ_LEN)``; row i is query token i."""
    with torch.random.fork_rng():
        torch.manual_seed(SEED)
        model = VisionTransformer(CONFIG).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight.mul_(QKV_SCALE)
        _, maps = model(image(), return_attention=True)  # DEPTH tensors of (1, HEADS, S, S)
    return torch.stack([m[0] for m in maps])


def token_name(query: int) -> str:
    """``"CLS (token 0)"`` or ``"patch token 15 (row 2, column 2)"``; rows and columns count from 0."""
    if query == 0:
        return "CLS (token 0)"
    row, col = divmod(query - 1, GRID)
    return f"patch token {query} (row {row}, column {col})"


def _problem(layer: object, head: object, query: object) -> str | None:
    for name, value, low, high in (("layer", layer, 1, DEPTH), ("head", head, 0, HEADS - 1), ("query", query, 0, SEQ_LEN - 1)):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be a whole number, got {value!r}."
        if not low <= value <= high:
            what = {
                "layer": f"this model has {DEPTH} blocks, numbered 1 to {DEPTH}",
                "head": f"each block has {HEADS} heads, numbered 0 to {HEADS - 1}",
                "query": f"the sequence has {SEQ_LEN} tokens: 0 is CLS, 1 to {SEQ_LEN - 1} are the {GRID}×{GRID} patches",
            }[name]
            return f"{name} = {value} is out of range: {what}."
    return None


def attention_inspector_view(layer: int = 1, head: int = 0, query: int = 0) -> tuple[Figure, str]:
    """Left: the query's weights over the 6×6 patch grid, over the photo. Right: the head's full S×S matrix."""
    problem = _problem(layer, head, query)
    if problem is not None:
        return problem_frame(problem)
    weights = attention_maps()[layer - 1, head]  # (S, S); layers count from 1 (as blocks do), heads from 0
    row = weights[query]  # (S,): how much of each token's value the query takes
    patch_map = row[1:].reshape(GRID, GRID)  # keys 1..36 in row-major patch order; key 0 (CLS) is left out

    fig, (ax_img, ax_mat) = plt.subplots(1, 2, figsize=(7.5, 3.6))
    ax_img.imshow(to_hwc(image()))
    ax_img.imshow(
        patch_map.numpy(), cmap="inferno", alpha=0.6, vmin=0, vmax=float(patch_map.max()),
        extent=(-0.5, IMAGE_SIZE - 0.5, IMAGE_SIZE - 0.5, -0.5), interpolation="nearest",
    )
    if query > 0:
        r, c = divmod(query - 1, GRID)
        ax_img.add_patch(Rectangle((c * PATCH_SIZE - 0.5, r * PATCH_SIZE - 0.5), PATCH_SIZE, PATCH_SIZE,
                                   fill=False, edgecolor="cyan", linewidth=2))
    ax_img.set_xticks([])
    ax_img.set_yticks([])
    ax_img.set_title(f"query: {token_name(query)}", fontsize=9)

    ax_mat.imshow(weights.numpy(), cmap="viridis", vmin=0, vmax=float(weights.max()))
    ax_mat.add_patch(Rectangle((-0.5, query - 0.5), SEQ_LEN, 1, fill=False, edgecolor="red", linewidth=1.5))
    ticks = [0, 12, 24, 36] if SEQ_LEN == 37 else [0, SEQ_LEN - 1]
    ax_mat.set_xticks(ticks)
    ax_mat.set_yticks(ticks)
    ax_mat.set_xlabel("key token (0 = CLS)")
    ax_mat.set_ylabel("query token (0 = CLS)")
    ax_mat.set_title(f"layer {layer}, head {head}: all {SEQ_LEN}×{SEQ_LEN} weights", fontsize=9)
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.14, top=0.9, wspace=0.25)

    top = int(row.argmax())
    caption = (
        f"Layer {layer}, head {head}, query {token_name(query)}. Its row of weights sums to "
        f"{float(row.sum()):.4f}; the weight on CLS is {float(row[0]):.4f} (not drawn on the photo, whose "
        f"colours go from 0 to this row's largest patch weight, {float(patch_map.max()):.4f}); the largest weight "
        f"overall, <b>{float(row.max()):.4f}</b>, goes to {token_name(top)}. Random weights (seeded): a pattern of "
        f"this untrained model, not a learned one."
    )
    return fig, caption
