"""The Transformer encoder block: attention and an MLP, each wrapped in a residual connection."""

from __future__ import annotations

import torch
from torch import nn

from vit_edu.attention import MultiHeadSelfAttention
from vit_edu.config import ViTConfig
from vit_edu.trace import record, scope


class MLP(nn.Module):
    """``Linear(D, mlp_dim)`` → GELU → ``Linear(mlp_dim, D)``, applied to every token on its own."""

    def __init__(self, dim: int, hidden: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()  # exact (erf) GELU, as torchvision and the paper's code
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)
        # torchvision: Xavier-uniform weights, biases N(0, 1e-6²).
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.normal_(fc.bias, std=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc1(x))  # (B, S, mlp_dim)
        record("MLP hidden", h)
        return self.drop(self.fc2(self.drop(h)))  # (B, S, D)


def _check_rate(rate: float) -> None:
    """Stochastic depth's rate is a probability of dropping, and dropping always (rate 1) leaves nothing to scale."""
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"drop path rate must be in [0, 1), got {rate}")


def drop_path(x: torch.Tensor, rate: float, training: bool) -> torch.Tensor:
    """Stochastic depth: zero a whole sample's residual branch with probability ``rate``, scale the rest by 1/(1-rate).

    ``x`` is a branch output ``(B, ...)``; one Bernoulli draw per sample keeps E[output] = x. Identity (and no
    random draw) when ``rate == 0`` or not ``training``.
    """
    _check_rate(rate)
    if rate == 0.0 or not training:
        return x
    keep = 1.0 - rate
    mask = torch.empty((x.shape[0],) + (1,) * (x.ndim - 1), dtype=x.dtype, device=x.device).bernoulli_(keep)  # (B, 1, 1)
    return x * mask / keep


class DropPath(nn.Module):
    """Stochastic depth (随机深度) as a module: ``drop_path`` with a fixed rate; no parameters."""

    def __init__(self, rate: float = 0.0) -> None:
        super().__init__()
        _check_rate(rate)
        self.rate = float(rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return drop_path(x, self.rate, self.training)

    def extra_repr(self) -> str:
        return f"rate={self.rate:g}"


def drop_path_rates(rate: float, depth: int) -> list[float]:
    """The per-block rates of DeiT/timm: linear from 0 (first block) to ``rate`` (last block)."""
    _check_rate(rate)
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if depth == 1:
        return [rate]
    return [rate * i / (depth - 1) for i in range(depth)]


class EncoderBlock(nn.Module):
    """Pre-LN (the ViT paper): ``x + Attn(LN(x))`` then ``x + MLP(LN(x))``.

    Post-LN (the original Transformer, kept for chapter 7's experiment): ``LN(x + Attn(x))`` then
    ``LN(x + MLP(x))``.

    With ``config.drop_path_rate > 0`` each residual branch passes through ``DropPath`` (stochastic depth) at
    block ``index``'s rate from ``drop_path_rates``; at 0 the block is exactly the plain one.
    """

    def __init__(self, config: ViTConfig, index: int = 0) -> None:
        super().__init__()
        self.name = f"block {index + 1}"
        self.pre_norm = config.norm == "pre"
        dim = config.embed_dim
        self.norm1 = nn.LayerNorm(dim, eps=config.ln_eps)
        relative = config.grid_size if config.pos_embed == "relative" else None  # each block its own bias table
        self.attn = MultiHeadSelfAttention(dim, config.num_heads, qkv_bias=config.qkv_bias, relative_grid=relative,
                                           num_prefix=config.num_prefix_tokens)
        self.drop = nn.Dropout(config.dropout)
        self.norm2 = nn.LayerNorm(dim, eps=config.ln_eps)
        self.mlp = MLP(dim, config.mlp_dim, config.dropout)
        rate = 0.0
        if config.drop_path_rate > 0:
            if not 0 <= index < config.depth:
                raise ValueError(f"index must be in [0, {config.depth}) when drop_path_rate > 0, got {index}")
            rate = drop_path_rates(config.drop_path_rate, config.depth)[index]
        self.drop_path = DropPath(rate)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, S, D)`` -> ``((B, S, D), attention weights (B, h, S, S) or None)``."""
        with scope(self.name):
            if self.pre_norm:
                attn, weights = self.attn(self.norm1(x), need_weights=need_weights)
                x = x + self.drop_path(self.drop(attn))  # residual 1: from the block input
                x = x + self.drop_path(self.mlp(self.norm2(x)))  # residual 2: from the first sum
            else:
                attn, weights = self.attn(x, need_weights=need_weights)
                x = self.norm1(x + self.drop_path(self.drop(attn)))
                x = self.norm2(x + self.drop_path(self.mlp(x)))
            record("block output", x)
        return x, weights
