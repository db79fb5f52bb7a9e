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
from vit_edu.explain.shifts import (equivariance_error, map_stride, prediction_changes, shift_features, shift_images,
                                    unmoved_error, with_circular_padding)
from vit_edu.training.checkpoint import CHECKPOINTS
from vit_edu.training.cnn import SmallCNN
from vit_edu.training.priors import object_in_view, untrained_vit


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


def test_translation_moves_columns_and_fills_with_the_first_column():
    images = torch.arange(2 * 3 * 4 * 6, dtype=torch.float32).reshape(2, 3, 4, 6)
    moved = shift_images(images, 2, "translation")
    assert torch.equal(moved[..., 2:], images[..., :4])  # columns 4 and 5 left the image
    assert torch.equal(moved[..., 0], images[..., 0]) and torch.equal(moved[..., 1], images[..., 0])
    assert torch.equal(shift_images(images, 2, "circular")[..., :2], images[..., 4:])  # wrapped round instead
    assert torch.equal(shift_images(images, 0, "translation"), images)


def test_unpadded_conv_is_exactly_equivariant_to_translations_where_both_maps_are_defined():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)  # output column j reads input columns j..j+2: the fill reaches only columns < 2
    errors = equivariance_error(lambda x: [conv(x)], torch.rand(4, 3, 16, 16), 2, "translation")
    assert errors[0] < 1e-6


def test_translation_by_a_patch_reaches_every_token_through_attention():
    vit = tiny_vit(pos_embed="none", pool="mean", depth=1)
    images = torch.rand(4, 3, 16, 16)
    errors = equivariance_error(lambda x: vit_block_outputs(vit, x), images, 4, "translation")
    assert errors[0] < 1e-5  # the embedding: every compared token holds the same patch as before
    assert errors[1] > 1e-3  # after attention, the new edge patch has changed every token
    circular = equivariance_error(lambda x: vit_block_outputs(vit, x), images, 4, "circular")
    assert max(circular) < 1e-5  # the circular shift only reorders the tokens


def test_unmoved_error_is_the_score_of_a_map_that_ignores_the_shift():
    fixed = torch.rand(2, 5, 4, 8)  # (B, D, h, w): the same map whatever the input
    images = torch.rand(2, 3, 8, 8)
    ignores_input = lambda x: [fixed]  # noqa: E731
    assert equivariance_error(ignores_input, images, 3) == pytest.approx(unmoved_error(ignores_input, images, 3))
    ramp = torch.arange(8.0).expand(1, 1, 8, 8)  # (B, C, H, W) columns 0..7
    # unmoved: every compared entry is off by 1 (56 entries); the reference holds 0..6 in each of 8 rows
    assert unmoved_error(lambda x: [x], ramp, 1) == pytest.approx([(56 / (8 * 91)) ** 0.5])
    assert equivariance_error(lambda x: [x], ramp, 1, "translation") == pytest.approx([0.0])
    assert map_stride(32, 4) == 8 and map_stride(32, 32) == 1


def test_object_in_view_and_untrained_control():
    masks = torch.zeros(3, 8, 8, dtype=torch.bool)
    masks[0, 3:5, 2:4] = True  # clear of both edges
    masks[1, 3:5, 6:8] = True  # at the right edge: a 2-px move pushes part of it out
    masks[2, 3:5, 0:2] = True  # in the first column: the edge fill would copy it
    assert object_in_view(masks, 2).tolist() == [True, False, False]
    assert object_in_view(masks, 1).tolist() == [True, False, False]
    a, b = untrained_vit(0), untrained_vit(0)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))  # the seed fixes the weights
    assert not torch.equal(a.patch_embed.proj.weight, untrained_vit(1).patch_embed.proj.weight)


def test_bad_arguments_name_the_values():
    with pytest.raises(ValueError, match="got 40"):
        shift_images(torch.rand(1, 3, 32, 32), 40)
    with pytest.raises(ValueError, match="mode must be one of.*got 'wrap'"):
        shift_images(torch.rand(1, 3, 32, 32), 1, "wrap")
    with pytest.raises(ValueError, match="got 0"):
        unmoved_error(lambda x: [x], torch.rand(1, 3, 8, 8), 0)
    with pytest.raises(ValueError, match="got shape \\(8, 8\\) and 2"):
        object_in_view(torch.zeros(8, 8, dtype=torch.bool), 2)
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
    assert len(data["runs"]) >= 3 and {"torch", "threads", "seconds", "images", "shift_modes"} <= set(data)
    assert data["vit_strides"] == [8] * len(data["vit_layers"]) and data["cnn_strides"] == [1, 1, 2, 2, 4]
    keys = {f"{s} px" for s in data["shifts"]}
    for run in data["runs"]:
        assert len(run["ViT"]["receptive_field"]) == len(data["vit_layers"])
        assert len(run["CNN"]["receptive_field"]) == len(data["cnn_layers"])
        for arm in ("attention_row_variation", "attention_row_variation_untrained"):
            assert len(run["ViT"][arm]) == len(data["vit_layers"]) - 1
        assert set(run["object_in_view"]) == keys
        for model, layers in (("ViT", data["vit_layers"]), ("CNN", data["cnn_layers"])):
            assert set(run[model]["shifts"]) == set(data["shift_modes"])
            assert set(run[model]["unmoved_error"]) == keys
            for mode in data["shift_modes"]:
                assert set(run[model]["shifts"][mode]) == keys
                for row in run[model]["shifts"][mode].values():
                    assert len(row["equivariance_error"]) == len(layers)
                    assert {"flipped", "flipped_object_in_view", "true_prob_change"} <= set(row)
