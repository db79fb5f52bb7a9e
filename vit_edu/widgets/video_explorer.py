"""Chapter 20's widget: attention over frames as the clip plays.

Pick a test clip, a frame, an attention kind (joint ST or divided T+S) and a token: the patch that holds the moving
shape in that frame, or the one that holds the still shape. Top strip: the clip's frames, the chosen token's patch
boxed in its frame. Bottom strip: where that token's last-block attention goes in every frame (mean of the heads,
one colour scale for the strip), with each frame's share above it. For ST that is the token's row of the
T·N × T·N weights. For T+S a token never attends to another frame's other places directly: its time attention
reaches its own place in every frame, then the space attention of its frame reaches the other places; the map is
the product of the two weights along each path (space weight to place m × place m's time weight to frame t), which
sums to 1 like an ST row. Residual connections and the MLP are left out of both maps. The models are seed 0 of
``vit_edu/checkpoints/video.pt``.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.data.clips import DIRECTIONS, clip_split
from vit_edu.tasks.video import VideoTransformer
from vit_edu.tasks.video_train import load_models
from vit_edu.training import CHECKPOINTS
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "video.pt"
CLIPS = 6  # the first test clips of seed 0
FRAMES = 8
PATCH, GRID = 8, 4  # the shipped models' patches: 32-pixel frames, a 4×4 grid
MIN_PIXELS = 4  # a patch "holds" a shape when the shape covers at least this many of its pixels
GAP = 2  # pixels between the frames of a strip
KINDS = ("ST", "T+S")
TOKENS = ("the moving shape", "the still shape")
BRIGHT = 0.55  # every channel above this: a shape's pixel (shapes ≥ 0.65, background ≤ 0.45, noise 0.03)
CONTROLS: dict[str, list] = {
    "clip": list(range(CLIPS)),
    "frame": list(range(FRAMES)),
    "attention": list(KINDS),
    "token": list(TOKENS),
}
# The website's player: two clips (0 moves left, 2 right), the first, two middle and the last frame, both
# attentions and both tokens: 2 · 4 · 2 · 2 = 32 frames.
SITE_CONTROLS: dict[str, list] = {"clip": [0, 2], "frame": [0, 3, 4, 7], "attention": list(KINDS),
                                  "token": list(TOKENS)}
START = {"clip": 0, "frame": 0, "attention": "ST", "token": TOKENS[0]}


@lru_cache(maxsize=1)
def shipped_models() -> dict[str, VideoTransformer]:
    """Seed 0's ST and T+S models, loaded once."""
    return load_models(CHECKPOINT)


@lru_cache(maxsize=1)
def widget_clips() -> tuple[torch.Tensor, torch.Tensor]:
    """The first CLIPS test clips of seed 0 ``(CLIPS, T, 3, H, W)`` and their labels."""
    return clip_split("test", size=CLIPS, seed=0)


def shape_pixels(clip: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per patch, how many pixels the moving shape covers in each frame ``(T, N)`` and the still shape ``(N,)``.

    A pixel is a shape's when every channel is bright; bright in every frame means the still shape, bright in this
    frame only the moving one.
    """
    bright = (clip > BRIGHT).all(dim=1)  # (T, H, W)
    still = bright.all(dim=0)  # (H, W)
    moving = bright & ~still  # (T, H, W)

    def per_patch(mask: torch.Tensor) -> torch.Tensor:  # (..., H, W) -> (..., N)
        counts = mask.float().unflatten(-2, (GRID, PATCH)).unflatten(-1, (GRID, PATCH)).sum(dim=(-3, -1))
        return counts.flatten(-2)

    return per_patch(moving), per_patch(still)


@torch.no_grad()
def attention_map(model: VideoTransformer, clip: torch.Tensor, frame: int, place: int) -> torch.Tensor:
    """``(T, N)``: where token (``frame``, ``place``) sends its last block's attention, mean of the heads."""
    _, weights = model.forward_features(clip[None], need_weights=True)
    last = weights[-1]
    t, n = clip.shape[0], model.config.num_patches
    if "joint" in last:
        return last["joint"][0].mean(0)[frame * n + place].reshape(t, n)  # (T·N,) -> (T, N)
    space = last["space"].mean(1)[frame, place]  # (N,): in frame ``frame``, from ``place`` to every place m
    time = last["time"].mean(1)[:, frame]  # (N, T): at place m, from frame ``frame`` to every frame
    return (space[:, None] * time).T  # (T, N): the product along each path space ∘ time


@lru_cache(maxsize=64)
def _frame_data(clip: int, frame: int, attention: str, token: str) -> dict:
    clips, labels = widget_clips()
    x = clips[clip]
    model = shipped_models()[attention]
    moving, still = shape_pixels(x)  # (T, N), (N,)
    counts = moving[frame] if token == TOKENS[0] else still  # (N,)
    place = int(counts.argmax()) if counts.max() >= MIN_PIXELS else None
    with torch.no_grad():
        probs = model(x[None]).softmax(-1)[0]
    return {"x": x, "label": int(labels[clip]), "moving": moving >= MIN_PIXELS, "place": place, "probs": probs,
            "map": None if place is None else attention_map(model, x, frame, place)}


def strips(clip: torch.Tensor, amap: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The frames side by side ``(H, T·W + gaps, 3)``, and the attention maps, each patch's weight over its pixels,
    laid out the same way ``(H, T·W + gaps)``; white (frames) or NaN (maps) in the gaps. One picture each draws
    fast."""
    t, _, h, w = clip.shape
    frames = np.ones((h, t * (w + GAP) - GAP, 3), dtype=np.float32)
    maps = np.full((h, t * (w + GAP) - GAP), np.nan, dtype=np.float32)
    for i in range(t):
        left = i * (w + GAP)
        frames[:, left : left + w] = clip[i].permute(1, 2, 0).numpy()
        grid = amap[i].reshape(GRID, GRID).repeat_interleave(PATCH, 0).repeat_interleave(PATCH, 1)  # (H, W)
        maps[:, left : left + w] = grid.numpy()
    return frames, maps


def _problem(clip: object, frame: object, attention: object, token: object) -> str | None:
    if clip not in CONTROLS["clip"]:
        return f"clip must be a whole number from 0 to {CLIPS - 1}; got {clip!r}."
    if frame not in CONTROLS["frame"]:
        return f"frame must be a whole number from 0 to {FRAMES - 1}; got {frame!r}."
    if attention not in KINDS:
        return f"attention must be one of {', '.join(KINDS)}; got {attention!r}."
    if token not in TOKENS:
        return f"token must be one of {', '.join(TOKENS)}; got {token!r}."
    return None


def video_explorer_view(clip: int = 0, frame: int = 0, attention: str = "ST", token: str = TOKENS[0]
                        ) -> tuple[Figure, str]:
    """The clip's frames, and the chosen token's last-block attention over every frame."""
    problem = _problem(clip, frame, attention, token)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.2))
    d = _frame_data(clip, frame, attention, token)
    if d["place"] is None:
        return problem_frame(f"{token} covers no patch in frame {frame} of clip {clip}; pick another frame.",
                             figsize=(6, 2.2))
    x, place, amap = d["x"], d["place"], d["map"]  # amap: (T, N)
    row, col = divmod(place, GRID)
    frames, maps = strips(x, amap)
    size = x.shape[-1]
    fig, axes = plt.subplots(2, 1, figsize=(1.1 * FRAMES, 2.6))
    axes[0].imshow(frames, interpolation="nearest")
    cmap = plt.get_cmap("magma").with_extremes(bad="white")  # the gaps between frames
    axes[1].imshow(maps, cmap=cmap, vmin=0, vmax=float(amap.max()), interpolation="nearest")
    for t in range(FRAMES):
        left = t * (size + GAP)
        axes[0].text(left + size / 2, -2, f"frame {t}", ha="center", va="bottom", fontsize=7)
        axes[1].text(left + size / 2, -2, f"{100 * float(amap[t].sum()):.0f}%", ha="center", va="bottom", fontsize=7)
    box = (frame * (size + GAP) + PATCH * col - 0.5, PATCH * row - 0.5)
    for ax in axes:
        ax.add_patch(Rectangle(box, PATCH, PATCH, fill=False, ec="cyan", lw=1.5))
        ax.axis("off")
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.9, hspace=0.3)
    own = float(amap[frame].sum())
    on_mover = float(amap[d["moving"]].sum())
    share = float(d["moving"].float().mean())
    guess = int(d["probs"].argmax())
    caption = (f"Clip {clip} moves <b>{DIRECTIONS[d['label']]}</b>; the {attention} model says "
               f"{DIRECTIONS[guess]} (p = {float(d['probs'][guess]):.2f}). Token: {token}'s patch in frame {frame} "
               f"(row {row}, column {col}). Its last block puts <b>{100 * own:.0f}%</b> of its attention on its own "
               f"frame and <b>{100 * on_mover:.0f}%</b> on the patches where the moving shape is, frame by frame "
               f"(those are {100 * share:.0f}% of the clip's tokens: attention spread evenly would put "
               f"{100 * share:.0f}% there). Mean of the heads; residuals and the MLP left out. "
               "An attention map shows where weights go, not why the model decides.")
    return fig, caption
