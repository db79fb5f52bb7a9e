import math

import pytest
import torch
from torch import nn

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.training.cnn import SmallCNN
from vit_edu.training.debug import attention_stats, flat_grad, grad_norms, overfit_batch

CONFIG = ViTConfig(image_size=16, patch_size=8, num_classes=4, embed_dim=32, depth=2, num_heads=2, mlp_dim=64)


def batch(n=8, size=16):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 3, size, size, generator=g), torch.randint(0, 4, (n,), generator=g)


def test_grad_norms_keys_follow_top_level_parts_and_blocks():
    torch.manual_seed(0)
    model = VisionTransformer(CONFIG)
    model.head.reset_parameters()  # a zero head would pass no gradient back to the rest
    x, y = batch()
    nn.functional.cross_entropy(model(x), y).backward()
    norms = grad_norms(model)
    assert list(norms) == ["cls_token", "patch_embed", "pos_embed", "blocks.0", "blocks.1", "norm", "head"]
    assert all(v > 0 for v in norms.values())
    total = sum(p.grad.pow(2).sum().item() for p in model.parameters()) ** 0.5
    assert sum(v**2 for v in norms.values()) ** 0.5 == pytest.approx(total, rel=1e-5)


def test_frozen_block_and_detached_embedding_get_exactly_zero():
    torch.manual_seed(0)
    model = VisionTransformer(CONFIG)
    model.head.reset_parameters()
    model.blocks[0].requires_grad_(False)
    model.patch_embed.register_forward_hook(lambda module, args, out: out.detach())
    x, y = batch()
    nn.functional.cross_entropy(model(x), y).backward()
    norms = grad_norms(model)
    assert norms["blocks.0"] == 0.0 and norms["patch_embed"] == 0.0
    assert norms["blocks.1"] > 0 and norms["pos_embed"] > 0


def test_overfit_batch_drives_loss_down_and_leaves_frozen_part_alone():
    torch.manual_seed(0)
    model = VisionTransformer(CONFIG)
    frozen = model.blocks[1].mlp.fc1.weight.detach().clone()
    model.blocks[1].requires_grad_(False)
    x, y = batch()
    run = overfit_batch(model, x, y, steps=60, lr=3e-3)
    assert len(run.losses) == 60
    assert run.final_loss < 0.1 * run.losses[0]
    assert run.mean_grad_norms["blocks.1"] == 0.0 and run.mean_grad_norms["blocks.0"] > 0
    assert torch.equal(model.blocks[1].mlp.fc1.weight, frozen)


def test_overfit_batch_rejects_bad_input():
    model = VisionTransformer(CONFIG)
    x, y = batch()
    with pytest.raises(ValueError, match=r"labels must have shape \(8,\)"):
        overfit_batch(model, x, y[:4])
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        overfit_batch(model, x, y, steps=0)
    model.requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter with requires_grad"):
        overfit_batch(model, x, y)


def test_accumulation_matches_for_layernorm_not_for_batchnorm_in_train_mode():
    torch.manual_seed(0)
    vit = VisionTransformer(CONFIG)
    vit.head.reset_parameters()  # a non-zero head, so every part has a gradient
    x, y = batch(16)
    torch.testing.assert_close(flat_grad(vit, x, y, 4), flat_grad(vit, x, y, 1))
    torch.manual_seed(0)
    cnn = SmallCNN(4, width=4)
    g_acc, g_full = flat_grad(cnn.train(), x, y, 4), flat_grad(cnn, x, y, 1)
    assert ((g_acc - g_full).norm() / g_full.norm()).item() > 1e-2
    cnn.eval()
    torch.testing.assert_close(flat_grad(cnn, x, y, 4), flat_grad(cnn, x, y, 1))
    with pytest.raises(ValueError, match="batch of 16 does not split into 3"):
        flat_grad(vit, x, y, 3)


def test_attention_stats_reads_uniform_and_one_hot_rows():
    s = 5
    uniform = torch.full((2, 3, s, s), 1 / s)  # (B, h, S, S)
    one_hot = torch.eye(s).expand(2, 3, s, s)  # every query on one token
    half = torch.full((1, 1, s, s), 0.0)
    half[..., :2] = 0.5  # two tokens with weight 1/2 each: entropy ln 2
    stats = attention_stats([uniform, one_hot, half])
    assert stats[0].max_weight == pytest.approx(1 / s) and stats[0].entropy == pytest.approx(math.log(s))
    assert stats[1].max_weight == 1.0 and stats[1].entropy == 0.0  # 0·log 0 counts as 0, not NaN
    assert stats[2].max_weight == 0.5 and stats[2].entropy == pytest.approx(math.log(2))


def test_attention_stats_of_a_model_lie_in_range_and_nan_shows():
    torch.manual_seed(0)
    model = VisionTransformer(CONFIG)
    x, _ = batch()
    with torch.no_grad():
        _, attentions = model(x, return_attention=True)
    stats = attention_stats(attentions)
    assert len(stats) == CONFIG.depth
    assert all(0 < st.entropy <= math.log(CONFIG.seq_len) + 1e-9 and 0 < st.max_weight <= 1 for st in stats)
    broken = attentions[0].clone()
    broken[0, 0, 0] = float("nan")
    assert all(math.isnan(v) for v in (attention_stats([broken])[0].max_weight, attention_stats([broken])[0].entropy))


def test_attention_stats_rejects_bad_input_naming_it():
    with pytest.raises(ValueError, match="none"):
        attention_stats([])
    with pytest.raises(ValueError, match=r"layer 1 must have 4 dimensions.*\(2, 5, 5\)"):
        attention_stats([torch.ones(1, 1, 5, 5), torch.ones(2, 5, 5)])
    with pytest.raises(ValueError, match=r"square.*\(1, 1, 5, 4\)"):
        attention_stats([torch.ones(1, 1, 5, 4)])
