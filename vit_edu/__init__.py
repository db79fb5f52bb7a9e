"""vit_edu: the small, tested Vision Transformer behind the book "ViT, hands-on"."""

from vit_edu.attention import MultiHeadSelfAttention, attention_weights
from vit_edu.block import MLP, EncoderBlock
from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.embedding import PatchEmbedding, PositionEmbedding, add_position_embedding, prepend_cls
from vit_edu.interop import from_torchvision
from vit_edu.model import VisionTransformer
from vit_edu.patches import patchify, patchify_without_permute, toy_image, unpatchify
from vit_edu.position import interpolate_pos_embed, sincos_2d
from vit_edu.trace import count_parameters, shape_table, trace_shapes

__all__ = [
    "CONFIGS",
    "MLP",
    "EncoderBlock",
    "MultiHeadSelfAttention",
    "PatchEmbedding",
    "PositionEmbedding",
    "ViTConfig",
    "VisionTransformer",
    "add_position_embedding",
    "attention_weights",
    "count_parameters",
    "from_torchvision",
    "interpolate_pos_embed",
    "patchify",
    "patchify_without_permute",
    "prepend_cls",
    "shape_table",
    "sincos_2d",
    "toy_image",
    "trace_shapes",
    "unpatchify",
]
