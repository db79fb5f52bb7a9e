import math

import pytest
import torch
from torch import nn

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.explain import (
    attention_rollout,
    cls_attention,
    fuse_heads,
    logit_lens,
    localisation_score,
    mean_attention_distance,
    object_fraction,
    occlusion_sensitivity,
    patch_distances,
    position_similarity,
)
from vit_edu.position import sincos_2d


def random_attention(layers: int, b: int = 2, h: int = 3, s: int = 5, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, s, s, generator=gen).softmax(-1) for _ in range(layers)]


def reference_rollout(attentions, fusion, discard_ratio):
    """A loop over images and rows, written independently of the vectorised version."""
    b, _, s, _ = attentions[0].shape
    out = torch.zeros(b, s, s)
    for i in range(b):
        r = torch.eye(s)
        for a in attentions:
            f = getattr(a[i], fusion)(0) if fusion == "mean" else getattr(a[i], fusion)(0).values
            f = f.clone()
            k = int(discard_ratio * s)
            for row in range(s):
                order = f[row].argsort()
                for col in order[:k].tolist():
                    if col != row:
                        f[row, col] = 0.0
            f = f + torch.eye(s)
            for row in range(s):
                f[row] = f[row] / f[row].sum()
            r = f @ r
        out[i] = r
    return out


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard_ratio", [0.0, 0.4, 0.9])
def test_rollout_matches_a_loop_reference(fusion, discard_ratio):
    attn = random_attention(3)
    torch.testing.assert_close(attention_rollout(attn, fusion, discard_ratio), reference_rollout(attn, fusion, discard_ratio))


def test_rollout_rows_sum_to_one_and_one_layer_is_half_identity():
    attn = random_attention(1)
    rollout = attention_rollout(attn)
    torch.testing.assert_close(rollout, (attn[0].mean(1) + torch.eye(5)) / 2)
    torch.testing.assert_close(attention_rollout(random_attention(4)).sum(-1), torch.ones(2, 5))


def test_rollout_of_self_attention_only_is_the_identity():
    attn = [torch.eye(4).expand(1, 2, 4, 4)] * 3
    torch.testing.assert_close(attention_rollout(attn), torch.eye(4)[None])


def test_rollout_multiplies_layers_in_order():
    a1, a2 = random_attention(1, seed=1)[0], random_attention(1, seed=2)[0]
    step = lambda a: (a.mean(1) + torch.eye(5)) / 2  # noqa: E731
    torch.testing.assert_close(attention_rollout([a1, a2]), step(a2) @ step(a1))
    assert not torch.allclose(attention_rollout([a1, a2]), step(a1) @ step(a2))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"head_fusion": "sum"}, "head_fusion must be one of"), ({"discard_ratio": 1.0}, r"discard_ratio must be in \[0, 1\)")],
)
def test_rollout_rejects_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attention_rollout(random_attention(2), **kwargs)


def test_attention_lists_are_checked():
    with pytest.raises(ValueError, match="attentions is empty"):
        attention_rollout([])
    with pytest.raises(ValueError, match=r"attentions\[1\] has shape \(2, 3, 4, 4\)"):
        attention_rollout([torch.rand(2, 3, 5, 5), torch.rand(2, 3, 4, 4)])
    with pytest.raises(ValueError, match=r"must have 4 dimensions \(B, h, S, S\)"):
        cls_attention([torch.rand(3, 5, 5)])


def test_cls_attention_is_row_zero_without_the_prefix_column():
    attn = random_attention(2)
    out = cls_attention(attn)
    assert out.shape == (2, 2, 3, 4)
    torch.testing.assert_close(out[1], attn[1][:, :, 0, 1:])
    assert (out.sum(-1) < 1).all()
    with pytest.raises(ValueError, match="needs a CLS token"):
        cls_attention(attn, num_prefix_tokens=0)


def test_object_fraction_is_row_major_per_patch_coverage():
    masks = torch.zeros(1, 8, 8, dtype=torch.bool)
    masks[0, 0:4, 4:8] = True  # the whole top-right patch
    masks[0, 4:6, 0:4] = True  # half of the bottom-left patch
    torch.testing.assert_close(object_fraction(masks, 4), torch.tensor([[0.0, 1.0, 0.5, 0.0]]))
    with pytest.raises(ValueError, match="mask size 8×8 is not divisible by patch_size 3"):
        object_fraction(masks, 3)


def test_localisation_score_uniform_map_equals_the_baseline():
    fraction = torch.tensor([[0.0, 1.0, 0.5, 0.0], [0.2, 0.2, 0.0, 0.0]])
    mass, baseline = localisation_score(torch.ones(2, 4), fraction)
    torch.testing.assert_close(mass, baseline)
    torch.testing.assert_close(baseline, torch.tensor([0.375, 0.1]))
    mass, _ = localisation_score(torch.tensor([[0.0, 3.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]), fraction)
    torch.testing.assert_close(mass, torch.tensor([0.875, 0.2]))  # renormalised: 3/4·1 + 1/4·0.5
    with pytest.raises(ValueError, match=r"weights \(2, 4\) and object fractions \(2, 3\) must match"):
        localisation_score(torch.ones(2, 4), torch.ones(2, 3))


class OnePatchModel(nn.Module):
    """Logits depend only on the mean of the top-left 4×4 patch."""

    def forward(self, x):
        v = x[:, :, :4, :4].mean(dim=(1, 2, 3))
        return torch.stack([10 * v, torch.zeros_like(v)], dim=1)


def test_occlusion_only_moves_when_the_relevant_patch_is_covered():
    images = torch.zeros(2, 3, 8, 8)
    images[:, :, :4, :4] = 1.0
    drops = occlusion_sensitivity(OnePatchModel(), images, torch.tensor([0, 1]), patch_size=4, fill=0.0)
    assert drops.shape == (2, 4)
    assert drops[0, 0] > 0.4 and drops[1, 0] < -0.4  # class 0 loses, class 1 gains
    torch.testing.assert_close(drops[:, 1:], torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"labels must have shape \(2,\)"):
        occlusion_sensitivity(OnePatchModel(), images, torch.tensor([0]), patch_size=4)


def test_occlusion_leaves_the_images_unchanged():
    images = torch.rand(1, 3, 8, 8)
    before = images.clone()
    occlusion_sensitivity(OnePatchModel(), images, torch.tensor([0]), patch_size=4)
    assert torch.equal(images, before)


def test_patch_distances_in_pixels():
    d = patch_distances((2, 2), patch_size=8)
    torch.testing.assert_close(d[0], torch.tensor([0.0, 8.0, 8.0, 8 * math.sqrt(2)]))


def test_mean_attention_distance_self_is_zero_and_uniform_is_the_mean_distance():
    s = 1 + 4
    own = torch.eye(s).expand(2, 3, s, s)
    torch.testing.assert_close(mean_attention_distance([own], (2, 2), 8), torch.zeros(1, 3))
    uniform = torch.full((1, 2, s, s), 1 / s)
    expected = patch_distances((2, 2), 8).mean()  # renormalised over the 4 patch keys
    torch.testing.assert_close(mean_attention_distance([uniform, uniform], (2, 2), 8), torch.full((2, 2), expected.item()))
    with pytest.raises(ValueError, match=r"S = 5 tokens, but a 3×3 grid plus 1 prefix token\(s\) makes 10"):
        mean_attention_distance([uniform], (3, 3), 8)


def test_position_similarity_of_sincos_table_decays_with_distance():
    sim = position_similarity(sincos_2d(4, 32))
    torch.testing.assert_close(sim.diagonal(), torch.ones(16))
    torch.testing.assert_close(sim, sim.T)
    assert sim[0, 1] > sim[0, 2] > sim[0, 3]  # along the first row
    assert sim[5, 6] > sim[5, 15]


def test_trained_shape_functions_fit_a_real_model():
    cfg = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32)
    model = VisionTransformer(cfg).eval()
    _, attn = model(torch.rand(2, 3, 16, 16), return_attention=True)
    assert cls_attention(attn).shape == (2, 2, 2, 16)
    assert attention_rollout(attn).shape == (2, 17, 17)
    assert mean_attention_distance(attn, cfg.grid_size, cfg.patch_size).shape == (2, 2)


def test_fuse_heads_and_empty_maps_are_rejected_clearly():
    attn = random_attention(1)[0]
    torch.testing.assert_close(fuse_heads(attn, "max"), attn.amax(1))
    torch.testing.assert_close(fuse_heads(attn[0], "min", dim=0), attn[0].amin(0))
    with pytest.raises(ValueError, match="head_fusion must be one of"):
        fuse_heads(attn, "median")
    with pytest.raises(ValueError, match=r"weights of row\(s\) \[1\] sum to 0"):
        localisation_score(torch.tensor([[1.0, 0.0], [0.0, 0.0]]), torch.ones(2, 2))


def test_logit_lens_ends_at_the_models_logits_and_reads_each_layer():
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(image_size=16, patch_size=4, num_classes=5, embed_dim=32, depth=3,
                                        num_heads=2, mlp_dim=64)).eval()
    with torch.no_grad():
        model.head.weight.normal_()
        images = torch.rand(2, 3, 16, 16)
        lens = logit_lens(model, images)
        assert lens.shape == (3, 2, 5)
        torch.testing.assert_close(lens[-1], model(images), atol=1e-5, rtol=0)
        # Layer 1's row is the readout applied to the first block's output, computed here by hand.
        hidden, _ = model.forward_layers(images)
        torch.testing.assert_close(lens[0], model.head(model.norm(hidden[0])[:, 0]))
        assert not torch.allclose(lens[0], lens[-1])


def test_logit_lens_wants_a_batch_of_images():
    model = VisionTransformer(ViTConfig(image_size=16, patch_size=4, num_classes=5, embed_dim=32, depth=1,
                                        num_heads=2, mlp_dim=64))
    with pytest.raises(ValueError, match="images"):
        logit_lens(model, torch.rand(3, 16, 16))
