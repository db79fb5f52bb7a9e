"""Chapter 11's widget: pick a patch of the 4×4 grid and see how similar its position embedding is to the others.

Three tables of the same shape can be compared: the learned 1-D table of the shipped checkpoint
(``vit_edu/checkpoints/shapes_vit.pt``), the same model's table before training (the checkpoint's config built
with the training seed, which is the table training started from), and the fixed 2-D sin-cos table of
:func:`vit_edu.sincos_2d` for the same grid and width. Similarity is the cosine similarity of
:func:`vit_edu.explain.position_similarity`, patch rows only (the CLS row has no place in the grid).
"""

from __future__ import annotations

import functools

import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vit_edu.config import ViTConfig
from vit_edu.explain import position_similarity
from vit_edu.model import VisionTransformer
from vit_edu.position import sincos_2d
from vit_edu.training import CHECKPOINTS, load_checkpoint
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "shapes_vit.pt"
TABLES = ("trained", "untrained", "sin-cos")
GRID = 4  # the shapes-vit checkpoint: 32×32 images, patches of 8
CONTROLS: dict[str, list] = {"row": list(range(GRID)), "col": list(range(GRID)), "table": list(TABLES)}
SITE_CONTROLS = CONTROLS  # 4 × 4 × 3 = 48 frames: small enough for the website as it is
TIE = 1e-5  # similarities closer than this count as tied (float32 rounding is about 1e-7)


@functools.lru_cache(maxsize=1)
def _checkpoint() -> tuple[ViTConfig, torch.Tensor, int]:
    """The checkpoint's model config, its position table ``(1, S, D)`` and its training seed (loaded once)."""
    model, info = load_checkpoint(CHECKPOINT)  # leaves the caller's random state alone
    return model.config, model.pos_embed.embedding.detach().clone(), int(info["train_config"]["seed"])


@functools.lru_cache(maxsize=None)
def patch_table(table: str) -> torch.Tensor:
    """The ``(N, D)`` patch rows of one of :data:`TABLES` (CLS row dropped). Raises for an unknown name."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    config, trained, seed = _checkpoint()
    prefix = config.num_prefix_tokens
    if table == "trained":
        return trained[0, prefix:]
    if table == "sin-cos":
        return sincos_2d(config.grid_size, config.embed_dim)
    with torch.random.fork_rng():  # do not disturb the caller's random state
        torch.manual_seed(seed)  # fit_preset seeds like this right before it builds the model
        untrained = VisionTransformer(config)
    return untrained.pos_embed.embedding.detach()[0, prefix:]


def similarity(table: str) -> torch.Tensor:
    """``(N, N)`` cosine similarities between the patch rows of ``table``."""
    return position_similarity(patch_table(table))


def neighbours(row: int, col: int, grid: int = GRID) -> list[tuple[int, int]]:
    """The up to four grid cells that share a side with ``(row, col)``."""
    steps = ((-1, 0), (1, 0), (0, -1), (0, 1))
    return [(row + dr, col + dc) for dr, dc in steps if 0 <= row + dr < grid and 0 <= col + dc < grid]


def summary(row: int, col: int, table: str) -> dict:
    """The numbers the caption states: most and least similar other patch, mean over neighbours and the rest."""
    sims = similarity(table)[row * GRID + col].reshape(GRID, GRID)
    others = [(r, c) for r in range(GRID) for c in range(GRID) if (r, c) != (row, col)]
    near = neighbours(row, col)
    far = [cell for cell in others if cell not in near]
    best_sim = max(float(sims[cell]) for cell in others)
    worst_sim = min(float(sims[cell]) for cell in others)
    return {
        "sims": sims,
        "self": float(sims[row, col]),
        # All cells tied for most (least) similar: a symmetric table such as sin-cos has exact ties, and which
        # of them a plain argmax picks changes with the CPU's rounding.
        "best": [cell for cell in others if float(sims[cell]) >= best_sim - TIE], "best_sim": best_sim,
        "worst": [cell for cell in others if float(sims[cell]) <= worst_sim + TIE], "worst_sim": worst_sim,
        "near_mean": float(torch.stack([sims[cell] for cell in near]).mean()),
        "far_mean": float(torch.stack([sims[cell] for cell in far]).mean()),
        "num_near": len(near),
    }


def _cells(cells: list[tuple[int, int]]) -> str:
    """``(0, 1)``, or ``(0, 1) and (1, 2) (tied)`` when several cells share the value."""
    names = " and ".join(f"({r}, {c})" for r, c in cells)
    return names if len(cells) == 1 else f"{names} (tied)"


def _problem(row: object, col: object, table: object) -> str | None:
    if table not in TABLES:
        return f"table must be one of {', '.join(TABLES)}; got {table!r}."
    for name, value in (("row", row), ("col", col)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < GRID:
            return (f"{name} picks a patch of the {GRID}×{GRID} grid, a whole number from 0 to {GRID - 1}; "
                    f"got {value!r}.")
    if table == "trained" and not CHECKPOINT.exists():
        return f"the trained table needs the checkpoint {CHECKPOINT.name}, which is not in vit_edu/checkpoints."
    return None


def pos_embed_explorer_view(row: int = 1, col: int = 1, table: str = "trained") -> tuple[Figure, str]:
    """Similarity map of patch ``(row, col)`` with every patch, for one table; the chosen patch boxed in black.

    A bare ``Figure`` (no pyplot state) without tick labels: the website pre-renders 48 of these, and that
    keeps each under a tenth of a second.
    """
    problem = _problem(row, col, table)
    if problem is not None:
        return problem_frame(problem, figsize=(3.2, 3.2))
    fig = Figure(figsize=(3.2, 3.2))
    ax = fig.add_subplot()
    s = summary(row, col, table)
    # Colours span the other patches' values (the chosen patch, always 1, would flatten them): the numbers in
    # the cells carry the absolute values, the colours the pattern.
    lo, hi = s["worst_sim"], s["best_sim"]
    ax.imshow(s["sims"].numpy(), cmap="viridis", vmin=lo, vmax=hi)
    for r in range(GRID):
        for c in range(GRID):
            value = float(s["sims"][r, c])
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=11,
                    color="white" if value < (lo + hi) / 2 else "black")
    ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"{table} table: patch (row {row}, col {col})", fontsize=10)
    fig.subplots_adjust(left=0.03, right=0.97, bottom=0.03, top=0.9)
    caption = (
        f"Patch ({row}, {col}), {table} table. Most similar other patch: {_cells(s['best'])}, cosine "
        f"similarity <b>{s['best_sim']:.3f}</b>; least similar: {_cells(s['worst'])}, <b>{s['worst_sim']:.3f}</b>. Mean over its "
        f"{s['num_near']} grid neighbours <b>{s['near_mean']:.3f}</b>, over the other "
        f"{GRID * GRID - 1 - s['num_near']} patches <b>{s['far_mean']:.3f}</b>. Colours run from the least (dark) to the most similar other patch "
        f"(bright); the chosen patch is boxed."
    )
    return fig, caption
