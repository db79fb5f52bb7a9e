"""From images to the encoder's input sequence: patch embedding, the CLS token, position embeddings."""

from __future__ import annotations

import math

import torch
from torch import nn

from vit_edu._checks import check_divisible, check_ndim
from vit_edu.config import ViTConfig
from vit_edu.position import sincos_2d
from vit_edu.trace import record


class PatchEmbedding(nn.Module):
    """Cut into P×P patches and project each to D features, as one ``Conv2d(C, D, P, stride=P)``.

    The convolution equals ``patchify(x, P) @ W.flatten(1).T + b``; chapter 3 proves it by computation.
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        p = config.patch_size
        self.proj = nn.Conv2d(config.in_channels, config.embed_dim, kernel_size=p, stride=p)
        # torchvision: truncated normal with std sqrt(1 / fan_in), zero bias.
        fan_in = config.in_channels * p * p
        nn.init.trunc_normal_(self.proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.proj.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        check_ndim("images", images, 4, "(B, C, H, W)")
        _, channels, height, width = images.shape
        cfg = self.config
        if channels != cfg.in_channels:
            raise ValueError(f"images have {channels} channels but the model expects in_channels={cfg.in_channels}")
        check_divisible(height, width, cfg.patch_size)
        if (height, width) != cfg.image_size:
            raise ValueError(
                f"image size {height}×{width} does not match the model's {cfg.image_size[0]}×{cfg.image_size[1]}: "
                f"its position embedding covers a {cfg.grid_size[0]}×{cfg.grid_size[1]} patch grid; "
                f"resize the image or adapt the model with vit_edu.resolution.change_resolution"
            )
        record("input image", images)
        x = self.proj(images)  # (B, D, H/P, W/P)
        x = x.flatten(2).transpose(1, 2)  # (B, N, D), row-major over the grid
        record("patch tokens (projected)", x)
        return x


def prepend_cls(tokens: torch.Tensor, cls_token: torch.Tensor) -> torch.Tensor:
    """Put the shared, learnable CLS vector ``(1, 1, D)`` in front of ``(B, N, D)`` tokens -> ``(B, N+1, D)``."""
    check_ndim("tokens", tokens, 3, "(B, N, D)")
    check_ndim("cls_token", cls_token, 3, "(1, 1, D)")
    if cls_token.shape[:2] != (1, 1):
        raise ValueError(f"cls_token must have shape (1, 1, D), got {tuple(cls_token.shape)}")
    if cls_token.shape[-1] != tokens.shape[-1]:
        raise ValueError(
            f"CLS token width {cls_token.shape[-1]} does not match token width {tokens.shape[-1]}: "
            f"both must equal the embedding dimension D"
        )
    out = torch.cat([cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)  # (B, N+1, D)
    record("with CLS token", out)
    return out


def add_position_embedding(tokens: torch.Tensor, pos_embed: torch.Tensor) -> torch.Tensor:
    """Add ``(1, S, D)`` position embeddings to ``(B, S, D)`` tokens; the width stays D (added, not concatenated)."""
    check_ndim("tokens", tokens, 3, "(B, S, D)")
    check_ndim("pos_embed", pos_embed, 3, "(1, S, D)")
    seq, width = tokens.shape[1:]
    if pos_embed.shape[1] != seq:
        hint = ""
        if pos_embed.shape[1] == seq - 1:
            hint = " (off by one: did you forget the row for the CLS token? S = N + 1)"
        raise ValueError(
            f"position embedding has {pos_embed.shape[1]} positions but the sequence has {seq} tokens{hint}"
        )
    if pos_embed.shape[2] != width:
        raise ValueError(f"position embedding width {pos_embed.shape[2]} does not match token width {width}")
    out = tokens + pos_embed  # (B, S, D)
    record("with position embedding", out)
    return out


class PositionEmbedding(nn.Module):
    """The position table for ``config.pos_embed``: learned (init N(0, 0.02²)), fixed sin-cos, or none (also for
    ``"relative"``, whose positions are a bias inside each attention layer, not a table added here)."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.kind = config.pos_embed
        shape = (1, config.seq_len, config.embed_dim)
        if self.kind == "learned":
            self.embedding = nn.Parameter(torch.empty(shape).normal_(std=0.02))
        elif self.kind == "sincos":
            table = torch.zeros(shape)  # prefix (CLS) rows stay zero
            table[0, config.num_prefix_tokens :] = sincos_2d(config.grid_size, config.embed_dim)
            self.register_buffer("embedding", table, persistent=False)
        else:
            self.embedding = None

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.embedding is None:
            return tokens
        return add_position_embedding(tokens, self.embedding)
