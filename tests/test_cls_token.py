"""vit_edu.explain.cls_token: the CLS state block by block, and each token's contribution through each head."""

import dataclasses

import pytest
import torch

import vit_edu
from vit_edu.data import make_shapes
from vit_edu.explain.cls_token import block_inputs, cls_contributions, cls_states
from vit_edu.training.presets import PRESETS


def small_model(**changes) -> vit_edu.VisionTransformer:
    torch.manual_seed(0)
    config = dataclasses.replace(PRESETS["shapes-vit"][0], **changes)
    model = vit_edu.VisionTransformer(config).eval()
    with torch.no_grad():  # a zero CLS token and small position table would make row 0 nearly trivial
        for p in (model.cls_token, model.pos_embed.embedding) if model.cls_token is not None else ():
            p.normal_()
    return model


def test_states_start_equal_and_follow_the_blocks():
    model = small_model()
    images, _, _ = make_shapes(3, seed=1)
    states = cls_states(model, images)  # (L + 1, 3, D)
    assert states.shape == (model.config.depth + 1, 3, model.config.embed_dim)
    expected0 = (model.cls_token[0, 0] + model.pos_embed.embedding[0, 0]).expand(3, -1)
    torch.testing.assert_close(states[0], expected0)  # the same for every image
    hidden, _ = model.forward_layers(images)
    for layer, h in enumerate(hidden):
        torch.testing.assert_close(states[layer + 1], h[:, 0])
    assert not torch.allclose(states[1, 0], states[1, 1])  # after block 1 the images differ
    inputs = block_inputs(model, images)
    assert len(inputs) == model.config.depth + 1 and all(x.shape == hidden[0].shape for x in inputs)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_contributions_add_up_to_the_attention_output(norm):
    model = small_model(norm=norm)
    images, _, _ = make_shapes(4, seed=2)
    _, maps = model(images, return_attention=True)
    for layer in range(model.config.depth):
        weights, vectors = cls_contributions(model, images, layer)
        h, s, d = model.config.num_heads, model.config.seq_len, model.config.embed_dim
        assert weights.shape == (4, h, s) and vectors.shape == (4, h, s, d)
        torch.testing.assert_close(weights, maps[layer][:, :, 0])  # the model's own CLS row
        block = model.blocks[layer]
        x = block_inputs(model, images)[layer]
        with torch.no_grad():
            out, _ = block.attn(block.norm1(x) if norm == "pre" else x)  # (4, S, D)
        torch.testing.assert_close(vectors.sum((1, 2)) + block.attn.proj.bias, out[:, 0], atol=1e-5, rtol=1e-4)


def test_contribution_is_weight_times_the_projected_value():
    model = small_model()
    images, _, _ = make_shapes(2, seed=3)
    layer, head, token = 2, 1, 5
    weights, vectors = cls_contributions(model, images, layer)
    block = model.blocks[layer]
    with torch.no_grad():
        a = block.norm1(block_inputs(model, images)[layer])  # (2, S, D)
        d, hd = model.config.embed_dim, model.config.embed_dim // model.config.num_heads
        w_v = block.attn.qkv.weight[2 * d + head * hd : 2 * d + (head + 1) * hd]  # (hd, D): head's value rows
        b_v = block.attn.qkv.bias[2 * d + head * hd : 2 * d + (head + 1) * hd]
        value = a[:, token] @ w_v.T + b_v  # (2, hd)
        sent = weights[:, head, token, None] * (value @ block.attn.proj.weight[:, head * hd : (head + 1) * hd].T)
    torch.testing.assert_close(vectors[:, head, token], sent)


def test_bad_arguments_raise_value_error_naming_them():
    model = small_model()
    images = torch.zeros(1, 3, 32, 32)
    with pytest.raises(ValueError, match="0..3, got 4"):
        cls_contributions(model, images, 4)
    with pytest.raises(ValueError, match="got -1"):
        cls_contributions(model, images, -1)
    with pytest.raises(ValueError, match=r"\(1, 32, 32\)"):
        cls_states(model, torch.zeros(1, 32, 32))
    gap = small_model(pool="mean")
    with pytest.raises(ValueError, match="'mean'"):
        cls_states(gap, images)
    with pytest.raises(ValueError, match="'mean'"):
        cls_contributions(gap, images, 0)
