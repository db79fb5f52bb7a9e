"""The CLS token through the blocks: its state after every block, and what each patch actually adds to it
through each head of a block's attention.

An attention weight A₀ⱼ says how much of token j's value vector the CLS query takes. What reaches the CLS token
is that share of the value, projected back by the head's slice of the output projection,
``A₀ⱼ · W_O[:, head] vⱼ``: a vector of width D. Its length can rank the patches differently from the weights,
because value vectors differ in length and in how much of them the projection keeps.
"""

from __future__ import annotations

import torch

from vit_edu._checks import check_ndim
from vit_edu.attention import attention_weights
from vit_edu.model import VisionTransformer


def _check(model: VisionTransformer, images: torch.Tensor) -> None:
    check_ndim("images", images, 4, "(B, C, H, W)")
    if model.config.pool != "cls":
        raise ValueError(f"the model pools with {model.config.pool!r}: it has no CLS token to follow")


@torch.no_grad()
def block_inputs(model: VisionTransformer, images: torch.Tensor) -> list[torch.Tensor]:
    """The residual stream entering every block, and leaving the last: ``(B, C, H, W)`` -> ``L + 1`` × ``(B, S, D)``.

    Entry 0 is the embedded sequence (patch tokens, CLS token, position embedding); entry ℓ is block ℓ's output.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    model.eval()
    inputs: list[torch.Tensor] = []
    handle = model.blocks[0].register_forward_pre_hook(lambda module, args: inputs.append(args[0]))
    try:
        hidden, _ = model.forward_layers(images)  # L × (B, S, D)
    finally:
        handle.remove()
    return [inputs[0], *hidden]


def cls_states(model: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """The CLS token before block 1 and after every block: ``(B, C, H, W)`` -> ``(L + 1, B, D)``.

    Row 0 is the learned CLS token plus position 0's embedding, the same for every image; how far the later rows
    move, and apart, is what the blocks do with it.
    """
    _check(model, images)
    return torch.stack([x[:, 0] for x in block_inputs(model, images)])  # (L + 1, B, D)


@torch.no_grad()
def cls_contributions(
    model: VisionTransformer, images: torch.Tensor, layer: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """What each token sends the CLS token through each head of block ``layer`` (from 0)'s attention:
    ``(B, C, H, W)`` -> weights ``(B, h, S)`` and vectors ``(B, h, S, D)``.

    ``weights[b, i, j]`` is the CLS row of head i's attention, A₀ⱼ; ``vectors[b, i, j]`` is A₀ⱼ · W_O[:, head i] vⱼ,
    computed from the block's own ``qkv`` and ``proj`` weights. Summed over heads and tokens, plus the
    projection's bias, the vectors are the attention output at the CLS position, before the residual addition.
    """
    _check(model, images)
    depth = len(model.blocks)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < depth:
        raise ValueError(f"layer must be a block index in 0..{depth - 1}, got {layer!r}")
    x = block_inputs(model, images)[layer]  # (B, S, D): the stream entering the block
    block = model.blocks[layer]
    attn = block.attn
    a = block.norm1(x) if block.pre_norm else x  # what the attention reads
    b, s, d = a.shape
    h, hd = attn.num_heads, attn.head_dim
    q, k, v = attn.qkv(a).reshape(b, s, 3, h, hd).permute(2, 0, 3, 1, 4).unbind(0)  # each (B, h, S, hd)
    weights = attention_weights(q, k)[:, :, 0]  # (B, h, S): the CLS query's row
    w_out = attn.proj.weight.reshape(d, h, hd)  # (D, h, hd): the output projection's columns, by head
    vectors = torch.einsum("bhj,bhjc,ehc->bhje", weights, v, w_out)  # (B, h, S, D)
    return weights, vectors
