"""vit_edu.variants.mae: masking and its exact inverse, an encoder on visible tokens only, the decoder, the loss,
the compute saved (formula = torch's flop counter), and the shipped pre-training results that chapter 16 reads."""

import dataclasses
import json

import pytest
import torch

from vit_edu import CONFIGS
from vit_edu.training import CHECKPOINTS, PRESETS
from vit_edu.variants.mae import (
    MAEConfig,
    MaskedAutoencoder,
    block_macs,
    load_mae,
    mae_macs,
    masked_patch_loss,
    measured_flops,
    normalized_patches,
    num_visible,
    random_masking,
    restore_order,
    save_mae,
)
from vit_edu.variants.mae_pretrain import ENCODER, Budget, fine_tune, linear_probe, pooled_features

TINY = dataclasses.replace(PRESETS["shapes-vit"][0], embed_dim=32, mlp_dim=64, depth=2, num_heads=4,
                           pos_embed="sincos")


def tiny_mae(**changes):
    torch.manual_seed(0)
    return MaskedAutoencoder(MAEConfig(TINY, decoder_dim=32, decoder_depth=1, decoder_mlp_dim=64, **changes)).eval()


# ---------------------------------------------------------------- masking

@pytest.mark.parametrize(("n", "ratio", "keep"), [(16, 0.75, 4), (196, 0.75, 49), (16, 0.0, 16), (16, 0.9, 1),
                                                  (10, 0.5, 5), (3, 0.99, 1)])
def test_num_visible(n, ratio, keep):
    assert num_visible(n, ratio) == keep


@pytest.mark.parametrize("bad", [1.0, -0.1, 1.5, "0.75", True])
def test_bad_mask_ratio_is_refused(bad):
    with pytest.raises(ValueError, match="mask ratio must be"):
        random_masking(torch.zeros(1, 4, 2), bad)


@pytest.mark.parametrize(("b", "n", "ratio"), [(3, 16, 0.75), (2, 49, 0.5), (1, 7, 0.0), (4, 196, 0.9)])
def test_restore_is_the_exact_inverse_of_the_shuffle(b, n, ratio):
    x = torch.randn(b, n, 5)
    m = random_masking(x, ratio, generator=torch.Generator().manual_seed(1))
    keep = num_visible(n, ratio)
    shuffled = torch.gather(x, 1, m.ids_shuffle[:, :, None].expand(-1, -1, 5))  # (B, N, D), shuffled order
    assert torch.equal(restore_order(shuffled, m.ids_restore), x)  # bit for bit
    assert torch.equal(torch.gather(m.ids_shuffle, 1, m.ids_restore), torch.arange(n).expand(b, n))
    assert torch.equal(torch.sort(m.ids_shuffle, dim=1).values, torch.arange(n).expand(b, n))  # a permutation
    assert torch.equal(m.visible, shuffled[:, :keep])
    assert m.mask.shape == (b, n) and m.mask.sum(dim=1).tolist() == [n - keep] * b
    for i in range(b):  # the mask is 0 exactly on the kept patches, in image order
        assert set(torch.nonzero(m.mask[i] == 0).flatten().tolist()) == set(m.ids_shuffle[i, :keep].tolist())


def test_masks_differ_per_sample_and_repeat_with_the_seed():
    x = torch.zeros(8, 16, 1)
    a = random_masking(x, 0.75, generator=torch.Generator().manual_seed(3))
    b = random_masking(x, 0.75, generator=torch.Generator().manual_seed(3))
    c = random_masking(x, 0.75, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a.mask, b.mask) and not torch.equal(a.mask, c.mask)
    assert len({tuple(row.tolist()) for row in a.mask}) > 1  # one shuffle per sample, not one for the batch


def test_restore_order_checks_shapes():
    with pytest.raises(ValueError, match="do not match ids_restore"):
        restore_order(torch.zeros(2, 5, 3), torch.zeros(2, 4, dtype=torch.long))


# ---------------------------------------------------------------- encoder, decoder, loss

def test_encoder_sees_only_the_visible_tokens_and_matches_the_vit_without_masking():
    mae = tiny_mae()
    images = torch.rand(3, 3, 32, 32)
    latent, m = mae.forward_encoder(images, 0.75, generator=torch.Generator().manual_seed(0))
    assert latent.shape == (3, 1 + 4, 32)  # CLS + 4 of 16 patches
    with torch.no_grad():
        full, m0 = mae.forward_encoder(images, 0.0, generator=torch.Generator().manual_seed(0))
        reference = mae.encoder.forward_features(images)  # the plain ViT on all tokens, image order
    assert m0.mask.sum() == 0
    torch.testing.assert_close(full[:, :1], reference[:, :1])  # CLS
    torch.testing.assert_close(restore_order(full[:, 1:], m0.ids_restore), reference[:, 1:])


def test_hidden_patches_do_not_change_the_encoder_output():
    mae = tiny_mae()
    images = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        a, m = mae.forward_encoder(images, 0.75, generator=torch.Generator().manual_seed(5))
        changed = images.clone()
        patches = m.mask.reshape(2, 4, 4).repeat_interleave(8, 1).repeat_interleave(8, 2)  # (2, 32, 32) hidden pixels
        changed[patches[:, None].expand(-1, 3, -1, -1) > 0] = 0.123
        b, _ = mae.forward_encoder(changed, 0.75, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(a, b)


def test_decoder_predicts_every_patch_and_the_loss_uses_hidden_ones_only():
    mae = tiny_mae()
    images = torch.rand(2, 3, 32, 32)
    out = mae(images, generator=torch.Generator().manual_seed(0))
    assert out.pred.shape == (2, 16, 3 * 8 * 8)
    target = normalized_patches(images, 8)
    torch.testing.assert_close(out.loss, masked_patch_loss(out.pred, target, out.mask))
    spoiled = out.pred.detach().clone()
    spoiled[out.mask == 0] = 1e3  # garbage on the visible patches: the loss must not move
    torch.testing.assert_close(masked_patch_loss(spoiled, target, out.mask), out.loss.detach())
    out.loss.backward()
    assert mae.mask_token.grad is not None and mae.mask_token.grad.abs().sum() > 0


def test_normalized_patches_have_mean_zero_and_variance_one():
    images = torch.rand(2, 3, 16, 16)
    t = normalized_patches(images, 4)
    assert t.shape == (2, 16, 48)
    torch.testing.assert_close(t.mean(-1), torch.zeros(2, 16), atol=1e-5, rtol=0)
    torch.testing.assert_close(t.var(-1), torch.ones(2, 16), atol=1e-3, rtol=0)


def test_loss_refuses_an_empty_mask_and_bad_shapes():
    with pytest.raises(ValueError, match="hides no patch"):
        masked_patch_loss(torch.zeros(1, 4, 3), torch.zeros(1, 4, 3), torch.zeros(1, 4))
    with pytest.raises(ValueError, match="must be"):
        masked_patch_loss(torch.zeros(1, 4, 3), torch.zeros(1, 4, 2), torch.ones(1, 4))


def test_reconstruction_keeps_visible_patches():
    mae = tiny_mae()
    images = torch.rand(2, 3, 32, 32)
    rec, mask = mae.reconstruct(images, generator=torch.Generator().manual_seed(0))
    visible = (mask.reshape(2, 4, 4).repeat_interleave(8, 1).repeat_interleave(8, 2) == 0)[:, None].expand(-1, 3, -1, -1)
    assert rec.shape == images.shape and torch.equal(rec[visible], images[visible])
    assert float(rec.min()) >= 0 and float(rec.max()) <= 1


def test_config_checks_and_round_trip(tmp_path):
    with pytest.raises(ValueError, match="divisible by decoder_heads"):
        MAEConfig(TINY, decoder_dim=30, decoder_heads=4)
    with pytest.raises(ValueError, match="mask ratio"):
        MAEConfig(TINY, mask_ratio=1.0)
    mae = tiny_mae()
    assert MAEConfig(**json.loads(json.dumps(mae.config.to_dict()))) == mae.config
    save_mae(tmp_path / "m.pt", mae, {"x": 1})
    back, metrics = load_mae(tmp_path / "m.pt")
    assert metrics == {"x": 1}
    images = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(back(images, generator=torch.Generator().manual_seed(0)).pred,
                                   mae(images, generator=torch.Generator().manual_seed(0)).pred, atol=2e-2, rtol=0)


# ---------------------------------------------------------------- compute saved

@pytest.mark.parametrize("ratio", [0.75, 0.5, 0.9])
def test_flop_counter_equals_the_formula(ratio):
    mae = tiny_mae()
    formula = mae_macs(mae.config, ratio)
    counted = measured_flops(mae, torch.rand(2, 3, 32, 32), ratio)
    for part in ("encoder_all", "encoder_visible", "decoder"):
        assert counted[part] == 2 * formula[part], part  # 2 FLOPs per multiply-add


def test_encoder_on_all_tokens_costs_what_the_plain_vit_costs():
    from vit_edu.variants.mae import count_flops

    mae = tiny_mae()
    images = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        plain = count_flops(lambda: mae.encoder.forward_layers(images))  # explicit attention, no head
    assert plain == measured_flops(mae, images)["encoder_all"]


def test_vit_b_mae_saves_about_three_quarters_of_the_encoder():
    cfg = MAEConfig(CONFIGS["vit-b/16"], decoder_dim=512, decoder_depth=8, decoder_heads=16, decoder_mlp_dim=2048)
    with torch.device("meta"):
        counted = measured_flops(MaskedAutoencoder(cfg), torch.empty(1, 3, 224, 224))
    formula = mae_macs(cfg)
    assert formula["visible_tokens"] == 49 and counted["encoder_all"] == 2 * formula["encoder_all"]
    ratio = counted["encoder_all"] / counted["encoder_visible"]
    # 197 tokens against 50 is 3.94; quadratic attention pushes the ratio up, the patch embedding on all 196 pulls it down
    assert 3.9 < ratio < 4.1
    assert counted["encoder_visible"] + counted["decoder"] < counted["encoder_all"] / 1.5


def test_block_macs_by_hand():
    assert block_macs(2, 4, 8) == 2 * (4 * 16 + 2 * 4 * 8) + 2 * 4 * 4


# ---------------------------------------------------------------- probe helpers and the shipped run

def test_linear_probe_separates_separable_features():
    torch.manual_seed(0)
    y = torch.arange(200) % 4
    x = torch.randn(200, 8) * 0.1 + torch.nn.functional.one_hot(y, 8).float() * 3
    assert linear_probe(x[:100], y[:100], x[100:], y[100:], 4, steps=100) == 1.0
    with pytest.raises(ValueError, match="same D"):
        linear_probe(x[:10], y[:10], x[:10, :3], y[:10], 4)


def test_pooled_features_shape():
    mae = tiny_mae()
    assert pooled_features(mae.encoder, torch.rand(3, 3, 32, 32), batch_size=2).shape == (3, 32)


def test_shipped_checkpoint_and_results():
    path, results = CHECKPOINTS / "shapes_mae.pt", CHECKPOINTS / "mae_probe.json"
    if not path.exists() or not results.exists():
        pytest.skip("run `python -m vit_edu.variants.mae_pretrain` first")
    assert path.stat().st_size < 2_000_000
    mae, metrics = load_mae(path)
    assert mae.config.encoder == ENCODER
    assert metrics["val_masked_loss_after"] < metrics["val_masked_loss_before"]
    data = json.loads(results.read_text())
    assert len(data["runs"]) >= 3
    for run in data["runs"]:
        assert run["val_masked_loss_after"] < run["val_masked_loss_before"]
        for arm in ("random init", "MAE"):
            assert 0.25 <= run["probe"][arm] <= 1 and 0.25 <= run["finetune"][arm]["test_accuracy"] <= 1
        for arm in (run["finetune"]["random init"], run["finetune"]["MAE"], run["supervised_all_labels"]):
            assert 0 <= arm["train_accuracy"] <= 1
        # the design chapter 16 relies on: all labels reach the ceiling, 1,000 labels stay clearly below it
        assert run["supervised_all_labels"]["test_accuracy"] >= 0.98
        assert run["supervised_all_labels"]["test_accuracy"] - run["finetune"]["random init"]["test_accuracy"] > 0.03
    assert data["budget"] == dataclasses.asdict(Budget())  # shipped with the script's default budget


def test_fine_tune_reports_test_and_training_accuracy():
    from vit_edu.data import CLASS_NAMES, ImageSplit, ShapesDataset

    data = ShapesDataset("train", size=64)
    train_set = ImageSplit(data.images, data.labels, CLASS_NAMES)
    held_out = ShapesDataset("val", size=32)
    encoder = tiny_mae().encoder
    result = fine_tune(encoder, train_set, held_out, held_out, Budget(finetune_steps=3, finetune_batch=16), seed=0)
    assert set(result) == {"test_accuracy", "train_accuracy", "seconds"}
    assert 0 <= result["train_accuracy"] <= 1 and 0 <= result["test_accuracy"] <= 1
    assert torch.count_nonzero(encoder.head.weight) > 0  # the zero head was trained


def test_a_short_pretraining_lowers_the_masked_loss():
    from vit_edu.data import ShapesDataset
    from vit_edu.variants.mae_pretrain import masked_loss, pretrain

    mae = tiny_mae()
    images = ShapesDataset("train", size=512).images
    held_out = ShapesDataset("val", size=200).images
    with torch.random.fork_rng():
        before = masked_loss(mae, held_out)
        curve = pretrain(mae, images, steps=60, batch_size=32, lr=2e-3, seed=0, log_every=20)
        after = masked_loss(mae, held_out)
    assert [row["step"] for row in curve] == [20, 40, 60]
    assert after < 0.9 * before
