"""Chapter 17's widget: pick a test image of a colour–shape combination seen in training or held out of it, and a
prompt set (shape, colour or the 16 combinations), and see what the shipped tiny CLIP says about the image.

Two panels: the image with its full caption, and the softmax probabilities over the prompt set's classes
(:func:`vit_edu.variants.clip.zero_shot_probs`): green the true class, red the model's choice when it is wrong.
The model is the first seed of ``vit_edu/checkpoints/tiny_clip.pt``; the images are the first test images of
that seed's own test sets (those its record in ``tiny_clip.json`` was measured on).
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vit_edu.training import CHECKPOINTS
from vit_edu.variants import clip_train
from vit_edu.variants.clip import prompts as task_prompts
from vit_edu.variants.clip import (
    COLOURS,
    SHAPES,
    SIDES,
    SIZES,
    CaptionedShapes,
    TinyCLIP,
    caption,
    class_embeddings,
    make_captioned_shapes,
    task_labels,
    zero_shot_probs,
)
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "tiny_clip.pt"
GROUPS = ("seen in training", "held out")
TASKS = clip_train.TASKS  # ("shape", "colour", "combination")
IMAGES = 8  # the first test images of each group
CONTROLS: dict[str, list] = {
    "combinations": list(GROUPS),
    "image": list(range(IMAGES)),
    "prompts": list(TASKS),
}
# The website's player: both groups, three images (the model gets seen image 1 and held-out images 4 and 5 partly
# wrong), all three prompt sets: 2 × 3 × 3 = 18 frames.
SITE_CONTROLS: dict[str, list] = {"combinations": list(GROUPS), "image": [1, 4, 5], "prompts": list(TASKS)}
START = {"combinations": GROUPS[1], "image": 4, "prompts": "combination"}


@lru_cache(maxsize=1)
def shipped_clip() -> tuple[TinyCLIP, dict]:
    """The trained tiny CLIP (seed 0 of chapter 17's run) and its record, loaded once."""
    return clip_train.load_model(CHECKPOINT)


@lru_cache(maxsize=2)
def widget_images(combinations: str) -> CaptionedShapes:
    """The first IMAGES test images of the shipped seed's test set for ``combinations`` (seen or held out)."""
    seed = shipped_clip()[1]["seed"]
    held = combinations == GROUPS[1]
    data = make_captioned_shapes(clip_train.TEST_SIZE, seed=3 * seed + (3 if held else 2),
                                 combos=clip_train.HELD_OUT if held else clip_train.SEEN)
    return CaptionedShapes(*(t[:IMAGES].clone() for t in (data.images, data.shapes, data.colours, data.sizes,
                                                          data.sides)))


@lru_cache(maxsize=len(TASKS))
def _classes(task: str) -> torch.Tensor:
    return class_embeddings(shipped_clip()[0], task_prompts(task)[1])


def zero_shot_view(combinations: str, image: int, prompts: str) -> dict:
    """Everything the view draws, as numbers: the image, its caption, the class names, probabilities and choices."""
    model, _ = shipped_clip()
    data = widget_images(combinations)
    names, sets = task_prompts(prompts)
    probs = zero_shot_probs(model, data.images[image:image + 1], _classes(prompts))[0]  # (K,)
    label = int(task_labels(data, prompts)[image])
    top = int(probs.argmax())
    colour, shape = COLOURS[data.colours[image]], SHAPES[data.shapes[image]]
    return {"image": data.images[image], "names": names, "prompt_sets": sets, "probs": probs, "label": label,
            "top": top, "combination": f"{colour} {shape}",
            "caption": caption(shape, colour, SIZES[data.sizes[image]], SIDES[data.sides[image]])}


def _problem(combinations: object, image: object, prompts: object) -> str | None:
    if combinations not in GROUPS:
        return f"combinations must be one of {', '.join(repr(g) for g in GROUPS)}; got {combinations!r}."
    if image not in CONTROLS["image"] or isinstance(image, bool):
        return f"image must be a whole number from 0 to {IMAGES - 1}; got {image!r}."
    if prompts not in TASKS:
        return f"prompts must be one of {', '.join(TASKS)}; got {prompts!r}."
    if not CHECKPOINT.exists():
        return f"the trained tiny CLIP {CHECKPOINT.name} is missing: run python -m vit_edu.variants.clip_train."
    return None


def clip_explorer_view(combinations: str = GROUPS[1], image: int = 0, prompts: str = "combination"
                       ) -> tuple[Figure, str]:
    """The test image and the shipped tiny CLIP's zero-shot probabilities over the chosen prompt set's classes."""
    problem = _problem(combinations, image, prompts)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.2))
    v = zero_shot_view(combinations, image, prompts)
    probs, names, k = v["probs"].numpy(), v["names"], len(v["names"])
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.9 if k <= 4 else 4.2), width_ratios=[1, 1.6])
    axes[0].imshow(v["image"].permute(1, 2, 0).numpy(), interpolation="nearest")
    axes[0].set_title(f"{combinations}, image {image}\n\"{v['caption']}\"", fontsize=8)
    axes[0].set_xticks([])
    axes[0].set_yticks([])
    colours = ["tab:green" if i == v["label"] else "tab:red" if i == v["top"] else "0.7" for i in range(k)]
    axes[1].barh(range(k), probs, color=colours)
    axes[1].set_yticks(range(k), names, fontsize=7 if k > 4 else 8)
    axes[1].invert_yaxis()  # the first class on top
    axes[1].axvline(1 / k, color="black", lw=0.8, ls=":")
    axes[1].set(xlim=(0, 1), xlabel="probability (softmax over the prompt set)")
    axes[1].set_title(f"{prompts} prompts: {k} classes (dotted: chance 1/{k})", fontsize=8)
    fig.tight_layout()
    right = v["top"] == v["label"]
    ensemble = (f"each class embedding is the mean of {len(v['prompt_sets'][0])} prompts' embeddings, e.g. "
                f"{', '.join(repr(p) for p in v['prompt_sets'][v['label']])}" if prompts != "combination" else
                f"one prompt per class, e.g. {v['prompt_sets'][v['label']][0]!r}")
    text = (
        f"{combinations.capitalize()}, test image {image}: \"{v['caption']}\". Prompts: {prompts} ({k} classes; "
        f"{ensemble}). The shipped tiny CLIP gives the true class <b>{names[v['label']]}</b> probability "
        f"<b>{probs[v['label']]:.2f}</b>; its top choice is <b>{names[v['top']]}</b>"
        + (" (right)." if right else f" ({probs[v['top']]:.2f}, wrong).")
        + (f" The combination {v['combination']} never appeared in training." if combinations == GROUPS[1] else "")
    )
    return fig, text
