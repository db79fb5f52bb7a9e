"""Relative position bias (vit_edu.relative) and the ViT built with pos_embed="relative"."""

import dataclasses

import pytest
import torch

from vit_edu.attention import MultiHeadSelfAttention, attention_weights
from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer
from vit_edu.relative import RelativePositionBias, relative_position_index, resize_bias_table, table_size
from vit_edu.resolution import change_resolution
from vit_edu.variants.distill import DistilledViT

TINY = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32,
                 pos_embed="relative")


@pytest.mark.parametrize("grid, prefix", [((3, 3), 1), ((2, 4), 0), ((4, 3), 1)])
def test_index_gives_every_pair_with_the_same_offset_one_entry(grid, prefix):
    gh, gw = grid
    index = relative_position_index(grid, prefix)
    cells = [(r, c) for r in range(gh) for c in range(gw)]
    entry_of_offset = {}
    for i, (ri, ci) in enumerate(cells):
        for j, (rj, cj) in enumerate(cells):
            entry = index[prefix + i, prefix + j].item()
            assert entry_of_offset.setdefault((ri - rj, ci - cj), entry) == entry
    # One entry per offset, all different, and the prefix entries after them.
    assert len(set(entry_of_offset.values())) == len(entry_of_offset) == (2 * gh - 1) * (2 * gw - 1)
    assert index.max().item() + 1 == table_size(grid, prefix)
    if prefix:
        offsets = (2 * gh - 1) * (2 * gw - 1)
        assert index[0, 1:].eq(offsets).all() and index[1:, 0].eq(offsets + 1).all() and index[0, 0] == offsets + 2


def test_bias_reads_the_table_per_head():
    torch.manual_seed(0)
    bias_module = RelativePositionBias((2, 2), num_heads=3)
    bias = bias_module()  # (h, S, S)
    assert bias.shape == (3, 5, 5)
    index = relative_position_index((2, 2), 1)
    for h in range(3):
        for i in range(5):
            for j in range(5):
                assert bias[h, i, j] == bias_module.table[index[i, j], h]


def test_both_attention_paths_add_the_same_bias():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(16, 2, relative_grid=(3, 3), num_prefix=1).eval()
    with torch.no_grad():
        attn.relative_bias.table.normal_(std=1.0)  # large enough to change the weights
    x = torch.randn(2, 10, 16)
    fast, _ = attn(x)
    slow, weights = attn(x, need_weights=True)
    assert torch.allclose(fast, slow, atol=1e-5)
    q, k, _ = attn.qkv(x).reshape(2, 10, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
    assert torch.allclose(weights, attention_weights(q, k, attn.relative_bias()), atol=1e-6)
    assert not torch.allclose(weights, attention_weights(q, k), atol=1e-3)


def test_relative_model_has_no_position_table_and_trains():
    torch.manual_seed(0)
    model = VisionTransformer(TINY)
    assert model.pos_embed.embedding is None
    tables = [b.attn.relative_bias.table for b in model.blocks]
    assert [t.shape for t in tables] == [(table_size(4), 2)] * TINY.depth
    loss = model.forward_features(torch.rand(2, 3, 16, 16)).pow(2).sum()  # the head starts at zero: features
    loss.backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in tables)


def test_without_a_cls_token_the_table_has_no_prefix_entries():
    model = VisionTransformer(dataclasses.replace(TINY, pool="mean"))
    assert model.blocks[0].attn.relative_bias.table.shape == (49, 2)
    assert model(torch.rand(1, 3, 16, 16)).shape == (1, 3)


def test_a_larger_image_gets_a_resampled_table():
    torch.manual_seed(0)
    model = VisionTransformer(TINY).eval()
    bigger = change_resolution(model, 24)  # grid 4×4 -> 6×6: offsets ±3 -> ±5
    table = bigger.blocks[0].attn.relative_bias.table
    assert table.shape == (table_size(6), 2)
    assert torch.equal(table[-3:], model.blocks[0].attn.relative_bias.table[-3:])  # prefix entries kept
    assert bigger(torch.rand(1, 3, 24, 24)).shape == (1, 3)
    same = resize_bias_table(model.blocks[0].attn.relative_bias.table, 4, 4)
    assert torch.allclose(same, model.blocks[0].attn.relative_bias.table, atol=1e-6)


def test_bad_input_names_the_values():
    with pytest.raises(ValueError, match="table has 10 entries.*needs 52"):
        resize_bias_table(torch.zeros(10, 2), 4, 6)
    with pytest.raises(ValueError, match="num_prefix must be >= 0, got -1"):
        relative_position_index(3, -1)
    attn = MultiHeadSelfAttention(16, 2, relative_grid=(3, 3))
    with pytest.raises(ValueError, match="for 10 tokens.*x has 7"):
        attn(torch.randn(1, 7, 16))
    with pytest.raises(ValueError, match="relative.*distillation token"):
        DistilledViT(TINY)
    with pytest.raises(ValueError, match="pos_embed must be one of"):
        ViTConfig(image_size=16, patch_size=4, pos_embed="rotary")
