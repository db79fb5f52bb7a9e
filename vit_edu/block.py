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


class EncoderBlock(nn.Module):
    """Pre-LN (the ViT paper): ``x + Attn(LN(x))`` then ``x + MLP(LN(x))``.

    Post-LN (the original Transformer, kept for chapter 7's experiment): ``LN(x + Attn(x))`` then
    ``LN(x + MLP(x))``.
    """

    def __init__(self, config: ViTConfig, index: int = 0) -> None:
        super().__init__()
        self.name = f"block {index + 1}"
        self.pre_norm = config.norm == "pre"
        dim = config.embed_dim
        self.norm1 = nn.LayerNorm(dim, eps=config.ln_eps)
        self.attn = MultiHeadSelfAttention(dim, config.num_heads, qkv_bias=config.qkv_bias)
        self.drop = nn.Dropout(config.dropout)
        self.norm2 = nn.LayerNorm(dim, eps=config.ln_eps)
        self.mlp = MLP(dim, config.mlp_dim, config.dropout)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, S, D)`` -> ``((B, S, D), attention weights (B, h, S, S) or None)``."""
        with scope(self.name):
            if self.pre_norm:
                attn, weights = self.attn(self.norm1(x), need_weights=need_weights)
                x = x + self.drop(attn)  # residual 1: from the block input
                x = x + self.mlp(self.norm2(x))  # residual 2: from the first sum
            else:
                attn, weights = self.attn(x, need_weights=need_weights)
                x = self.norm1(x + self.drop(attn))
                x = self.norm2(x + self.mlp(x))
            record("block output", x)
        return x, weights
