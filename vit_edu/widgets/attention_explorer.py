"""Chapter 10's widget: where the trained shapes ViT's CLS token puts its attention, and how much lands on the object.

The model is the shipped checkpoint ``vit_edu/checkpoints/shapes_vit.pt`` (32×32 images, 8×8 patches → a 4×4
grid, CLS pooling, 4 layers × 4 heads), shown on a handful of images of the test split ``ShapesDataset("test",
seed=0)``. Pick a layer (numbered from 1, or ``"rollout"``), a head (numbered from 0, as the code indexes them and
as chapters 5 and 6 number them; or a fusion of the heads: ``"mean"``, ``"max"``, ``"min"``) and, for rollout, a
discard ratio. The view draws the map over the image, upsampled with nearest-neighbour (each
patch's weight fills its 8×8 square), with the object's outline, and its caption states the map's localisation
score from :func:`vit_edu.explain.localisation_score`. Every number comes from :mod:`vit_edu.explain`; the model,
the images and their attention maps are computed once and cached.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vit_edu.book.plotting import to_hwc
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain import (HEAD_FUSIONS, attention_rollout, cls_attention, fuse_heads, localisation_score,
                             object_fraction)
from vit_edu.model import VisionTransformer
from vit_edu.training import CHECKPOINTS, load_checkpoint
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "shapes_vit.pt"
SEED = 0  # the checkpoint was trained with seed 0; its test split is ShapesDataset("test", seed=0)
DEPTH = 4  # the checkpoint's layers and heads (the tests check these against its config)
HEADS = 4
PATCH_SIZE = 8
GRID = 4  # 32 / 8 patches a side

# A handful of test images, one per class: menu label -> index in ShapesDataset("test", seed=0).
IMAGES: dict[str, int] = {
    "test #4 (circle)": 4,
    "test #5 (square)": 5,
    "test #0 (triangle)": 0,
    "test #2 (cross)": 2,
}
ROLLOUT = "rollout"
# How a layer's heads are fused: the same three fusions attention_rollout applies to every layer.

CONTROLS: dict[str, list] = {
    "image": list(IMAGES),
    "layer": [*range(1, DEPTH + 1), ROLLOUT],
    "head": [*HEAD_FUSIONS, *range(HEADS)],  # heads from 0, as the code indexes them (chapters 5, 6 and 10)
    "discard": [0.0, 0.25, 0.5, 0.75, 0.9],
}
# The website's player: 3 images × (4 layers + rollout) × 2 head fusions = 30 frames (the notebook must execute in
# 30 s, the player's frames included). Every control shown there changes the picture in every frame (a fusion applies
# to one layer's heads and to rollout alike); single heads, the min fusion and the discard ratio are left to the
# notebook, whose figures show all 16 heads and every fusion.
SITE_CONTROLS: dict[str, list] = {
    "image": ["test #4 (circle)", "test #0 (triangle)", "test #2 (cross)"],  # the cross is the chapter's example
    "layer": [*range(1, DEPTH + 1), ROLLOUT],
    "head": ["mean", "max"],
}


@functools.lru_cache(maxsize=1)
def model() -> VisionTransformer:
    """The shipped checkpoint, in eval mode; loaded once."""
    net, _ = load_checkpoint(CHECKPOINT)
    return net


@dataclass(frozen=True)
class Sample:
    """The :data:`IMAGES`, in menu order, with everything the view needs."""

    images: torch.Tensor  # (n, 3, 32, 32) in [0, 1]
    labels: torch.Tensor  # (n,)
    masks: torch.Tensor  # (n, 32, 32) bool
    probs: torch.Tensor  # (n, K) the model's class probabilities
    attentions: list[torch.Tensor]  # DEPTH × (n, HEADS, S, S)
    fraction: torch.Tensor  # (n, N): the share of each patch the object covers


@functools.lru_cache(maxsize=1)
def sample() -> Sample:
    """The chosen test images, their masks, the model's predictions and attention maps (computed once)."""
    test = ShapesDataset("test", seed=SEED)
    index = torch.tensor(list(IMAGES.values()))
    images, labels, masks = test.images[index], test.labels[index], test.masks[index]
    with torch.no_grad():
        logits, attentions = model()(images, return_attention=True)
    return Sample(images, labels, masks, logits.softmax(-1), attentions, object_fraction(masks, PATCH_SIZE))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_of(value: object, options: list) -> bool:
    """``value`` is one of ``options`` with the same type (so 2.0 or True does not pass for 2)."""
    return any(type(value) is type(option) and value == option for option in options)


def _problem(image: object, layer: object, head: object, discard: object) -> str | None:
    if not _one_of(image, CONTROLS["image"]):
        return f"image {image!r} is not one of the {len(IMAGES)} test images on offer: {', '.join(IMAGES)}."
    if not _one_of(layer, CONTROLS["layer"]):
        return f"layer = {layer!r}: this model has {DEPTH} layers, numbered 1 to {DEPTH}, or choose {ROLLOUT!r}."
    if not _one_of(head, CONTROLS["head"]):
        return (f"head = {head!r}: each layer has {HEADS} heads, numbered 0 to {HEADS - 1}, or fuse them with one of "
                f"{', '.join(map(repr, HEAD_FUSIONS))}.")
    if not _is_number(discard) or not 0.0 <= discard < 1.0:
        return f"discard = {discard!r}: the discard ratio is a share of each row's weights, a number in [0, 1)."
    return None


def _what(layer: int | str, head: int | str, discard: float) -> tuple[str, str, str | None]:
    """(short title, description, note about a control that does not apply or None)."""
    if layer == ROLLOUT:
        fusion = head if head in HEAD_FUSIONS else "mean"
        title = f"rollout, {fusion}, discard {discard:g}"
        what = (f"Attention rollout over all {DEPTH} layers, heads fused by <i>{fusion}</i>, discard ratio "
                f"{discard:g}: row 0 (CLS) of the rolled-out matrix, patch columns only.")
        note = None
        if fusion != head:
            note = (f"Head {head} does not apply to rollout: rollout fuses the heads of every layer before "
                    f"multiplying the layers, and head {head} of one layer has no partner in the next. Shown: the "
                    f"<i>mean</i> fusion.")
        return title, what, note
    if head in HEAD_FUSIONS:
        title = f"layer {layer}, {head} of heads"
        what = (f"Layer {layer}, the <i>{head}</i> of its {HEADS} heads' CLS→patch weights (the same fusion that "
                f"rollout applies to the heads of every layer).")
    else:
        title = f"layer {layer}, head {head}"
        what = f"Layer {layer}, head {head}: the CLS query's weights on the {GRID * GRID} patch keys."
    note = None
    if discard:
        note = (f"The discard ratio ({discard:g}) applies to rollout only; a single layer's map is shown as the model "
                f"computed it.")
    return title, what, note


def explorer_map(image: str, layer: int | str, head: int | str, discard: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The map the view draws: ``(N,)`` weights on the patches, and the full ``(S,)`` row they come from.

    For a layer, the row is the CLS row of that layer's head (or of its fused heads); for rollout, row 0 of
    :func:`vit_edu.explain.attention_rollout`. The patch weights are the row without its CLS entry.
    """
    s = sample()
    i = list(IMAGES).index(image)
    maps = [a[i : i + 1] for a in s.attentions]  # DEPTH × (1, HEADS, S, S)
    if layer == ROLLOUT:
        fusion = head if head in HEAD_FUSIONS else "mean"
        row = attention_rollout(maps, fusion, discard)[0, 0]  # (S,)
        return row[1:], row

    def fuse(t: torch.Tensor) -> torch.Tensor:  # (HEADS, ...) -> (...): a fusion over the heads, or one head
        return fuse_heads(t, head, dim=0) if head in HEAD_FUSIONS else t[head]

    row = fuse(maps[layer - 1][0, :, 0])  # (S,): the CLS row of the chosen head(s), CLS column included
    weights = fuse(cls_attention(maps)[layer - 1, 0])  # (HEADS, N) -> (N,): the same row without its CLS entry
    return weights, row


def attention_explorer_view(
    image: str = "test #4 (circle)", layer: int | str = DEPTH, head: int | str = "mean", discard: float = 0.0
) -> tuple[Figure, str]:
    """Left: the test image with its object's outline. Right: the chosen CLS map over it (nearest upsampling)."""
    problem = _problem(image, layer, head, discard)
    if problem is not None:
        return problem_frame(problem)
    s = sample()
    i = list(IMAGES).index(image)
    weights, row = explorer_map(image, layer, head, discard)
    mass, baseline = (float(v) for v in localisation_score(weights[None], s.fraction[i : i + 1]))
    title, what, note = _what(layer, head, discard)
    label, pred = int(s.labels[i]), int(s.probs[i].argmax())
    mask = s.masks[i].float().numpy()
    extent = (-0.5, 31.5, 31.5, -0.5)

    fig, (ax_img, ax_map) = plt.subplots(1, 2, figsize=(5.6, 2.9))
    for ax in (ax_img, ax_map):
        ax.imshow(to_hwc(s.images[i]), interpolation="nearest")
    ax_map.imshow(weights.reshape(GRID, GRID).numpy(), cmap="inferno", alpha=0.7, vmin=0.0,
                  vmax=float(weights.max()), extent=extent, interpolation="nearest")
    for k in range(PATCH_SIZE, 32, PATCH_SIZE):  # the patch grid on the image (the map's blocks show it on the right)
        ax_img.axhline(k - 0.5, color="white", linewidth=0.4, alpha=0.5)
        ax_img.axvline(k - 0.5, color="white", linewidth=0.4, alpha=0.5)
    for ax in (ax_img, ax_map):
        ax.contour(mask, levels=[0.5], colors="cyan", linewidths=1.2)
        ax.set_xticks([])
        ax.set_yticks([])
    ax_img.set_title(image, fontsize=11)
    ax_map.set_title(title, fontsize=11)
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.03, top=0.9, wspace=0.05)

    kept = float(row[0])
    rest = (f"The row sums to {float(row.sum()):.4f}; {kept:.4f} of it is on CLS itself, not drawn and left out of "
            f"the score.")
    if layer != ROLLOUT and head in ("max", "min"):
        rest += f" (A {head} over heads is not a probability distribution, hence a sum other than 1.)"
    caption = (
        f"{what} <b>{mass:.4f}</b> of the map's patch weight lies on the object; the object covers {baseline:.4f} "
        f"of the image, which is what a map blind to the object would score (ratio {mass / baseline:.2f}). {rest} "
        f"Cyan: the object's outline. Label {CLASS_NAMES[label]}; the model predicts {CLASS_NAMES[pred]} "
        f"(p = {float(s.probs[i, pred]):.3f})."
    )
    if note:
        caption += f" <i>Note:</i> {note}"
    return fig, caption
