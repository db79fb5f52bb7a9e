"""DropPath (stochastic depth): per-sample branch drop, 1/(1-p) rescale, identity in eval and at rate 0."""

import pytest
import torch

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.block import DropPath, EncoderBlock, drop_path, drop_path_rates


def _model(**kw):
    """A small ViT with a random (not zero-initialised) head, so the logits depend on the encoder."""
    torch.manual_seed(0)
    model = VisionTransformer(_cfg(**kw))
    torch.nn.init.normal_(model.head.weight)
    return model


def _cfg(**kw):
    return ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=32, depth=4, num_heads=4, mlp_dim=64, **kw)


def test_expected_value_preserved():
    torch.manual_seed(0)
    x = torch.ones(200_000, 1, 1)
    y = drop_path(x, 0.3, training=True)
    assert torch.allclose(y.mean(), torch.tensor(1.0), atol=0.01)
    kept = y.flatten() != 0
    assert abs(kept.float().mean().item() - 0.7) < 0.01
    torch.testing.assert_close(y.flatten()[kept], torch.full((int(kept.sum()),), 1 / 0.7))


def test_per_sample_mask():
    torch.manual_seed(1)
    x = torch.randn(64, 5, 7) + 3.0  # no zeros in the input
    y = DropPath(0.5).train()(x)
    for b in range(64):
        dropped = (y[b] == 0).all()
        if not dropped:
            torch.testing.assert_close(y[b], x[b] * 2.0)
    n_dropped = sum(bool((y[b] == 0).all()) for b in range(64))
    assert 0 < n_dropped < 64  # some samples dropped whole, others kept whole


def test_eval_is_identity_and_draws_nothing():
    x = torch.randn(8, 3, 4)
    module = DropPath(0.5).eval()
    state = torch.get_rng_state()
    assert module(x) is x
    assert torch.equal(torch.get_rng_state(), state)


def test_rate_zero_model_bit_identical_and_same_rng_state():
    plain = _model()
    with_dp = _model(drop_path_rate=0.0)
    assert plain.state_dict().keys() == with_dp.state_dict().keys()
    x = torch.randn(4, 3, 16, 16)
    plain.train()
    torch.manual_seed(5)
    a = plain(x)
    s_a = torch.get_rng_state()
    torch.manual_seed(5)
    b = with_dp.train()(x)
    assert a.abs().max() > 0  # the comparison is not between two zero tensors
    assert torch.equal(a, b)
    assert torch.equal(torch.get_rng_state(), s_a)


def test_positive_rate_adds_no_parameters_and_changes_training_only():
    plain = _model().eval()
    dp = _model(drop_path_rate=0.5)
    assert plain.state_dict().keys() == dp.state_dict().keys()
    x = torch.randn(16, 3, 16, 16)
    torch.testing.assert_close(dp.eval()(x), plain(x), rtol=0, atol=0)
    torch.manual_seed(3)
    assert not torch.equal(dp.train()(x), plain(x))


def test_linear_rates_over_depth():
    assert drop_path_rates(0.3, 4) == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert drop_path_rates(0.1, 1) == [0.1]
    model = VisionTransformer(_cfg(drop_path_rate=0.3))
    assert [blk.drop_path.rate for blk in model.blocks] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert EncoderBlock(_cfg(), 7).drop_path.rate == 0.0  # rate 0: any index, as before


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_rates_outside_unit_interval_raise(rate):
    with pytest.raises(ValueError, match="drop"):
        DropPath(rate)
    with pytest.raises(ValueError, match="drop"):
        drop_path(torch.ones(2, 1), rate, training=True)
    with pytest.raises(ValueError, match="drop_path_rate"):
        _cfg(drop_path_rate=rate)
    with pytest.raises(ValueError, match="depth"):
        drop_path_rates(0.1, 0)


def test_shipped_checkpoint_still_loads_with_rate_zero():
    from pathlib import Path

    from vit_edu.training import load_checkpoint

    model, _ = load_checkpoint(Path(__file__).parent.parent / "vit_edu" / "checkpoints" / "shapes_vit.pt")
    assert model.config.drop_path_rate == 0.0
    assert all(blk.drop_path.rate == 0.0 for blk in model.blocks)
