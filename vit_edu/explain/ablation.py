"""Block-by-block ablation (chapter 7): drop a sub-layer's update from the residual stream and see what breaks.

In a Pre-LN block the attention and the MLP each *add* an update to the tokens: ``x + Attn(LN(x))``, then
``x + MLP(LN(x))``. Dropping an update means adding zero instead, so the tokens pass that sub-layer unchanged.
``drop_updates`` does this with forward hooks for the length of a ``with`` block; the block's own forward is not
touched, and the hooks are removed on exit even after an error.

``python -m vit_edu.explain.ablation --seeds 0 1 2 --out vit_edu/checkpoints/block_ablation.json`` ablates the
shipped model (seed 0) and the ``shapes-vit`` preset trained with the other seeds, and stores the test accuracy of
every (block, part) arm per seed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from vit_edu.model import VisionTransformer

PARTS = ("attn", "mlp", "both")  # which update(s) of a block to drop


def _zero_update(module: nn.Module, inputs: tuple, output: torch.Tensor | tuple) -> torch.Tensor | tuple:
    """Forward hook: replace a sub-layer's output by zeros of the same shape (attention weights are kept)."""
    if isinstance(output, tuple):  # MultiHeadSelfAttention returns (update (B, S, D), weights or None)
        return (torch.zeros_like(output[0]),) + tuple(output[1:])
    return torch.zeros_like(output)  # MLP: (B, S, D)


def _check_drops(model: VisionTransformer, drops: Sequence[tuple[int, str]]) -> None:
    depth = len(model.blocks)
    for item in drops:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"each drop must be a (block index, part) pair, got {item!r}")
        block, part = item
        if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block < depth:
            raise ValueError(f"block index must be an int in [0, {depth}), got {block!r}")
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")


@contextmanager
def drop_updates(model: VisionTransformer, drops: Sequence[tuple[int, str]]) -> Iterator[VisionTransformer]:
    """Inside the ``with`` block, ``model`` adds nothing for each ``(block index, part)`` in ``drops``.

    ``part`` is ``"attn"`` (the attention update), ``"mlp"`` (the MLP update) or ``"both"``; block indices are
    0-based. An empty ``drops`` leaves the model exactly as it is. Raises ``ValueError`` naming a bad index or part.
    """
    _check_drops(model, drops)
    handles = []
    try:
        for block, part in drops:
            modules = {"attn": [model.blocks[block].attn], "mlp": [model.blocks[block].mlp],
                       "both": [model.blocks[block].attn, model.blocks[block].mlp]}[part]
            handles += [m.register_forward_hook(_zero_update) for m in modules]
        yield model
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def ablation_accuracies(model: VisionTransformer, images: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Test accuracy with nothing dropped (``"none"``) and with each single arm ``"block b: part"`` (b 1-based).

    ``images`` ``(B, C, H, W)``, ``labels`` ``(B,)``. One forward pass per arm: ``1 + 3·depth`` in all.
    """
    if images.ndim != 4 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(f"images must be (B, C, H, W) and labels (B,) with the same B, got "
                         f"{tuple(images.shape)} and {tuple(labels.shape)}")
    model.eval()
    def share(predicted: torch.Tensor) -> float:  # (B,) -> fraction correct, rounded so the JSON is stable
        return round(int((predicted == labels).sum()) / len(labels), 4)

    accuracy = {"none": share(model(images).argmax(1))}
    for block in range(len(model.blocks)):
        for part in PARTS:
            with drop_updates(model, [(block, part)]):
                predicted = model(images).argmax(1)  # (B,)
            accuracy[f"block {block + 1}: {part}"] = share(predicted)
    return accuracy


def test_images(n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n`` images ``(n, 3, 32, 32)`` and labels ``(n,)`` of the shapes test split (seed 0)."""
    from vit_edu.data import ShapesDataset

    test = ShapesDataset("test")
    if not 0 < n <= len(test):
        raise ValueError(f"n must be in [1, {len(test)}], got {n}")
    return test.images[:n], test.labels[:n]


def run(seeds: Sequence[int], n_images: int = 1000) -> dict:
    """Ablation accuracies per seed: seed 0 is the shipped checkpoint, other seeds train ``shapes-vit`` afresh."""
    from vit_edu.training import fit_preset
    from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint

    images, labels = test_images(n_images)
    results = []
    for seed in seeds:
        start = time.perf_counter()
        if seed == 0:
            model, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
        else:
            model, *_ = fit_preset("shapes-vit", progress=False, seed=seed)
        train_seconds = time.perf_counter() - start
        accuracy = ablation_accuracies(model, images, labels)
        print(f"seed {seed}: intact {100 * accuracy['none']:.1f}%, {train_seconds:.0f} s", flush=True)
        results.append({"seed": seed, "source": "shipped shapes_vit.pt" if seed == 0 else "fit_preset",
                        "seconds": round(train_seconds, 1), "accuracy": accuracy})
    return {"preset": "shapes-vit", "test_images": n_images, "torch": torch.__version__,
            "threads": torch.get_num_threads(), "results": results}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--images", type=int, default=1000, help="number of shapes test images")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = run(args.seeds, args.images)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
