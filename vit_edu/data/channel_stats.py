"""The two numbers that go by the name "the std" of an image data set, per channel (chapter 13).

``python -m vit_edu.data.channel_stats --root DIR`` prints them for the CIFAR-10 training set in ``DIR`` (a local
copy; nothing is downloaded): the per-channel pixel std, which standardises each channel to unit variance, and the
mean of the per-image stds, the smaller number some recipes quote as CIFAR-10's std.
"""

from __future__ import annotations

import argparse

import torch

from vit_edu._checks import check_ndim
from vit_edu.data.cifar import load_cifar10


def channel_stats(images: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per channel, over ``(N, C, H, W)`` images: the mean, the std of all pixels pooled, and the mean of each
    image's own std (which leaves out how images differ from one another, so it is smaller). Each is ``(C,)``."""
    check_ndim("images", images, 4, "(N, C, H, W)")
    if images.shape[0] < 2:
        raise ValueError(f"need at least 2 images to tell the two stds apart, got {images.shape[0]}")
    pixels = images.transpose(0, 1).flatten(1).double()  # (C, N·H·W)
    return {"mean": pixels.mean(1).float(), "pixel_std": pixels.std(1).float(),
            "per_image_std": images.flatten(2).double().std(2).mean(0).float()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the folder that holds cifar-10-batches-py")
    args = parser.parse_args(argv)
    train = load_cifar10(args.root, "train")
    stats = channel_stats(train.images)
    print(f"CIFAR-10 training set, {len(train):,} images, per channel (R, G, B):")
    for name, label in (("mean", "mean"), ("pixel_std", "per-channel pixel std"),
                        ("per_image_std", "mean of per-image stds")):
        print(f"  {label:24s} " + ", ".join(f"{v:.4f}" for v in stats[name].tolist()))


if __name__ == "__main__":
    main()
