"""Input checks shared by the public functions: each raises a ValueError that names the offending sizes."""

from __future__ import annotations

import torch


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is a positive int, else raise ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_ndim(name: str, tensor: torch.Tensor, ndim: int, layout: str) -> None:
    """Raise if ``tensor`` does not have ``ndim`` dimensions; ``layout`` spells the expected shape."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of shape {layout}, got {type(tensor).__name__}")
    if tensor.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions {layout}, got {tensor.ndim} with shape {tuple(tensor.shape)}"
        )


def check_divisible(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """Return the patch grid ``(H/P, W/P)``; raise if either side does not divide by ``patch_size``."""
    check_positive_int("patch size", patch_size)
    for side, size in (("height", height), ("width", width)):
        if size % patch_size:
            raise ValueError(
                f"image {side} {size} is not divisible by patch size {patch_size} "
                f"({size} = {size // patch_size}×{patch_size} + {size % patch_size}); "
                f"resize or crop to {size // patch_size * patch_size} or {(size // patch_size + 1) * patch_size}"
            )
    return height // patch_size, width // patch_size


def pair(value: int | tuple[int, int] | list[int], name: str) -> tuple[int, int]:
    """Turn ``224`` into ``(224, 224)``; check both entries are positive ints."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair (H, W), got {value!r}")
        return check_positive_int(f"{name} height", value[0]), check_positive_int(f"{name} width", value[1])
    size = check_positive_int(name, value)
    return size, size
