"""CIFAR-10 from a local copy (nothing downloaded), and the plain images-labels-classes split it fills."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class ImageSplit:
    """Images ``(n, 3, H, W)`` in [0, 1], labels ``(n,)`` and class names: what :func:`vit_edu.training.train` reads."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.labels)


def load_cifar10(root: str | Path, split: str = "train") -> ImageSplit:
    """CIFAR-10 from a local folder that holds ``cifar-10-batches-py`` (torchvision's ``CIFAR10``, no download).

    For readers who already have the data set; the book itself never needs it. ``split`` is "train" (50,000
    images) or "test" (10,000).
    """
    from torchvision.datasets import CIFAR10  # here, not at the top: torchvision takes seconds to import

    if split not in ("train", "test"):
        raise ValueError(f"CIFAR-10 split must be 'train' or 'test', got {split!r}")
    folder = Path(root) / CIFAR10.base_folder
    if not folder.is_dir():
        raise ValueError(
            f"no CIFAR-10 at {folder}: extract cifar-10-python.tar.gz into {Path(root)} first "
            f"(nothing is downloaded at run time)"
        )
    try:
        data = CIFAR10(str(root), train=split == "train", download=False)
    except RuntimeError as error:  # torchvision's message for missing or corrupted files
        raise ValueError(f"CIFAR-10 files in {folder} are missing or fail their checksum: {error}") from error
    images = torch.from_numpy(data.data).permute(0, 3, 1, 2).float() / 255  # (n, 32, 32, 3) uint8 -> (n, 3, 32, 32)
    return ImageSplit(images, torch.tensor(data.targets, dtype=torch.long), tuple(data.classes))
