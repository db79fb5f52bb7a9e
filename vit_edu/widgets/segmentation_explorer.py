"""Chapter 18's widget: the mask as the patch size and the head change. Pick a test scene, patches of 4 or 8 and the
naive or the progressive (PUP) head, and see the scene, its true mask and the shipped model's predicted mask.

The four models are seed 0's of the chapter's experiment (``vit_edu/checkpoints/segmentation.pt``, trained by
:mod:`vit_edu.tasks.segmentation_train`). The caption gives the scene's IoU, the mean over the classes that appear in
the true mask or in the prediction, each class's IoU from torchmetrics' Jaccard index on this one scene.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from vit_edu.data.scenes import Scenes, scene_split
from vit_edu.tasks.segmentation import NUM_CLASSES, SEGMENT_NAMES, jaccard, predict
from vit_edu.training import CHECKPOINTS
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "segmentation.pt"
HEADS = {"naive": "naive", "progressive (PUP)": "pup"}  # the control's values -> the heads' names
ARM = {(8, "naive"): "base", (8, "pup"): "pup", (4, "naive"): "P4", (4, "pup"): "P4 pup"}  # the shipped models
SCENES = (1, 2, 9, 13, 15, 19)  # test scenes (seed 0) of two to four shapes; the first four hold all four classes
COLOURS = ListedColormap(["#3b3b3b", "tab:blue", "tab:orange", "tab:green", "tab:red"])  # background, 4 classes
CONTROLS: dict[str, list] = {"scene": list(SCENES), "patch_size": [4, 8], "head": list(HEADS)}
# The website's player: four scenes × both patch sizes × both heads = 16 frames.
SITE_CONTROLS: dict[str, list] = {"scene": list(SCENES[:4]), "patch_size": [4, 8], "head": list(HEADS)}
START = {"scene": SCENES[0], "patch_size": 8, "head": "naive"}


@lru_cache(maxsize=1)
def shipped_models() -> dict:
    """The four seed-0 segmenters by arm name, loaded once."""
    from vit_edu.tasks.segmentation_train import load_models

    return load_models(CHECKPOINT)


@lru_cache(maxsize=1)
def scene_pool() -> Scenes:
    """The test scenes of seed 0 up to the last one the widget offers."""
    return scene_split("test")[: max(SCENES) + 1]


@lru_cache(maxsize=1)
def predictions() -> dict[str, torch.Tensor]:
    """Each shipped model's masks ``(len(SCENES), H, W)`` for the offered scenes: one batch per model, computed once."""
    images = scene_pool().images[list(SCENES)]  # (S, 3, H, W)
    return {name: predict(model, images) for name, model in shipped_models().items()}


def scene_view(scene: int, patch_size: int, head: str) -> dict:
    """What the view draws, as numbers: the image, the true and predicted masks, each class's IoU and the scene's."""
    scenes = scene_pool()
    image, truth = scenes.images[scene], scenes.semantic[scene]  # (3, H, W), (H, W)
    pred = predictions()[ARM[patch_size, HEADS[head]]][SCENES.index(scene)]  # (H, W)
    per_class = jaccard(pred[None], truth[None])  # (K,): 0 for a class in neither mask
    present = sorted(set(truth.unique().tolist()) | set(pred.unique().tolist()))
    return {"image": image, "truth": truth, "pred": pred, "present": present,
            "iou": {SEGMENT_NAMES[k]: float(per_class[k]) for k in present},
            "scene_iou": float(per_class[present].mean()), "wrong": int((pred != truth).sum())}


def _problem(scene: object, patch_size: object, head: object) -> str | None:
    if scene not in SCENES:
        return f"scene must be one of {list(SCENES)}; got {scene!r}."
    if patch_size not in CONTROLS["patch_size"]:
        return f"patch size must be 4 or 8; got {patch_size!r}."
    if head not in HEADS:
        return f"head must be one of {', '.join(HEADS)}; got {head!r}."
    if not CHECKPOINT.exists():
        return f"the shipped models {CHECKPOINT.name} are missing: run python -m vit_edu.tasks.segmentation_train."
    return None


def segmentation_explorer_view(scene: int = SCENES[0], patch_size: int = 8, head: str = "naive") -> tuple[Figure, str]:
    """Three panels: the scene, its true mask, the predicted mask; the patch grid drawn on the prediction."""
    problem = _problem(scene, patch_size, head)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.2))
    v = scene_view(scene, patch_size, head)
    fig, axes = plt.subplots(1, 3, figsize=(7.2, 2.75))
    axes[0].imshow(v["image"].permute(1, 2, 0).numpy(), interpolation="nearest")
    for ax, mask in ((axes[1], v["truth"]), (axes[2], v["pred"])):
        ax.imshow(mask.numpy(), cmap=COLOURS, vmin=0, vmax=NUM_CLASSES - 1, interpolation="nearest")
    size = v["truth"].shape[-1]
    for t in range(patch_size, size, patch_size):  # the patch grid: where each token's square ends
        axes[2].axhline(t - 0.5, color="white", lw=0.5, alpha=0.6)
        axes[2].axvline(t - 0.5, color="white", lw=0.5, alpha=0.6)
    for ax, title in zip(axes, ("scene", "true mask", f"predicted: P = {patch_size}, {head}")):
        ax.set_title(title, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    legend = [Patch(color=COLOURS(k), label=name) for k, name in enumerate(SEGMENT_NAMES)]
    fig.legend(handles=legend, loc="lower center", ncol=NUM_CLASSES, fontsize=7, frameon=False)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.12, wspace=0.05)
    tokens = (size // patch_size) ** 2
    caption = (f"Scene {scene}, patches of {patch_size} ({tokens} tokens), {head} head: "
               f"IoU <b>{v['scene_iou']:.2f}</b>, "
               f"the mean over the {len(v['present'])} classes in the true or the predicted mask; "
               f"{v['wrong']} of {size * size} pixels wrong.")
    return fig, caption
