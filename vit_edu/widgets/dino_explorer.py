"""Chapter 16's DINO widget: pick a test image, an encoder (DINO, supervised, MAE) and a head, and see where the
last layer's CLS token looks, with the object's outline and chapter 10's localisation score for that image.

Two panels: the image with the object outlined, and the CLS attention to the 16 patches laid over it. The three
encoders are the shipped ones of seed 0: the DINO teacher (``dino_shapes.pt``), the supervised ViT
(``shapes_vit.pt``) and the MAE encoder (``shapes_mae.pt``); each has 4 heads in its last layer.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain.localisation import localisation_score, object_fraction
from vit_edu.model import VisionTransformer
from vit_edu.training import CHECKPOINTS, load_checkpoint
from vit_edu.variants.dino import load_teacher
from vit_edu.variants.dino_train import last_cls_attention
from vit_edu.variants.mae import load_mae
from vit_edu.widgets.frames import problem_frame

FILES = {"DINO": CHECKPOINTS / "dino_shapes.pt", "supervised": CHECKPOINTS / "shapes_vit.pt",
         "MAE": CHECKPOINTS / "shapes_mae.pt"}
IMAGES = 6  # the first test images of seed 0
CONTROLS: dict[str, list] = {
    "image": list(range(IMAGES)),
    "model": list(FILES),
    "head": ["mean", 0, 1, 2, 3],
}
SITE_CONTROLS: dict[str, list] = {"image": [0, 1, 2], "model": list(FILES), "head": ["mean", 0]}
START = {"image": 0, "model": "DINO", "head": "mean"}


@lru_cache(maxsize=3)
def encoder(model: str) -> VisionTransformer:
    """The shipped encoder called ``model`` (eval mode), loaded once."""
    if model == "DINO":
        return load_teacher(FILES["DINO"])[0].backbone
    if model == "supervised":
        return load_checkpoint(FILES["supervised"])[0]
    return load_mae(FILES["MAE"])[0].encoder.eval()


@lru_cache(maxsize=1)
def test_images() -> tuple[torch.Tensor, torch.Tensor, tuple[str, ...]]:
    """``(IMAGES, 3, 32, 32)`` images, ``(IMAGES, 32, 32)`` object masks and class names (test split, seed 0)."""
    data = ShapesDataset("test", seed=0)
    return (data.images[:IMAGES].clone(), data.masks[:IMAGES].clone(),
            tuple(CLASS_NAMES[i] for i in data.labels[:IMAGES]))


@torch.no_grad()
def cls_map(image: int, model: str, head: str | int) -> dict:
    """The last layer's CLS attention ``(gh, gw)`` (one head, or the mean of the heads) and its localisation score."""
    net = encoder(model)
    images, masks, _ = test_images()
    weights = last_cls_attention(net, images[image:image + 1])[0]  # (h, N)
    chosen = weights.mean(0) if head == "mean" else weights[head]  # (N,)
    fraction = object_fraction(masks[image:image + 1], net.config.patch_size)  # (1, N)
    mass, base = localisation_score(chosen[None], fraction)
    return {"map": (chosen / chosen.sum()).reshape(net.config.grid_size), "mass": float(mass), "baseline": float(base),
            "heads": weights.shape[0], "patch": net.config.patch_size}


def _problem(image: object, model: object, head: object) -> str | None:
    if image not in CONTROLS["image"] or isinstance(image, bool):
        return f"image must be a whole number from 0 to {IMAGES - 1}; got {image!r}."
    if model not in CONTROLS["model"]:
        return f"model must be one of {CONTROLS['model']}; got {model!r}."
    if head not in CONTROLS["head"] or isinstance(head, bool):
        return f"head must be 'mean' or a head number from 0 to 3; got {head!r}."
    if not FILES[model].exists():
        return f"the shipped checkpoint {FILES[model].name} is missing: see the Makefile's checkpoints rule."
    return None


def dino_explorer_view(image: int = 0, model: str = "DINO", head: str | int = "mean") -> tuple[Figure, str]:
    """The image with its object outlined, and the chosen encoder's last-layer CLS attention over it."""
    problem = _problem(image, model, head)
    if problem is not None:
        return problem_frame(problem, figsize=(5, 2.0))
    v = cls_map(image, model, head)
    images, masks, names = test_images()
    picture = images[image].permute(1, 2, 0).numpy()
    size = picture.shape[0]
    upsampled = v["map"].repeat_interleave(v["patch"], 0).repeat_interleave(v["patch"], 1).numpy()  # (H, W)
    fig, axes = plt.subplots(1, 2, figsize=(4.6, 2.5))
    axes[0].imshow(picture, interpolation="nearest")
    axes[0].set_title(f"test image {image} ({names[image]})", fontsize=8)
    axes[1].imshow(picture, interpolation="nearest")
    axes[1].imshow(upsampled, cmap="magma", alpha=0.75, interpolation="nearest", vmin=0)
    which = f"mean of {v['heads']} heads" if head == "mean" else f"head {head}"
    axes[1].set_title(f"{model}: CLS attention, {which}", fontsize=8)
    for ax in axes:
        ax.contour(masks[image].float().numpy(), levels=[0.5], colors="cyan", linewidths=0.8)
        ax.set_xlim(-0.5, size - 0.5)
        ax.set_ylim(size - 0.5, -0.5)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.88, wspace=0.06)
    ratio = v["mass"] / v["baseline"]
    caption = (
        f"{model} encoder, last layer, {which}: <b>{100 * v['mass']:.0f}%</b> of the CLS token's attention to the "
        f"patches lands on the object (outlined), which covers {100 * v['baseline']:.0f}% of the image; "
        f"localisation score <b>{ratio:.2f}</b> (1 = a map that ignores the object). Brighter patches get more "
        f"attention. One image and one head are anecdotes; the chapter's numbers average 1000 test images."
    )
    return fig, caption
