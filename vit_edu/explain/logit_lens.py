"""The logit lens: the model's own readout applied after every block."""

from __future__ import annotations

import torch

from vit_edu._checks import check_ndim
from vit_edu.model import VisionTransformer


def logit_lens(model: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """What the final LayerNorm and head would predict after each block: ``(B, C, H, W)`` -> ``(L, B, K)`` logits.

    The "logit lens" (nostalgebraist, 2020) reads the residual stream early, through the model's own readout.
    The last layer's row is the model's output; earlier rows show when the answer becomes readable, which is not
    the same as when it is computed (the readout was trained on the last layer only).
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    hidden, _ = model.forward_layers(images)  # L × (B, S, D)
    return torch.stack([model.head(model.pool(model.norm(h))) for h in hidden])  # (L, B, K)
