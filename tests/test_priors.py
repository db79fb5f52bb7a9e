"""Receptive fields, attention-row variation and shifts (vit_edu.explain.receptive_field / .shifts), and the
shipped priors JSON that chapter 9 reads."""

import json

import pytest
import torch
from torch import nn

from vit_edu import VisionTransformer, ViTConfig
from vit_edu.explain.receptive_field import (attention_row_variation, cnn_stage_outputs, effective_receptive_field,
                                             input_gradient_maps, mean_total_variation, receptive_field_stats,
                                             unit_centre, vit_block_outputs)
from vit_edu.explain.shifts import (equivariance_error, prediction_changes, shift_features, shift_images,
                                    with_circular_padding)
from vit_edu.training.checkpoint import CHECKPOINTS
from vit_edu.training.cnn import SmallCNN


def tiny_vit(**overrides) -> VisionTransformer:
    torch.manual_seed(0)
    cfg = dict(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2, mlp_dim=32)
    return VisionTransformer(ViTConfig(**{**cfg, **overrides})).eval()


def test_one_conv_receptive_field_is_its_kernel():
    conv = nn.Conv2d(3, 4, 3, bias=False)  # no padding: a 9×9 image gives a 7×7 map, centre (3, 3)
    nn.init.constant_(conv.weight, 0.5)
    grads = input_gradient_maps(lambda x: [conv(x)], torch.rand(2, 3, 9, 9), 0)  # (B, H, W)
    support = grads[0] > 0
    assert support.sum().item() == 9
    assert support[3:6, 3:6].all()  # input pixels 3..5 feed output (3, 3)
    stats = receptive_field_stats(grads, (4.0, 4.0), threshold=0.0)
    assert stats["share"] == pytest.approx(9 / 81)
    assert stats["radius"] == pytest.approx(2**0.5)  # the kernel's corners hold the last of the mass


def test_one_block_vit_reaches_every_pixel_and_its_embedding_one_patch():
    vit = tiny_vit()
    stats = effective_receptive_field(lambda x: vit_block_outputs(vit, x), torch.rand(3, 3, 16, 16), threshold=0.0)
    assert len(stats) == 2  # entering block 1, after block 1
    assert stats[0]["share"] == pytest.approx(16 / 256)  # the patch embedding sees its own 4×4 patch
    assert stats[1]["share"] == 1.0  # one attention layer mixes every patch in


def test_cnn_stage_outputs_and_theoretical_receptive_field():
    cnn = SmallCNN(3, width=4).eval()
    maps = cnn_stage_outputs(cnn, torch.rand(2, 3, 32, 32))
    assert [tuple(m.shape[-3:]) for m in maps] == [(4, 32, 32), (4, 32, 32), (8, 16, 16), (8, 16, 16), (16, 8, 8)]
    grads = input_gradient_maps(lambda x: cnn_stage_outputs(cnn, x), torch.rand(2, 3, 32, 32), 1)
    rows, cols = (grads[0] > 0).nonzero().unbind(1)
    assert rows.min() >= 14 and rows.max() <= 18 and cols.min() >= 14 and cols.max() <= 18  # two 3×3 convs: 5×5


def test_unit_centre_and_radius_of_a_point():
    assert unit_centre((32, 32), (4, 4)) == (19.5, 19.5)  # patch (2, 2) of 8×8 pixels covers 16..23
    assert unit_centre((32, 32), (32, 32)) == (16.0, 16.0)
    point = torch.zeros(1, 5, 5)
    point[0, 2, 2] = 1.0
    assert receptive_field_stats(point, (2.0, 2.0)) == pytest.approx({"share": 1 / 25, "radius": 0.0})


def test_mean_total_variation():
    same = torch.tensor([[0.2, 0.8]] * 4)
    assert mean_total_variation(same) == 0.0
    disjoint = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert mean_total_variation(disjoint) == 1.0
    half = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    assert mean_total_variation(half) == pytest.approx(0.5)


def test_attention_rows_vary_with_the_input():
    vit = tiny_vit(depth=2)
    variation = attention_row_variation(vit, torch.rand(8, 3, 16, 16))
    assert len(variation) == 2 and all(0 < v <= 1 for v in variation)


def test_unpadded_conv_is_exactly_equivariant_to_circular_shifts():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)
    images = torch.rand(4, 3, 16, 16)
    errors = equivariance_error(lambda x: [conv(x)], images, 2)
    assert errors[0] < 1e-6


def test_circular_padding_makes_a_cnn_equivariant_to_whole_stride_shifts():
    torch.manual_seed(0)
    cnn = SmallCNN(3, width=4).eval()
    images = torch.rand(4, 3, 32, 32)
    zero_padded = equivariance_error(lambda x: cnn_stage_outputs(cnn, x), images, 8)
    circular = with_circular_padding(cnn)
    assert cnn.features[0].padding_mode == "zeros"  # the original is left as it was
    errors = equivariance_error(lambda x: cnn_stage_outputs(circular, x), images, 8)
    assert max(errors) < 1e-5  # 8 px is a whole number of positions at strides 1, 2 and 4
    assert zero_padded[0] > 1e-3  # the image borders break it


def test_vit_without_positions_is_equivariant_to_one_patch_shifts():
    vit = tiny_vit(pos_embed="none", pool="mean", depth=2)
    images = torch.rand(4, 3, 16, 16)
    errors = equivariance_error(lambda x: vit_block_outputs(vit, x), images, 4)  # one patch: tokens only reorder
    assert max(errors) < 1e-5
    changes = prediction_changes(vit, images, torch.zeros(4, dtype=torch.long), 4)
    assert changes["flipped"] == 0.0 and changes["true_prob_change"] < 1e-6
    assert min(equivariance_error(lambda x: vit_block_outputs(vit, x), images, 1)) > 1e-3  # not so for 1 pixel


def test_shift_features_interpolates_fractions():
    f = torch.arange(4.0).reshape(1, 1, 1, 4)  # columns 0 1 2 3
    whole, first = shift_features(f, 1)
    assert first == 1 and whole.flatten().tolist() == [0.0, 1.0, 2.0]
    part, first = shift_features(f, 0.25)
    assert first == 1 and part.flatten().tolist() == [0.75, 1.75, 2.75]


def test_bad_arguments_name_the_values():
    with pytest.raises(ValueError, match="got 40"):
        shift_images(torch.rand(1, 3, 32, 32), 40)
    with pytest.raises(ValueError, match="got 3.5"):
        shift_features(torch.rand(1, 2, 4, 4), 3.5)
    with pytest.raises(ValueError, match="threshold.*got 1.5"):
        receptive_field_stats(torch.rand(1, 4, 4), (1.0, 1.0), threshold=1.5)
    with pytest.raises(ValueError, match="query 99"):
        attention_row_variation(tiny_vit(), torch.rand(2, 3, 16, 16), query=99)
    with pytest.raises(ValueError, match="layer 5"):
        input_gradient_maps(lambda x: [x], torch.rand(1, 3, 4, 4), 5)
    with pytest.raises(ValueError, match="sum to 1"):
        mean_total_variation(torch.ones(3, 2))
    with pytest.raises(ValueError, match="no Conv2d"):
        with_circular_padding(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="labels must have shape"):
        prediction_changes(tiny_vit(), torch.rand(2, 3, 16, 16), torch.zeros(3, dtype=torch.long), 1)


def test_shipped_priors_json_has_what_chapter_9_reads():
    data = json.loads((CHECKPOINTS / "vit_vs_cnn_priors.json").read_text())  # shipped: a missing file fails
    assert len(data["runs"]) >= 3 and {"torch", "threads", "seconds", "images"} <= set(data)
    for run in data["runs"]:
        assert len(run["ViT"]["receptive_field"]) == len(data["vit_layers"])
        assert len(run["CNN"]["receptive_field"]) == len(data["cnn_layers"])
        assert len(run["ViT"]["attention_row_variation"]) == len(data["vit_layers"]) - 1
        assert run["CNN"]["kernel_variation"] == 0.0
        for model in ("ViT", "CNN"):
            assert set(run[model]["shifts"]) == {f"{s} px" for s in data["shifts"]}
