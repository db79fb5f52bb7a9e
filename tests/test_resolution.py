import dataclasses

import pytest
import torch

from vit_edu import ViTConfig, VisionTransformer, interpolate_pos_embed
from vit_edu.resolution import change_resolution

CFG = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2, mlp_dim=32)


def test_bigger_images_fail_with_a_clear_error_then_run_after_resizing():
    torch.manual_seed(0)
    model = VisionTransformer(CFG).eval()
    with pytest.raises(ValueError, match=r"image size 24×24 does not match the model's 16×16"):
        model(torch.rand(1, 3, 24, 24))
    big = change_resolution(model, 24)
    assert big.config.image_size == (24, 24) and big.config.grid_size == (6, 6)
    assert big(torch.rand(2, 3, 24, 24)).shape == (2, 3)
    assert not big.training


def test_weights_are_kept_and_cls_row_untouched():
    torch.manual_seed(0)
    model = VisionTransformer(CFG)
    big = change_resolution(model, (24, 32))
    old, new = model.pos_embed.embedding, big.pos_embed.embedding
    assert new.shape == (1, 1 + 6 * 8, 16)
    torch.testing.assert_close(new[:, :1], old[:, :1])
    torch.testing.assert_close(new, interpolate_pos_embed(old, (6, 8)))
    torch.testing.assert_close(big.blocks[0].attn.qkv.weight, model.blocks[0].attn.qkv.weight)
    assert big.pos_embed.embedding.data_ptr() != old.data_ptr()


def test_same_size_gives_the_same_outputs():
    torch.manual_seed(0)
    model = VisionTransformer(dataclasses.replace(CFG, pool="mean")).eval()
    x = torch.rand(2, 3, 16, 16)
    torch.testing.assert_close(change_resolution(model, 16)(x), model(x))


def test_sincos_table_is_recomputed_for_the_new_grid():
    model = VisionTransformer(dataclasses.replace(CFG, pos_embed="sincos"))
    assert change_resolution(model, 32).pos_embed.embedding.shape == (1, 65, 16)


def test_new_size_must_divide_by_the_patch_size():
    with pytest.raises(ValueError, match="image height 30 is not divisible by patch size 4"):
        change_resolution(VisionTransformer(CFG), 30)
