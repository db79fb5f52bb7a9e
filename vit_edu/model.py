"""The Vision Transformer (Dosovitskiy et al., 2021) assembled from the package's parts.

Initialisation follows torchvision's ``VisionTransformer``: truncated-normal patch projection, zero CLS
token, N(0, 0.02²) position embeddings, Xavier-uniform attention and MLP weights, and a zero-initialised
classification head (so an untrained model's logits are all zero).
"""

from __future__ import annotations

import torch
from torch import nn

from vit_edu.block import EncoderBlock
from vit_edu.config import ViTConfig
from vit_edu.embedding import PatchEmbedding, PositionEmbedding, prepend_cls
from vit_edu.trace import record


class VisionTransformer(nn.Module):
    """[input standardisation →] patch embedding → [CLS] + position embedding → ``depth`` encoder blocks → LayerNorm → linear head."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        dim = config.embed_dim
        self.patch_embed = PatchEmbedding(config)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim)) if config.pool == "cls" else None
        self.pos_embed = PositionEmbedding(config)
        self.pos_drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config, i) for i in range(config.depth))
        # Post-LN blocks already end in a LayerNorm, so only Pre-LN needs a final one.
        self.norm = nn.LayerNorm(dim, eps=config.ln_eps) if config.norm == "pre" else nn.Identity()
        self.head = nn.Linear(dim, config.num_classes)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def prepend_tokens(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, N, D)`` patch tokens -> ``(B, S, D)``: the learned tokens in front (the CLS token, if pooling uses it)."""
        return prepend_cls(x, self.cls_token) if self.cls_token is not None else x  # (B, N+1, D) or (B, N, D)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` -> ``(B, S, D)``: what the first block receives (standardised pixels as patch tokens, any
        CLS token in front, positions added). Models that extend the sequence, as YOLOS does, start from here."""
        if self.config.input_norm is not None:
            mean, std = self.config.input_norm
            images = (images - mean) / std  # zero-centred inputs: without this a small ViT trains far slower
        x = self.prepend_tokens(self.patch_embed(images))  # (B, N, D) -> (B, S, D)
        return self.pos_drop(self.pos_embed(x))  # (B, S, D)

    def _encode(
        self, images: torch.Tensor, need_weights: bool, need_hidden: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        x = self.embed(images)  # (B, S, D)
        attentions, hidden = [], []
        for block in self.blocks:
            x, weights = block(x, need_weights=need_weights)
            if need_weights:
                attentions.append(weights)  # (B, h, S, S)
            if need_hidden:
                hidden.append(x)  # (B, S, D): the residual stream after this block
        x = self.norm(x)
        record("final tokens", x)
        return x, attentions, hidden

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` images -> the final, normalised tokens ``(B, S, D)``."""
        return self._encode(images, need_weights=False)[0]

    def forward_layers(self, images: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Every block's output ``L × (B, S, D)`` (before the final LayerNorm) and attention maps ``L × (B, h, S, S)``."""
        _, attentions, hidden = self._encode(images, need_weights=True, need_hidden=True)
        return hidden, attentions

    def pool(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, S, D)`` -> ``(B, D)``: the CLS token (index 0), or the mean of the patch tokens."""
        pooled = tokens[:, 0] if self.config.pool == "cls" else tokens.mean(dim=1)
        record("final CLS" if self.config.pool == "cls" else "mean of tokens", pooled)
        return pooled

    def forward(
        self, images: torch.Tensor, *, return_attention: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(B, num_classes)``; with ``return_attention`` also one ``(B, h, S, S)`` map per layer."""
        tokens, attentions, _ = self._encode(images, need_weights=return_attention)
        logits = self.head(self.pool(tokens))  # (B, K)
        record("logits", logits)
        return (logits, attentions) if return_attention else logits
