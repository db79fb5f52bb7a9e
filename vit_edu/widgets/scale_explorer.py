"""Chapter 5's widget: how dividing the scores by √d keeps one query's softmax from collapsing onto one key.

One query and ``NUM_KEYS`` keys are drawn with unit-variance entries (seeded, so every frame is the same on
every run). Their dot products have a variance of about d, so without scaling the softmax becomes sharper
and sharper as d grows; divided by √d the scores keep a variance of about 1 whatever d is. The weights are
drawn on a log axis, so that both the near-uniform ÷√d weights and the collapsed unscaled ones are visible.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vit_edu.widgets.frames import problem_frame

NUM_KEYS = 197  # one query against every token of a ViT-B/16 sequence at 224×224
SEED = 0
SCALINGS = ("÷√d", "no scaling")
CONTROLS: dict[str, list] = {"d": [16, 32, 64, 128, 256, 512, 1024], "scaling": list(SCALINGS)}


def scores(d: int) -> torch.Tensor:
    """The ``NUM_KEYS`` raw dot products ``q·k_j`` of one random query with random keys, both ``N(0, 1)^d``."""
    g = torch.Generator().manual_seed(SEED)
    q = torch.randn(d, generator=g)  # (d,)
    k = torch.randn(NUM_KEYS, d, generator=g)  # (NUM_KEYS, d)
    return k @ q  # (NUM_KEYS,)


def softmax_weights(d: int, scaling: str) -> torch.Tensor:
    """The query's attention weights over the keys (unsorted; they are ≥ 0 and sum to 1)."""
    s = scores(d)
    if scaling == "÷√d":
        s = s / math.sqrt(d)
    return s.softmax(dim=-1)


def entropy(weights: torch.Tensor) -> float:
    """Shannon entropy in nats: ln(NUM_KEYS) for uniform weights, 0 when one key takes everything."""
    w = weights[weights > 0]
    return float(-(w * w.log()).sum())


def _problem(d: object, scaling: object) -> str | None:
    if scaling not in SCALINGS:
        return f"scaling must be one of {', '.join(SCALINGS)}; got {scaling!r}."
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        return f"d is the width of one head's query and key vectors, a positive whole number; got {d!r}."
    return None


FLOOR = 1e-6  # the log axis starts here; smaller weights (only without scaling) are counted in the caption


def keys_for(weights: torch.Tensor, share: float = 0.9) -> int:
    """How many of the largest weights together hold at least ``share`` of the total (1 key if one does)."""
    if not 0 < share <= 1:
        raise ValueError(f"share must lie in (0, 1], got {share!r}")
    cumulative = weights.sort(descending=True).values.cumsum(0)  # (NUM_KEYS,)
    return int((cumulative < share - 1e-6).sum()) + 1


def scale_explorer_view(d: int = 64, scaling: str = "÷√d") -> tuple[Figure, str]:
    """Sorted softmax weights of one query over ``NUM_KEYS`` keys on a log axis, with or without the ÷√d."""
    problem = _problem(d, scaling)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.8))
    fig, ax = plt.subplots(figsize=(6, 2.8))
    raw = scores(d)
    weights = softmax_weights(d, scaling)
    ordered = weights.sort(descending=True).values  # (NUM_KEYS,), largest first
    ranks = range(NUM_KEYS)
    # A log axis: on a linear 0-1 axis the ÷√d weights (all near 1/197) would lie flat on the floor.
    ax.set_yscale("log")
    ax.plot(ranks, ordered.numpy(), color="tab:blue", linewidth=1.5, label="weights, largest first")
    ax.fill_between(ranks, ordered.clamp_min(FLOOR).numpy(), FLOOR, color="tab:blue", alpha=0.3)
    ax.axhline(1 / NUM_KEYS, color="tab:orange", linestyle="--", linewidth=1, label=f"uniform, 1/{NUM_KEYS}")
    ax.set_ylim(FLOOR, 1.5)
    ax.set_xlim(-1, NUM_KEYS)
    ax.set_xlabel("keys, sorted by weight")
    ax.set_ylabel("softmax weight (log scale)")
    ax.set_title(f"d = {d}, {scaling}")
    ax.legend(loc="upper right", fontsize=8)
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.17, top=0.9)
    used = raw / math.sqrt(d) if scaling == "÷√d" else raw
    below = int((weights < FLOOR).sum())
    caption = (
        f"d = {d}, {scaling}: the scores fed to the softmax have standard deviation {float(used.std()):.2f}; "
        f"largest weight <b>{float(weights.max()):.4f}</b> (uniform: {1 / NUM_KEYS:.4f}); "
        f"<b>{keys_for(weights)}</b> of {NUM_KEYS} keys hold 90% of the weight; "
        f"entropy <b>{entropy(weights):.3f}</b> nats (uniform over {NUM_KEYS} keys: {math.log(NUM_KEYS):.3f}); "
        f"<b>{below}</b> keys get less than {FLOOR:g} and fall below the log axis."
    )
    return fig, caption
