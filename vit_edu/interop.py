"""Port weights from torchvision's ``VisionTransformer`` into ours, key by key, checking every shape.

What has to match for equal logits: LayerNorm eps 1e-6, a bias on the QKV projection, exact (erf) GELU,
Q/K/V stacked in that order in one ``(3D, D)`` matrix, and the CLS token read out after the final LayerNorm.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer


def _config_from_torchvision(tv: nn.Module) -> ViTConfig:
    if not isinstance(getattr(tv, "conv_proj", None), nn.Conv2d):
        raise ValueError("only torchvision ViTs with a plain Conv2d patch projection (no conv stem) can be ported")
    if getattr(tv, "representation_size", None) is not None:
        raise ValueError(
            f"torchvision model has a pre-logits layer (representation_size={tv.representation_size}); "
            f"vit_edu's head is a single linear layer"
        )
    layers = list(tv.encoder.layers)
    return ViTConfig(
        image_size=tv.image_size,
        patch_size=tv.patch_size,
        in_channels=tv.conv_proj.in_channels,
        num_classes=tv.num_classes,
        embed_dim=tv.hidden_dim,
        depth=len(layers),
        num_heads=layers[0].num_heads,
        mlp_dim=tv.mlp_dim,
        qkv_bias=layers[0].self_attention.in_proj_bias is not None,
        ln_eps=tv.encoder.ln.eps,
        dropout=tv.dropout,
    )


def _key_map(depth: int) -> dict[str, str]:
    """torchvision state-dict key -> vit_edu key."""
    keys = {
        "conv_proj.weight": "patch_embed.proj.weight",
        "conv_proj.bias": "patch_embed.proj.bias",
        "class_token": "cls_token",
        "encoder.pos_embedding": "pos_embed.embedding",
        "encoder.ln.weight": "norm.weight",
        "encoder.ln.bias": "norm.bias",
        "heads.head.weight": "head.weight",
        "heads.head.bias": "head.bias",
    }
    parts = {
        "ln_1": "norm1",
        "self_attention.in_proj_": "attn.qkv.",
        "self_attention.out_proj.": "attn.proj.",
        "ln_2": "norm2",
        "mlp.0.": "mlp.fc1.",
        "mlp.3.": "mlp.fc2.",
    }
    for i in range(depth):
        for tv_part, our_part in parts.items():
            sep = "" if tv_part.endswith(("_", ".")) else "."
            for suffix in ("weight", "bias"):
                keys[f"encoder.layers.encoder_layer_{i}.{tv_part}{sep}{suffix}"] = f"blocks.{i}.{our_part}{sep}{suffix}"
    return keys


def from_torchvision(tv_model: nn.Module) -> VisionTransformer:
    """A ``VisionTransformer`` holding a copy of ``tv_model``'s weights (any torchvision ViT size)."""
    config = _config_from_torchvision(tv_model)
    with torch.device("meta"):  # shapes only: every tensor is replaced by a copy of torchvision's below
        model = VisionTransformer(config)
    ours = model.state_dict()
    theirs = tv_model.state_dict()
    mapping = _key_map(config.depth)
    unknown = sorted(set(theirs) - set(mapping))
    if unknown:
        raise ValueError(f"torchvision keys with no vit_edu counterpart: {unknown[:5]}")
    ported = {}
    for tv_key, our_key in mapping.items():
        if tv_key not in theirs:
            raise ValueError(f"torchvision model has no {tv_key!r}")
        if theirs[tv_key].shape != ours[our_key].shape:
            raise ValueError(
                f"{tv_key} has shape {tuple(theirs[tv_key].shape)} but {our_key} needs {tuple(ours[our_key].shape)}"
            )
        ported[our_key] = theirs[tv_key].detach().clone()
    missing = sorted(set(ours) - set(ported))
    if missing:
        raise ValueError(f"vit_edu keys left unset by the port: {missing[:5]}")
    model.load_state_dict(ported, assign=True)
    return model.train(tv_model.training)


def pretrained_vit_b16(weights_path: str | os.PathLike | None = None, download: bool = False) -> VisionTransformer:
    """torchvision's ViT-B/16 as a ``VisionTransformer``, from a local state-dict file or (if asked) the web.

    ``weights_path`` is a file saved with ``torch.save(torchvision.models.vit_b_16(...).state_dict(), path)``.
    Nothing is downloaded unless ``download=True`` (then torchvision fetches IMAGENET1K_V1, about 330 MB, into
    its cache). The model is returned in eval mode; feed it images normalised with ImageNet's mean and std.
    """
    from torchvision.models import ViT_B_16_Weights, vit_b_16

    path = None if weights_path is None else Path(weights_path)
    if path is not None and path.is_file():
        tv = vit_b_16(weights=None)
        state = torch.load(path, map_location="cpu", weights_only=True)
        try:
            tv.load_state_dict(state)
        except RuntimeError as err:
            raise ValueError(f"{str(path)!r} is not a torchvision ViT-B/16 state dict: {err}") from err
        return from_torchvision(tv.eval()).eval()
    if not download:
        if path is None:
            raise ValueError("pretrained_vit_b16 needs weights_path=<a saved state dict> or download=True "
                             "(nothing is downloaded unless you ask)")
        raise ValueError(f"no weights file at {str(path)!r}; pass download=True to fetch torchvision's "
                         "IMAGENET1K_V1 weights instead")
    tv = vit_b_16(weights=ViT_B_16_Weights.IMAGENET1K_V1)
    return from_torchvision(tv.eval()).eval()
