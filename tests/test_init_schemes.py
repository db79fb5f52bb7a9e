import json
from pathlib import Path

import pytest
import torch
from torch import nn

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.training.init_schemes import SCHEMES, STD, reinit

CONFIG = ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=64, depth=2, num_heads=4, mlp_dim=128)
SHIPPED = Path(__file__).resolve().parents[1] / "vit_edu" / "checkpoints" / "init_schemes.json"


def fresh(scheme, seed=0):
    torch.manual_seed(seed + 100)
    model = VisionTransformer(CONFIG)
    torch.manual_seed(seed)
    return reinit(model, scheme)


def test_book_scheme_equals_a_fresh_model():
    torch.manual_seed(0)
    expected = VisionTransformer(CONFIG).state_dict()
    got = fresh("book").state_dict()
    assert got.keys() == expected.keys()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0)


def test_zero_pos_differs_from_book_only_in_the_table():
    book, zero = fresh("book").state_dict(), fresh("zero-pos").state_dict()
    assert torch.count_nonzero(zero["pos_embed.embedding"]) == 0
    assert book["pos_embed.embedding"].abs().sum() > 0
    for key in book:
        if key != "pos_embed.embedding":
            assert torch.equal(book[key], zero[key]), key


def test_deit_scheme_is_an_uncut_normal_with_std_002():
    model = fresh("deit")
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    weights = torch.cat([m.weight.flatten() for m in linears] + [model.pos_embed.embedding.flatten()])
    assert weights.std().item() == pytest.approx(STD, rel=0.03)
    # trunc_normal_'s default cut is at ±2 in absolute value (100σ): about 4.6% of a normal lies past ±2σ
    beyond = (weights.abs() > 2 * STD).float().mean().item()
    assert 0.035 < beyond < 0.06
    assert all(torch.count_nonzero(m.bias) == 0 for m in linears)
    assert model.head.weight.abs().sum() > 0 and model.cls_token.std().item() == pytest.approx(STD, rel=0.3)
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    assert all(torch.equal(m.weight, torch.ones_like(m.weight)) and not m.bias.any() for m in norms)


def test_pytorch_scheme_uses_each_layers_default():
    model = fresh("pytorch")
    bound = 1 / CONFIG.embed_dim**0.5  # kaiming_uniform(a=√5) and the bias: U(±1/√fan_in)
    for linear in (model.head, model.blocks[0].attn.qkv, model.blocks[1].mlp.fc1):
        assert linear.weight.abs().max() <= bound and linear.weight.abs().max() > 0.9 * bound
        assert linear.bias.abs().max() <= bound and linear.bias.abs().max() > 0
    assert torch.count_nonzero(model.cls_token) == 0
    assert model.pos_embed.embedding.std().item() == pytest.approx(STD, rel=0.1)


def test_every_scheme_is_seeded_and_differs_from_the_others():
    heads = {}
    for scheme in SCHEMES:
        a, b = fresh(scheme, 1).state_dict(), fresh(scheme, 1).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), scheme
        heads[scheme] = a["blocks.0.attn.qkv.weight"]
    assert not torch.equal(heads["book"], heads["deit"]) and not torch.equal(heads["book"], heads["pytorch"])


def test_unknown_scheme_and_wrong_table_raise():
    model = VisionTransformer(CONFIG)
    with pytest.raises(ValueError, match="unknown initialisation scheme 'xavier'"):
        reinit(model, "xavier")
    sincos = VisionTransformer(ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=64, depth=1,
                                         num_heads=4, mlp_dim=128, pos_embed="sincos"))
    with pytest.raises(ValueError, match="pos_embed='sincos'"):
        reinit(sincos, "zero-pos")


def test_shipped_result_has_what_chapter_13_reads():
    data = json.loads(SHIPPED.read_text())
    assert set(data["results"]) == set(SCHEMES)
    seeds = data["seeds"]
    assert len(seeds) >= 3
    for scheme, rows in data["results"].items():
        assert [r["seed"] for r in rows] == seeds, scheme
        for row in rows:
            assert 0 <= row["test_accuracy"] <= 1
            assert list(row["grad_norms"]) == ["cls_token", "patch_embed", "pos_embed", "blocks.0", "blocks.1",
                                               "norm", "head"]
    for row in data["results"]["book"]:
        assert row["first_loss"] == pytest.approx(torch.log(torch.tensor(4.0)).item(), abs=1e-5)
