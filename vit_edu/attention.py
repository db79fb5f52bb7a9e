"""Multi-head self-attention with two paths: an explicit one that shows the weights, and a fast one."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim
from vit_edu.relative import RelativePositionBias
from vit_edu.trace import record


def attention_weights(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(Q Kᵀ / √d + bias) over the keys: ``(..., S, d)`` queries and keys -> ``(..., S, S)`` weights.

    Row i says how much of each value token i takes; every row is ≥ 0 and sums to 1. No mask: in a ViT
    every token may attend to every token, the CLS token included. ``bias`` (broadcast to ``(..., S, S)``) is a
    relative position bias, added to the scores before the softmax.
    """
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., S, S)
    if bias is not None:
        scores = scores + bias
    return scores.softmax(dim=-1)


class MultiHeadSelfAttention(nn.Module):
    """One ``Linear(D, 3D)`` makes Q, K, V; h heads attend in parallel; ``Linear(D, D)`` mixes them back.

    The explicit path (``need_weights=True``) computes the weights step by step and returns them; the fast
    path calls ``F.scaled_dot_product_attention``, which gives the same output without storing the S×S weights.
    ``relative_grid`` (the patch grid) gives the layer its own relative position bias
    (:class:`~vit_edu.relative.RelativePositionBias`), for ``num_prefix`` tokens before the patches.
    """

    def __init__(self, dim: int, num_heads: int, *, qkv_bias: bool = True, dropout: float = 0.0,
                 relative_grid: tuple[int, int] | None = None, num_prefix: int = 1) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"embed_dim {dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout
        self.relative_bias = (RelativePositionBias(relative_grid, num_heads, num_prefix)
                              if relative_grid is not None else None)
        # torchvision (nn.MultiheadAttention): Xavier-uniform in-projection, zero biases.
        nn.init.xavier_uniform_(self.qkv.weight)
        if qkv_bias:
            nn.init.zeros_(self.qkv.bias)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, S, D)`` -> ``((B, S, D), weights (B, h, S, S) or None)``."""
        check_ndim("x", x, 3, "(B, S, D)")
        b, s, d = x.shape
        if d != self.num_heads * self.head_dim:
            raise ValueError(f"token width {d} does not match the attention width {self.num_heads * self.head_dim}")
        qkv = self.qkv(x).reshape(b, s, 3, self.num_heads, self.head_dim)  # (B, S, 3, h, d)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, h, S, d)
        for name, t in (("Q", q), ("K", k), ("V", v)):
            record(f"{name} per head", t)
        dropout = self.dropout if self.training else 0.0
        bias = None
        if self.relative_bias is not None:
            bias = self.relative_bias()  # (h, S, S)
            if bias.shape[-1] != s:
                raise ValueError(f"the relative position bias is for {bias.shape[-1]} tokens "
                                 f"(grid {self.relative_bias.grid}), but x has {s}")
        if need_weights:
            weights = attention_weights(q, k, bias)  # (B, h, S, S)
            record("attention weights", weights)
            out = F.dropout(weights, dropout, training=self.training) @ v  # (B, h, S, d)
        else:
            weights = None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout)  # (B, h, S, d)
        out = out.transpose(1, 2).reshape(b, s, d)  # (B, S, h·d): heads side by side again
        record("heads merged", out)
        out = self.proj(out)  # (B, S, D)
        record("attention output", out)
        return out, weights
