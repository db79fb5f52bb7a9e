import dataclasses

import pytest
import torch
from torch import nn

from tests.conftest import randomize
from vit_edu import VisionTransformer, ViTConfig


def test_forward_shapes(small_model, small_config):
    x = torch.randn(3, 3, 32, 48)
    logits = small_model(x)
    assert logits.shape == (3, 7)
    tokens = small_model.forward_features(x)
    assert tokens.shape == (3, small_config.seq_len, 32) == (3, 25, 32)


def test_return_attention_gives_one_row_stochastic_map_per_layer(small_model):
    x = torch.randn(2, 3, 32, 48)
    logits, attentions = small_model(x, return_attention=True)
    assert len(attentions) == 2
    for weights in attentions:
        assert weights.shape == (2, 4, 25, 25)
        assert (weights >= 0).all()
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 25))
    torch.testing.assert_close(logits, small_model(x), atol=1e-5, rtol=1e-5)


def test_head_reads_the_cls_token_after_the_final_norm(small_model):
    x = torch.randn(2, 3, 32, 48)
    tokens = small_model.forward_features(x)
    torch.testing.assert_close(small_model(x), small_model.head(tokens[:, 0]))


@pytest.mark.parametrize("pool,pos,norm", [("mean", "learned", "pre"), ("cls", "sincos", "pre"),
                                           ("cls", "none", "post"), ("mean", "sincos", "post")])
def test_variants_run_and_have_the_right_sequence(small_config, pool, pos, norm):
    cfg = dataclasses.replace(small_config, pool=pool, pos_embed=pos, norm=norm)
    torch.manual_seed(0)
    model = randomize(VisionTransformer(cfg)).eval()
    x = torch.randn(2, 3, 32, 48)
    logits, attentions = model(x, return_attention=True)
    assert logits.shape == (2, 7)
    assert attentions[0].shape[-1] == cfg.seq_len == (24 if pool == "mean" else 25)
    assert (model.cls_token is None) == (pool == "mean")
    if pool == "mean":
        torch.testing.assert_close(model(x), model.head(model.forward_features(x).mean(1)))


def test_sincos_table_is_a_fixed_buffer_not_a_parameter(small_config):
    model = VisionTransformer(dataclasses.replace(small_config, pos_embed="sincos"))
    names = [n for n, _ in model.named_parameters()]
    assert not any("pos_embed" in n for n in names)
    assert model.pos_embed.embedding.shape == (1, 25, 32)
    assert torch.equal(model.pos_embed.embedding[0, 0], torch.zeros(32))  # CLS row


def test_post_norm_differs_from_pre_norm_with_the_same_weights(small_config):
    torch.manual_seed(0)
    pre = randomize(VisionTransformer(small_config)).eval()
    post = VisionTransformer(dataclasses.replace(small_config, norm="post")).eval()
    state = {k: v for k, v in pre.state_dict().items() if not k.startswith("norm.")}
    post.load_state_dict(state)
    x = torch.randn(2, 3, 32, 48)
    assert not torch.allclose(pre(x), post(x))


def test_init_follows_torchvision(small_config):
    torch.manual_seed(0)
    model = VisionTransformer(small_config)
    assert torch.equal(model.head.weight, torch.zeros_like(model.head.weight))
    assert torch.equal(model.cls_token, torch.zeros(1, 1, 32))
    assert 0.015 < model.pos_embed.embedding.std().item() < 0.025
    assert torch.equal(model.blocks[0].attn.qkv.bias, torch.zeros(96))
    assert model.blocks[0].norm1.eps == 1e-6


def test_dropout_only_in_training(small_config):
    cfg = dataclasses.replace(small_config, dropout=0.5)
    torch.manual_seed(0)
    model = randomize(VisionTransformer(cfg))
    x = torch.randn(2, 3, 32, 48)
    model.eval()
    torch.testing.assert_close(model(x), model(x))
    model.train()
    assert not torch.allclose(model(x), model(x))


def test_bad_images_raise_with_sizes(small_model):
    with pytest.raises(ValueError, match="images have 1 channels but the model expects in_channels=3"):
        small_model(torch.zeros(1, 1, 32, 48))
    with pytest.raises(ValueError, match="image size 48×48 does not match the model's 32×48"):
        small_model(torch.zeros(1, 3, 48, 48))
    with pytest.raises(ValueError, match="image height 30 is not divisible by patch size 8"):
        small_model(torch.zeros(1, 3, 30, 48))
    with pytest.raises(ValueError, match=r"4 dimensions \(B, C, H, W\), got 3"):
        small_model(torch.zeros(3, 32, 48))


def test_gradients_reach_every_parameter(small_model):
    small_model.train()
    small_model(torch.randn(2, 3, 32, 48)).sum().backward()
    for name, p in small_model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_input_norm_standardises_inside_the_model():
    torch.manual_seed(0)
    plain = VisionTransformer(ViTConfig(image_size=16, patch_size=8, embed_dim=32, depth=1, num_heads=2, mlp_dim=64,
                                        num_classes=3))
    normed = VisionTransformer(dataclasses.replace(plain.config, input_norm=(0.5, 0.25)))
    normed.load_state_dict(plain.state_dict())
    nn.init.normal_(plain.head.weight)
    normed.head.weight.data.copy_(plain.head.weight)
    x = torch.rand(2, 3, 16, 16)
    torch.testing.assert_close(normed(x), plain((x - 0.5) / 0.25))
