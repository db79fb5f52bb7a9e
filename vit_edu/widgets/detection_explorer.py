"""Chapter 19's widget: pick a detector (DETR or YOLOS), a test scene and one of its 8 queries, and see that query's
box, class and score on the image, and where it attends over the 4×4 patch grid.

Two panels: the scene with its true boxes (white, dashed) and the query's box (solid, labelled with its class and
score); and the query's attention over the patches (DETR: the last decoder layer's cross-attention; YOLOS: the last
block's attention from the detection token to the patch tokens; both the mean of the heads). The models are the
shipped seed-0 detectors of ``vit_edu/checkpoints/detection_{detr,yolos}.pt``.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torchvision.ops import box_iou

from vit_edu.data import CLASS_NAMES
from vit_edu.data.scenes import scene_split
from vit_edu.tasks.detection_train import NUM_QUERIES, load_detector
from vit_edu.training import CHECKPOINTS
from vit_edu.widgets.frames import problem_frame

MODELS = {"DETR": "detr", "YOLOS": "yolos"}  # the control's value -> the training script's arm
SCENES = (0, 1, 2, 3, 4, 5)  # indices of test scenes (seed 0) that the widget offers
CONTROLS: dict[str, list] = {"model": list(MODELS), "scene": list(SCENES), "query": list(range(NUM_QUERIES))}
# The website's player: both detectors, two scenes, every query: 2 · 2 · 8 = 32 frames.
SITE_CONTROLS: dict[str, list] = {"model": list(MODELS), "scene": [0, 1], "query": list(range(NUM_QUERIES))}
START = {"model": "DETR", "scene": 0, "query": 0}
GRID = 4  # the 4×4 patch grid of 8-pixel patches on a 32-pixel scene
PATCH = 8


@lru_cache(maxsize=1)
def offered_scenes():
    """The first test scenes of seed 0, as :class:`~vit_edu.data.scenes.Scenes`."""
    return scene_split("test", size=max(SCENES) + 1, seed=0)


@lru_cache(maxsize=2)
def detector_outputs(model: str) -> dict[str, torch.Tensor]:
    """The shipped detector's answers on the offered scenes: probabilities ``(S, Q, K+1)``, boxes in pixels
    ``(S, Q, 4)`` xyxy, attention ``(S, Q, 16)``."""
    arm = MODELS[model]
    net = load_detector(arm, CHECKPOINTS / f"detection_{arm}.pt")
    images = offered_scenes().images  # (S, 3, 32, 32)
    with torch.no_grad():
        out = net(images, need_weights=True)
    boxes = torch.cat([out["boxes"][..., :2] - out["boxes"][..., 2:] / 2,
                       out["boxes"][..., :2] + out["boxes"][..., 2:] / 2], -1) * images.shape[-1]
    return {"prob": out["logits"].softmax(-1), "boxes": boxes, "attention": out["attention"]}


def query_view(model: str, scene: int, query: int) -> dict:
    """Everything the view draws and says, as numbers: class, score, p(no object), box, best IoU with a true object
    of that class, the attention grid ``(4, 4)`` and its peak."""
    out = detector_outputs(model)
    prob = out["prob"][scene, query]  # (K+1,)
    score, label = prob[:-1].max(0)
    box = out["boxes"][scene, query]  # (4,)
    scenes = offered_scenes()
    true_boxes, true_labels = scenes.boxes[scene], scenes.labels[scene]
    same = true_labels == label
    best_iou = float(box_iou(box[None], true_boxes[same]).max()) if bool(same.any()) else 0.0
    grid = out["attention"][scene, query].reshape(GRID, GRID)
    peak = int(grid.argmax())
    return {"label": int(label), "score": float(score), "no_object": float(prob[-1]), "box": box,
            "best_iou": best_iou, "grid": grid, "peak": divmod(peak, GRID),
            "share": float(grid.max() / grid.sum()), "objects": len(true_labels)}


def _problem(model: object, scene: object, query: object) -> str | None:
    if model not in MODELS:
        return f"model must be one of {', '.join(MODELS)}; got {model!r}."
    if scene not in SCENES:
        return f"scene must be one of {list(SCENES)}; got {scene!r}."
    if query not in CONTROLS["query"]:
        return f"query must be a whole number from 0 to {NUM_QUERIES - 1}; got {query!r}."
    missing = [f"detection_{arm}.pt" for arm in MODELS.values() if not (CHECKPOINTS / f"detection_{arm}.pt").exists()]
    if missing:
        return f"the shipped detector {missing[0]} is missing: run python -m vit_edu.tasks.detection_train."
    return None


def detection_explorer_view(model: str, scene: int, query: int) -> tuple[Figure, str]:
    """The scene with the query's box, and the query's attention over the patch grid; the caption gives the numbers."""
    problem = _problem(model, scene, query)
    if problem is not None:
        return problem_frame(problem)
    v = query_view(model, scene, query)
    scenes = offered_scenes()
    fig = Figure(figsize=(6.4, 3.2))
    ax, ax_att = fig.subplots(1, 2)
    ax.imshow(scenes.images[scene].permute(1, 2, 0).numpy(), interpolation="nearest", extent=(0, 32, 32, 0))
    for b in scenes.boxes[scene].tolist():
        ax.add_patch(Rectangle((b[0], b[1]), b[2] - b[0], b[3] - b[1], fill=False, ec="white", ls="--", lw=1))
    x0, y0, x1, y1 = v["box"].tolist()
    colour = "red" if v["score"] > v["no_object"] else "orange"
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=colour, lw=2))
    ax.text(x0, y0 - 0.6, f"{CLASS_NAMES[v['label']]} {v['score']:.2f}", color=colour, fontsize=8)
    ax.set(xlim=(0, 32), ylim=(32, 0), xticks=[], yticks=[])
    ax.set_title(f"{model}, scene {scene}, query {query}", fontsize=9)
    ax_att.imshow(v["grid"].numpy(), cmap="magma", vmin=0, interpolation="nearest", extent=(0, 32, 32, 0))
    centre = ((x0 + x1) / 2, (y0 + y1) / 2)
    ax_att.plot(*centre, marker="+", color="cyan", ms=10, mew=2)
    for t in range(1, GRID):
        ax_att.axhline(t * PATCH, color="white", lw=0.4)
        ax_att.axvline(t * PATCH, color="white", lw=0.4)
    ax_att.set(xlim=(0, 32), ylim=(32, 0), xticks=[], yticks=[])
    ax_att.set_title("its attention over the 4×4 patches (+: box centre)", fontsize=8)
    fig.tight_layout()
    row, col = v["peak"]
    name = CLASS_NAMES[v["label"]]
    caption = (f"{model}, query {query} on scene {scene} (objects in the scene: {v['objects']}): <b>{name}</b> "
               f"{v['score']:.2f}, no object {v['no_object']:.2f}; box ({x0:.0f}, {y0:.0f})–({x1:.0f}, {y1:.0f}) px, "
               f"best IoU with a true {name} <b>{v['best_iou']:.2f}</b>. Its attention peaks on the patch at row "
               f"{row}, column {col}, which holds {100 * v['share']:.0f}% of the weight it gives the 16 patches.")
    return fig, caption

