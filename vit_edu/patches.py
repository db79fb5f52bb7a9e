"""Cutting images into patch tokens and back: the first step of a ViT, in three equivalent spellings.

Token order is row-major over the patch grid; inside a token the order is ``(c, p_h, p_w)``, the order of
``nn.Conv2d``'s weight, so that a linear layer on these tokens equals a stride-P convolution.
"""

from __future__ import annotations

from typing import Literal

import torch
from einops import rearrange

from vit_edu._checks import check_divisible, check_ndim, check_positive_int, pair

Method = Literal["permute", "unfold", "einops"]


def toy_image() -> torch.Tensor:
    """The book's 4×4 toy: one single-channel image holding 1..16 row by row, shape (1, 1, 4, 4)."""
    return torch.arange(1, 17, dtype=torch.float32).reshape(1, 1, 4, 4)


def _check_images(images: torch.Tensor, patch_size: int) -> tuple[int, int, int, int, int]:
    """Return ``(B, C, H/P, W/P, P)`` after checking the layout and divisibility."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    batch, channels, height, width = images.shape
    grid_h, grid_w = check_divisible(height, width, patch_size)
    return batch, channels, grid_h, grid_w, patch_size


def patchify(images: torch.Tensor, patch_size: int, *, method: Method = "permute") -> torch.Tensor:
    """Cut ``(B, C, H, W)`` images into ``(B, N, C·P·P)`` tokens, N = (H/P)·(W/P), row-major.

    The three methods give bit-identical results; they exist so the book can show each spelling.
    """
    b, c, gh, gw, p = _check_images(images, patch_size)
    if method == "permute":
        x = images.reshape(b, c, gh, p, gw, p)  # (B, C, gh, P, gw, P)
        x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, P, P): grid first, then token contents
        return x.reshape(b, gh * gw, c * p * p)  # (B, N, C·P·P)
    if method == "unfold":
        x = images.unfold(2, p, p).unfold(3, p, p)  # (B, C, gh, gw, P, P)
        x = x.permute(0, 2, 3, 1, 4, 5)  # (B, gh, gw, C, P, P)
        return x.reshape(b, gh * gw, c * p * p)
    if method == "einops":
        return rearrange(images, "b c (gh ph) (gw pw) -> b (gh gw) (c ph pw)", ph=p, pw=p)
    raise ValueError(f"method must be 'permute', 'unfold' or 'einops', got {method!r}")


def patchify_without_permute(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """The classic bug, kept for teaching: reshape straight to ``(B, N, C·P·P)`` without permuting.

    The shape is right and the contents are wrong: token 0 holds the first C·P·P numbers in memory,
    which are the top rows of the red channel across the whole image width.
    """
    b, c, gh, gw, p = _check_images(images, patch_size)
    return images.reshape(b, gh * gw, c * p * p)


def unpatchify(
    tokens: torch.Tensor, patch_size: int, image_size: int | tuple[int, int], channels: int
) -> torch.Tensor:
    """Exact inverse of :func:`patchify`: ``(B, N, C·P·P)`` tokens back to ``(B, C, H, W)`` images."""
    check_ndim("tokens", tokens, 3, "(B, N, C·P·P)")
    height, width = pair(image_size, "image size")
    check_positive_int("channels", channels)
    gh, gw = check_divisible(height, width, patch_size)
    p = patch_size
    b, n, length = tokens.shape
    if n != gh * gw:
        raise ValueError(
            f"got {n} tokens but a {height}×{width} image with patch size {p} has {gh}×{gw} = {gh * gw} patches"
        )
    if length != channels * p * p:
        raise ValueError(
            f"token length {length} does not match channels·P·P = {channels}·{p}·{p} = {channels * p * p}"
        )
    x = tokens.reshape(b, gh, gw, channels, p, p).permute(0, 3, 1, 4, 2, 5)  # (B, C, gh, P, gw, P)
    return x.reshape(b, channels, height, width)
