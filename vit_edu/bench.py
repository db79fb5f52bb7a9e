"""Throughput of vit_edu against torchvision's VisionTransformer on the same weights and inputs.

Run ``python -m vit_edu.bench``. Prints images/second for forward and forward+backward, for vit_edu's
fast path (SDPA), its explicit path (weights materialised) and torchvision, and the ratios to torchvision.
Measurements are interleaved round by round so that drift in machine load hits all three alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torchvision.models.vision_transformer import VisionTransformer as TorchvisionViT

from vit_edu.interop import from_torchvision

# name: (torchvision kwargs, batch size)
SETTINGS: dict[str, tuple[dict, int]] = {
    "tiny (32px, P8, D64, 4 blocks)": (
        dict(image_size=32, patch_size=8, num_layers=4, num_heads=4, hidden_dim=64, mlp_dim=256, num_classes=10), 64),
    "ViT-B/16 (224px)": (
        dict(image_size=224, patch_size=16, num_layers=12, num_heads=12, hidden_dim=768, mlp_dim=3072), 4),
}


def _runners(tv: torch.nn.Module, ours: torch.nn.Module, x: torch.Tensor, backward: bool) -> dict[str, Callable]:
    def run(model: torch.nn.Module, **kwargs) -> Callable[[], None]:
        def step() -> None:
            if backward:
                out = model(x, **kwargs)
                (out[0] if isinstance(out, tuple) else out).sum().backward()
            else:
                with torch.no_grad():
                    model(x, **kwargs)
        return step

    return {"vit_edu fast": run(ours), "vit_edu explicit": run(ours, return_attention=True), "torchvision": run(tv)}


def measure(runners: dict[str, Callable], rounds: int) -> dict[str, float]:
    """Median seconds per call of each runner, interleaved over ``rounds`` rounds after one warm-up."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    for name, step in runners.items():
        step()  # warm-up
    for _ in range(rounds):
        for name, step in runners.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for setting, (kwargs, batch) in SETTINGS.items():
        tv = TorchvisionViT(**kwargs)
        ours = from_torchvision(tv)
        x = torch.randn(batch, 3, kwargs["image_size"], kwargs["image_size"])
        for backward in (False, True):
            tv.train(backward)
            ours.train(backward)
            seconds = measure(_runners(tv, ours, x, backward), args.rounds)
            label = "forward+backward" if backward else "forward"
            print(f"\n{setting}, batch {batch}, {label}")
            for name, s in seconds.items():
                ratio = seconds["torchvision"] / s
                print(f"  {name:17s} {batch / s:9.1f} img/s   {ratio:5.2f}× torchvision")


if __name__ == "__main__":
    main()
