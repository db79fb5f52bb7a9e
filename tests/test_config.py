import dataclasses
import json

import pytest

from vit_edu import CONFIGS, ViTConfig


def test_derived_sizes_for_vit_b16():
    cfg = CONFIGS["vit-b/16"]
    assert cfg.image_size == (224, 224)
    assert cfg.grid_size == (14, 14)
    assert cfg.num_patches == 196
    assert cfg.seq_len == 197
    assert cfg.head_dim == 64
    assert cfg.patch_dim == 768


def test_non_square_image_and_mean_pool():
    cfg = ViTConfig(image_size=(32, 48), patch_size=8, embed_dim=64, num_heads=4, mlp_dim=128, pool="mean")
    assert cfg.grid_size == (4, 6)
    assert cfg.num_patches == 24
    assert cfg.seq_len == 24  # no CLS token when pooling by mean


@pytest.mark.parametrize(
    "name,dim,depth,heads,mlp,patch",
    [
        ("vit-ti/16", 192, 12, 3, 768, 16),
        ("vit-s/16", 384, 12, 6, 1536, 16),
        ("vit-b/16", 768, 12, 12, 3072, 16),
        ("vit-b/32", 768, 12, 12, 3072, 32),
        ("vit-l/16", 1024, 24, 16, 4096, 16),
        ("vit-l/32", 1024, 24, 16, 4096, 32),
        ("vit-h/14", 1280, 32, 16, 5120, 14),
    ],
)
def test_presets_match_the_papers(name, dim, depth, heads, mlp, patch):
    cfg = CONFIGS[name]
    assert (cfg.embed_dim, cfg.depth, cfg.num_heads, cfg.mlp_dim, cfg.patch_size) == (dim, depth, heads, mlp, patch)
    assert (cfg.qkv_bias, cfg.ln_eps, cfg.pool, cfg.norm) == (True, 1e-6, "cls", "pre")


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"image_size": 30}, "image height 30 is not divisible by patch size 16"),
        ({"image_size": (32, 40)}, "image width 40 is not divisible by patch size 16"),
        ({"num_heads": 5}, "embed_dim 768 is not divisible by num_heads 5"),
        ({"pool": "max"}, "pool must be one of"),
        ({"pos_embed": "rope"}, "pos_embed must be one of"),
        ({"norm": "sandwich"}, "norm must be one of"),
        ({"dropout": 1.0}, "dropout must be in"),
        ({"depth": 0}, "depth must be a positive integer"),
        ({"image_size": (32, 32, 3)}, "image_size must be an int or a pair"),
        ({"embed_dim": 30, "num_heads": 3, "pos_embed": "sincos"}, "sincos' needs embed_dim divisible by 4"),
        ({"input_norm": (0.5, 0.0)}, "needs std > 0"),
        ({"input_norm": (0.5,)}, "input_norm=\\(mean, std\\)"),
    ],
)
def test_invalid_combinations_raise_at_construction(changes, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(CONFIGS["vit-b/16"], **changes)


def test_to_dict_round_trips():
    cfg = dataclasses.replace(CONFIGS["vit-ti/16"], image_size=(32, 48), num_classes=10, input_norm=(0.5, 0.25))
    assert ViTConfig(**cfg.to_dict()) == cfg
    assert ViTConfig(**json.loads(json.dumps(cfg.to_dict()))) == cfg
