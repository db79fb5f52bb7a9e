"""The cost calculator: its formulas against real models, and its view over every control value."""

from __future__ import annotations

import itertools
import random
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from vit_edu import CONFIGS, ViTConfig, VisionTransformer, count_parameters
from vit_edu.widgets.cost_calculator import (
    CONTROLS,
    FIGSIZE,
    FLOP_PARTS,
    PARAM_PARTS,
    SITE_CONTROLS,
    START,
    cost_calculator_view,
    invalid_reason,
    layer_macs,
    vit_costs,
    vit_macs,
    vit_parameters,
)


def meta_model(image_size, patch_size, dim, depth, heads, *, pool="cls", num_classes=1000, mlp_ratio=4):
    config = ViTConfig(
        image_size=image_size, patch_size=patch_size, embed_dim=dim, depth=depth, num_heads=heads,
        mlp_dim=mlp_ratio * dim, num_classes=num_classes, pool=pool,
    )
    with torch.device("meta"):
        return VisionTransformer(config).eval()


# ---------------------------------------------------------------- formulas against real models

MODEL_CASES = [
    (224, 16, 768, 12, 12, "cls", 1000),
    (224, 32, 768, 12, 12, "cls", 1000),
    (224, 14, 1280, 32, 16, "cls", 1000),
    (384, 16, 1024, 24, 16, "cls", 1000),
    (32, 8, 64, 2, 4, "cls", 10),
    (32, 8, 64, 3, 4, "mean", 10),
    (64, 16, 192, 6, 3, "mean", 37),
    (448, 8, 192, 1, 3, "cls", 1),
]


@pytest.mark.parametrize("image_size, patch, dim, depth, heads, pool, classes", MODEL_CASES)
def test_parameter_formula_matches_a_real_model(image_size, patch, dim, depth, heads, pool, classes):
    model = meta_model(image_size, patch, dim, depth, heads, pool=pool, num_classes=classes)
    params = vit_parameters(image_size, patch, dim, depth, num_classes=classes, cls_token=pool == "cls")
    assert params["total"] == count_parameters(model)
    assert params["total"] == sum(params[name] for name in PARAM_PARTS)
    # Part by part, against the model's own named parameters.
    named = dict(model.named_parameters())
    assert params["patch embedding"] == sum(p.numel() for k, p in named.items() if k.startswith("patch_embed."))
    assert params["position + CLS"] == sum(
        p.numel() for k, p in named.items() if k.startswith("pos_embed.") or k == "cls_token"
    )
    assert params["attention"] == sum(p.numel() for k, p in named.items() if ".attn." in k)
    assert params["MLP"] == sum(p.numel() for k, p in named.items() if ".mlp." in k)
    assert params["LayerNorms"] == sum(p.numel() for k, p in named.items() if "norm" in k)
    assert params["head"] == sum(p.numel() for k, p in named.items() if k.startswith("head."))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_costs_match_every_preset(name):
    c = CONFIGS[name]
    model = meta_model(224, c.patch_size, c.embed_dim, c.depth, c.num_heads)
    costs = vit_costs(224, c.patch_size, c.embed_dim, c.depth, c.num_heads)
    assert costs["params"]["total"] == count_parameters(model)
    assert costs["seq_len"] == c.seq_len and costs["num_patches"] == c.num_patches
    assert costs["head_dim"] == c.head_dim


@pytest.mark.parametrize("image_size, patch, dim, depth, heads, pool, classes", MODEL_CASES)
def test_macs_match_pytorch_flop_counter(image_size, patch, dim, depth, heads, pool, classes):
    """FlopCounterMode counts 2 FLOPs per multiply-add of every matmul, convolution and attention call."""
    model = meta_model(image_size, patch, dim, depth, heads, pool=pool, num_classes=classes)
    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, image_size, image_size))
    macs = vit_macs(image_size, patch, dim, depth, num_classes=classes, cls_token=pool == "cls")
    assert 2 * macs["total"] == counter.get_total_flops()
    assert macs["total"] == sum(macs[name] for name in FLOP_PARTS)


def test_vit_b16_numbers_from_the_paper_setting():
    c = vit_costs(224, 16, 768, 12, 12)
    assert (c["num_patches"], c["seq_len"], c["attention_weights_per_head"]) == (196, 197, 38_809)
    assert vit_costs(224, 8, 768, 12, 12)["attention_weights_per_head"] == 616_225
    assert vit_costs(448, 16, 768, 12, 12)["attention_weights_per_head"] == 616_225
    assert c["params"]["total"] == 86_567_656  # torchvision's vit_b_16
    assert c["attention_bytes"] == 12 * 197 * 197 * 4


def test_layer_terms_cross_where_the_formula_says():
    d = 768
    at_2d = layer_macs(2 * d, d)
    assert at_2d["attention"] == at_2d["projections"]  # 2S²D = 4SD²  <=>  S = 2D
    at_4d = layer_macs(4 * d, d)
    assert at_4d["attention"] == at_4d["MLP"]  # 2S²D = 8SD²  <=>  S = 4D


def test_invalid_combinations_raise_with_a_reason():
    assert invalid_reason(224, 16, 768, 12) is None
    with pytest.raises(ValueError, match="not divisible by patch size 14"):
        vit_costs(64, 14, 768, 12, 12)
    with pytest.raises(ValueError, match="not divisible by 12 heads"):
        vit_costs(224, 16, 1024, 12, 12)


# ---------------------------------------------------------------- the view over its controls

def all_settings_one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def sample_of_combinations(k=40, seed=0):
    combos = list(itertools.product(*CONTROLS.values()))
    rng = random.Random(seed)
    return [dict(zip(CONTROLS, combo)) for combo in rng.sample(combos, k)]


def check_view(settings):
    fig, caption = cost_calculator_view(**settings)
    try:
        reason = invalid_reason(settings["image_size"], settings["patch_size"], settings["dim"], settings["heads"])
        if reason:
            assert caption.startswith("<b>Not a valid ViT.</b>")
            if settings["image_size"] % settings["patch_size"]:
                assert f"image size {settings['image_size']} is not divisible by patch size" in caption
            if settings["dim"] % settings["heads"]:
                assert f"D = {settings['dim']} is not divisible by {settings['heads']} heads" in caption
            assert len(fig.axes) == 0
            assert "Not a valid ViT" in fig.texts[0].get_text()
            return
        costs = vit_costs(**settings)
        n, s = costs["num_patches"], costs["seq_len"]
        assert n == (settings["image_size"] // settings["patch_size"]) ** 2 and s == n + 1
        assert f"= {n:,} patches, S = {s:,} tokens" in caption
        assert f"{costs['params']['total']:,} parameters" in caption
        assert f"{costs['macs']['total']:,} multiply-adds" in caption
        assert f"{settings['heads']} heads × {s:,}² float32 values" in caption
        (ax,) = fig.axes
        widths = [bar.get_width() for bar in ax.patches]
        assert len(widths) == len(FLOP_PARTS)
        assert sum(widths) == pytest.approx(100)
        assert widths == pytest.approx([100 * costs["macs"][p] / costs["macs"]["total"] for p in FLOP_PARTS])
        assert f"S={s:,}" in ax.get_title()
        share = re.search(r"attention ([\d.]+)%", caption)
        assert float(share.group(1)) == pytest.approx(widths[FLOP_PARTS.index("attention")], abs=0.05)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(all_settings_one_at_a_time()), ids=str)
def test_view_over_each_control(settings):
    check_view(settings)


@pytest.mark.parametrize("settings", sample_of_combinations(), ids=str)
def test_view_over_sample_of_combinations(settings):
    check_view(settings)


def test_numbers_over_the_full_grid():
    """Every combination of the full controls: valid ones have consistent numbers, invalid ones a reason."""
    valid = 0
    for combo in itertools.product(*CONTROLS.values()):
        settings = dict(zip(CONTROLS, combo))
        reason = invalid_reason(settings["image_size"], settings["patch_size"], settings["dim"], settings["heads"])
        if reason:
            with pytest.raises(ValueError):
                vit_costs(**settings)
            continue
        valid += 1
        c = vit_costs(**settings)
        d, s, depth = settings["dim"], c["seq_len"], settings["depth"]
        assert c["macs"]["attention"] == depth * 2 * s * s * d
        assert c["macs"]["projections"] == depth * 4 * s * d * d
        assert c["macs"]["MLP"] == depth * 8 * s * d * d
        assert c["attention_bytes"] == settings["heads"] * s * s * 4
        # Attention dominates the linear layers exactly when S > 6D (2S²D > 12SD²).
        linear = c["macs"]["projections"] + c["macs"]["MLP"]
        assert (c["macs"]["attention"] > linear) == (s > 6 * d)
    assert 0 < valid < len(list(itertools.product(*CONTROLS.values())))


def test_site_controls_are_a_small_subset():
    frames = 1
    for name, values in SITE_CONTROLS.items():
        assert set(values) <= set(CONTROLS[name])
        frames *= len(values)
    assert frames <= 60
    for settings in (dict(zip(SITE_CONTROLS, combo)) for combo in itertools.product(*SITE_CONTROLS.values())):
        check_view({**START, **settings})
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)


def test_invalid_frame_keeps_the_valid_frame_size():
    """The widget must not jump in height when a control makes the combination impossible."""
    valid, _ = cost_calculator_view(**START)
    invalid, caption = cost_calculator_view(**{**START, "image_size": 384, "patch_size": 14})
    try:
        assert caption.startswith("<b>Not a valid ViT.</b>")
        assert tuple(valid.get_size_inches()) == tuple(invalid.get_size_inches()) == FIGSIZE
    finally:
        plt.close(valid)
        plt.close(invalid)
