"""Block-by-block ablation (chapter 7): take a sub-layer's update out of the residual stream and see what breaks.

In a Pre-LN block the attention and the MLP each *add* an update to the tokens: ``x + Attn(LN(x))``, then
``x + MLP(LN(x))``. Two ways to take an update out:

- *zero ablation* (``drop_updates``): the block adds zero instead, so the tokens pass that sub-layer unchanged;
- *mean ablation* (``mean_updates``): the block adds the update's mean over a set of reference images, per token
  position, instead of this image's own update. What the update does on *every* image (an offset, a scale the
  later blocks were trained with) stays; only what it says about *this* image is gone.

A large loss under both says the update carries information about the image; a loss under zero ablation alone says
the later blocks needed the update's average, not its content. Both work with forward hooks for the length of a
``with`` block; the block's own forward is not touched, and the hooks are removed on exit even after an error.

``python -m vit_edu.explain.ablation --seeds 0 1 2 --out vit_edu/checkpoints/block_ablation.json`` ablates the
shipped model (seed 0) and the ``shapes-vit`` preset trained with the other seeds, and stores the test accuracy of
every (block, part) arm per seed, for both kinds of ablation.
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
SUBLAYERS = {"attn": ("attn",), "mlp": ("mlp",), "both": ("attn", "mlp")}  # part -> the sub-layers it replaces


def _update(output: torch.Tensor | tuple) -> torch.Tensor:
    """A sub-layer's update ``(B, S, D)``: attention returns (update, weights or None), the MLP the update alone."""
    return output[0] if isinstance(output, tuple) else output


def _replace_hook(fill: torch.Tensor | None):
    """A forward hook that replaces a sub-layer's update by zeros (``fill=None``) or by ``fill`` ``(S, D)`` for every
    image; attention weights, when asked for, are kept."""
    def hook(module: nn.Module, inputs: tuple, output: torch.Tensor | tuple) -> torch.Tensor | tuple:
        update = _update(output)  # (B, S, D)
        if fill is None:
            new = torch.zeros_like(update)
        elif fill.shape != update.shape[1:]:
            raise ValueError(f"the mean update has shape {tuple(fill.shape)} but this update is "
                             f"{tuple(update.shape)}: the means come from images of another size")
        else:
            new = fill.to(update).expand_as(update)  # (S, D) -> (B, S, D), the same for every image
        return (new,) + tuple(output[1:]) if isinstance(output, tuple) else new
    return hook


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
def _replaced(model: VisionTransformer, drops: Sequence[tuple[int, str]],
              means: dict[tuple[int, str], torch.Tensor] | None) -> Iterator[VisionTransformer]:
    """Hooks that replace each dropped update by zeros (``means=None``) or by its entry in ``means``."""
    _check_drops(model, drops)
    if means is not None:
        missing = [(b, sub) for b, part in drops for sub in SUBLAYERS[part] if (b, sub) not in means]
        if missing:
            raise ValueError(f"means has no entry for {missing}: compute them with update_means(model, images)")
    handles = []
    try:
        for block, part in drops:
            for sub in SUBLAYERS[part]:
                fill = None if means is None else means[(block, sub)]
                handles.append(getattr(model.blocks[block], sub).register_forward_hook(_replace_hook(fill)))
        yield model
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def drop_updates(model: VisionTransformer, drops: Sequence[tuple[int, str]]) -> Iterator[VisionTransformer]:
    """Inside the ``with`` block, ``model`` adds nothing for each ``(block index, part)`` in ``drops``.

    ``part`` is ``"attn"`` (the attention update), ``"mlp"`` (the MLP update) or ``"both"``; block indices are
    0-based. An empty ``drops`` leaves the model exactly as it is. Raises ``ValueError`` naming a bad index or part.
    """
    with _replaced(model, drops, None):
        yield model


@torch.no_grad()
def update_means(model: VisionTransformer, images: torch.Tensor) -> dict[tuple[int, str], torch.Tensor]:
    """Each block's attention and MLP update averaged over ``images`` ``(B, C, H, W)``, per token position.

    Returns ``{(block index, "attn" | "mlp"): (S, D)}``, measured in the intact model: what the update is on
    average at each position, with everything that differs from image to image averaged out.
    """
    if images.ndim != 4 or len(images) < 2:
        raise ValueError(f"images must be (B, C, H, W) with B ≥ 2 to average over, got {tuple(images.shape)}")
    model.eval()
    means: dict[tuple[int, str], torch.Tensor] = {}

    def keep(key: tuple[int, str]):
        def hook(module: nn.Module, inputs: tuple, output: torch.Tensor | tuple) -> None:
            means[key] = _update(output).mean(dim=0)  # (B, S, D) -> (S, D)
        return hook

    handles = [getattr(block, sub).register_forward_hook(keep((b, sub)))
               for b, block in enumerate(model.blocks) for sub in ("attn", "mlp")]
    try:
        model(images)
    finally:
        for handle in handles:
            handle.remove()
    return means


@contextmanager
def mean_updates(model: VisionTransformer, drops: Sequence[tuple[int, str]],
                 means: dict[tuple[int, str], torch.Tensor]) -> Iterator[VisionTransformer]:
    """Inside the ``with`` block, each ``(block index, part)`` in ``drops`` adds its mean update from ``means``
    (``update_means``) instead of this image's own: the same ``(S, D)`` for every image.

    Same ``drops`` as ``drop_updates``. Raises ``ValueError`` naming a bad index or part, or an update that
    ``means`` lacks.
    """
    with _replaced(model, drops, means):
        yield model


@torch.no_grad()
def ablation_accuracies(model: VisionTransformer, images: torch.Tensor, labels: torch.Tensor,
                        means: dict[tuple[int, str], torch.Tensor] | None = None) -> dict[str, float]:
    """Test accuracy with nothing dropped (``"none"``) and with each single arm ``"block b: part"`` (b 1-based).

    ``images`` ``(B, C, H, W)``, ``labels`` ``(B,)``. Without ``means`` an arm adds zero for the update (zero
    ablation); with ``means`` (``update_means``) it adds the mean update (mean ablation). One forward pass per arm:
    ``1 + 3·depth`` in all.
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
            with _replaced(model, [(block, part)], means):
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


def reference_images() -> torch.Tensor:
    """The images the mean updates are averaged over: the shapes validation split of seed 0, ``(1000, 3, 32, 32)``.

    None of the models trained on them (seed 0 trained on its train split, seeds 1 and 2 on theirs), and they are
    not the test images the arms are scored on.
    """
    from vit_edu.data import ShapesDataset

    return ShapesDataset("val").images


def run(seeds: Sequence[int], n_images: int = 1000) -> dict:
    """Ablation accuracies per seed, zero and mean: seed 0 is the shipped checkpoint, other seeds train
    ``shapes-vit`` afresh."""
    from vit_edu.training import fit_preset
    from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint

    images, labels = test_images(n_images)
    reference = reference_images()
    results = []
    for seed in seeds:
        start = time.perf_counter()
        if seed == 0:
            model, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
        else:
            model, *_ = fit_preset("shapes-vit", progress=False, seed=seed)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        accuracy = ablation_accuracies(model, images, labels)
        mean_accuracy = ablation_accuracies(model, images, labels, update_means(model, reference))
        ablation_seconds = time.perf_counter() - start
        print(f"seed {seed}: intact {100 * accuracy['none']:.1f}%, {train_seconds:.0f} s", flush=True)
        results.append({"seed": seed, "source": "shipped shapes_vit.pt" if seed == 0 else "fit_preset",
                        "seconds": round(train_seconds, 1), "ablation_seconds": round(ablation_seconds, 1),
                        "accuracy": accuracy, "mean_accuracy": mean_accuracy})
    return {"preset": "shapes-vit", "test_images": n_images,
            "mean_over": f"shapes validation split, seed 0 ({len(reference)} images)", "torch": torch.__version__,
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
