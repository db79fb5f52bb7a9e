"""vit_edu.tasks.video: clip tokens, the three attentions' reshapes, what each lets a frame see, the counted cost."""

import dataclasses

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from vit_edu.tasks.video import (
    ClipEmbedding,
    VideoBlock,
    VideoConfig,
    VideoTransformer,
    attention_macs,
    joint_reshape,
    space_reshape,
    space_unreshape,
    time_reshape,
    time_unreshape,
)

SMALL = VideoConfig(frames=4, image_size=16, patch_size=8, embed_dim=16, num_heads=2, mlp_dim=32, depth=2)


def clips(config: VideoConfig = SMALL, batch: int = 2, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(batch, config.frames, 3, config.image_size, config.image_size, generator=g)


def test_frame_tokens_are_each_frames_own_patch_embedding():
    torch.manual_seed(0)
    embed = ClipEmbedding(SMALL)
    x = clips()
    tokens = embed.tokens(x)  # (B, T, N, D)
    assert tokens.shape == (2, 4, 4, 16)
    mean, std = SMALL.input_norm
    for t in range(4):
        alone = embed.proj((x[:, t] - mean) / std).flatten(2).transpose(1, 2)  # (B, N, D): frame t by itself
        torch.testing.assert_close(tokens[:, t], alone)


def test_tubelet_token_is_one_t_by_p_by_p_block():
    torch.manual_seed(0)
    cfg = dataclasses.replace(SMALL, tokens="tubelets", tubelet_frames=2)
    embed = ClipEmbedding(cfg)
    x = clips(cfg)
    tokens = embed.tokens(x)
    assert tokens.shape == (2, 2, 4, 16)  # T/t = 2 time steps, N = 4 places
    mean, std = cfg.input_norm
    block = (x[0, 2:4, :, 8:16, 0:8] - mean) / std  # time step 1, place (row 1, column 0) = 2: (t, 3, P, P)
    by_hand = (embed.proj.weight * block.transpose(0, 1)).sum(dim=(1, 2, 3, 4)) + embed.proj.bias  # (D,)
    torch.testing.assert_close(tokens[0, 1, 2], by_hand)


def test_position_tables_broadcast_over_frames_and_places():
    torch.manual_seed(0)
    embed = ClipEmbedding(dataclasses.replace(SMALL, attention="joint"))
    x = clips()
    added = embed(x) - embed.tokens(x)  # (B, T, N, D): the tables alone
    torch.testing.assert_close(added[0, 2, 3], embed.space_pos_embed[0, 0, 3] + embed.time_pos_embed[0, 2, 0])
    assert ClipEmbedding(dataclasses.replace(SMALL, attention="space")).time_pos_embed is None


def test_reshapes_group_the_right_tokens_and_invert():
    b, t, n, d = 2, 3, 4, 5
    x = torch.arange(b * t * n * d, dtype=torch.float32).reshape(b, t, n, d)
    s, tm, j = space_reshape(x), time_reshape(x), joint_reshape(x)
    assert s.shape == (b * t, n, d) and tm.shape == (b * n, t, d) and j.shape == (b, t * n, d)
    for bi in range(b):
        for ti in range(t):
            for ni in range(n):
                assert torch.equal(s[bi * t + ti, ni], x[bi, ti, ni])  # sequence = one frame
                assert torch.equal(tm[bi * n + ni, ti], x[bi, ti, ni])  # sequence = one place over time
                assert torch.equal(j[bi, ti * n + ni], x[bi, ti, ni])  # frame after frame
    assert torch.equal(space_unreshape(s, b), x) and torch.equal(time_unreshape(tm, b), x)


def test_reshapes_reject_bad_shapes():
    with pytest.raises(ValueError, match="4 dimensions"):
        time_reshape(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="not a whole number of places for batch 4"):
        time_unreshape(torch.zeros(6, 3, 5), 4)
    with pytest.raises(ValueError, match="not a whole number of frames for batch 4"):
        space_unreshape(torch.zeros(6, 3, 5), 4)


def frame_reach(attention: str) -> torch.Tensor:
    """How much each frame's block output moves when only frame 0's tokens change: (T,)."""
    torch.manual_seed(0)
    block = VideoBlock(dataclasses.replace(SMALL, attention=attention)).eval()
    x = torch.randn(1, 4, 4, 16)
    y = x.clone()
    y[:, 0] += torch.randn(1, 4, 16)
    with torch.no_grad():
        return (block(x)[0] - block(y)[0]).abs().amax(dim=(0, 2, 3))


def test_only_space_attention_keeps_frames_apart():
    assert torch.all(frame_reach("space")[1:] == 0)
    for attention in ("joint", "divided"):
        assert torch.all(frame_reach(attention)[1:] > 0)


def test_divided_time_attention_mixes_only_the_same_place():
    torch.manual_seed(0)
    block = VideoBlock(dataclasses.replace(SMALL, attention="divided")).eval()
    x = torch.randn(1, 4, 4, 16)
    y = x.clone()
    y[:, 0, 2] += 1.0  # frame 0, place 2
    with torch.no_grad():
        step = lambda z: z + time_unreshape(block.time_attn(time_reshape(block.norm_time(z)))[0], 1)  # noqa: E731
        moved = (step(x) - step(y)).abs().amax(dim=(0, 3))  # (T, N)
    assert torch.all(moved[:, 2] > 0) and torch.all(moved[:, [0, 1, 3]] == 0)


def test_space_only_model_ignores_frame_order_and_others_do_not():
    x = clips(batch=3)
    order = torch.tensor([2, 0, 3, 1])
    for attention, free in (("space", True), ("joint", False), ("divided", False)):
        torch.manual_seed(0)
        model = VideoTransformer(dataclasses.replace(SMALL, attention=attention)).eval()
        torch.nn.init.normal_(model.head.weight)
        with torch.no_grad():
            same = torch.allclose(model(x), model(x[:, order]), atol=1e-5)
            reversed_same = torch.allclose(model(x), model(x.flip(1)), atol=1e-5)
        assert same == free and reversed_same == free, attention


def test_weights_have_the_documented_shapes():
    x = clips()
    shapes = {"space": {"space": (8, 2, 4, 4)}, "joint": {"joint": (2, 2, 16, 16)},
              "divided": {"time": (8, 2, 4, 4), "space": (8, 2, 4, 4)}}
    for attention, want in shapes.items():
        model = VideoTransformer(dataclasses.replace(SMALL, attention=attention))
        tokens, weights = model.forward_features(x, need_weights=True)
        assert tokens.shape == (2, 4, 4, 16) and len(weights) == SMALL.depth
        assert {k: tuple(v.shape) for k, v in weights[0].items()} == want
        for w in weights[-1].values():
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))


@pytest.mark.parametrize("attention", ["space", "joint", "divided"])
@pytest.mark.parametrize("tokens", ["frames", "tubelets"])
def test_counted_multiply_adds_equal_torchs_flop_counter(attention, tokens):
    cfg = dataclasses.replace(SMALL, attention=attention, tokens=tokens)
    model = VideoTransformer(cfg)
    x = clips(cfg, batch=1)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        feats, _ = model.forward_features(x, need_weights=True)  # explicit path: the counter sees every matmul
        model.head(feats.mean(dim=(1, 2)))
    assert counter.get_total_flops() == 2 * attention_macs(cfg)["total"]


def test_joint_attention_grows_with_the_square_of_the_frames():
    joint = [attention_macs(VideoConfig(attention="joint"), t)["attention"] for t in (4, 8)]
    divided = [attention_macs(VideoConfig(attention="divided"), t)["attention"] for t in (4, 8)]
    space = [attention_macs(VideoConfig(attention="space"), t)["attention"] for t in (4, 8)]
    assert joint[1] == 4 * joint[0] and space[1] == 2 * space[0] and 2 * divided[0] < divided[1] < 4 * divided[0]


@pytest.mark.parametrize(("bad", "message"), [
    ({"attention": "global"}, "attention must be one of"),
    ({"tokens": "pixels"}, "tokens must be one of"),
    ({"patch_size": 5}, "image_size 32 is not divisible by patch_size 5"),
    ({"tokens": "tubelets", "frames": 5}, "frames 5 is not divisible by tubelet_frames 2"),
    ({"embed_dim": 30}, "embed_dim 30 is not divisible by num_heads 4"),
    ({"frames": 0}, "frames must be a positive integer"),
    ({"pos_std": -1.0}, "pos_std must be"),
])
def test_bad_configs_name_the_problem(bad, message):
    with pytest.raises(ValueError, match=message):
        VideoConfig(**bad)


def test_wrong_clip_shape_is_named():
    model = VideoTransformer(SMALL)
    with pytest.raises(ValueError, match=r"clips must have shape \(B, 4, 3, 16, 16\).*got \(2, 3, 3, 16, 16\)"):
        model(torch.zeros(2, 3, 3, 16, 16))
    with pytest.raises(ValueError, match="5 dimensions"):
        model(torch.zeros(4, 3, 16, 16))


# The experiment scripts, on tiny runs.

def tiny_data(frames: int = 4, n: int = 24):
    from vit_edu.data.clips import make_clips

    train = make_clips(n, frames=frames, image_size=16, seed=1)
    return {"train": train, "train_eval": train, "test": make_clips(n, frames=frames, image_size=16, seed=2)}


def test_space_only_arm_answers_a_clip_and_its_reverse_alike(tmp_path):
    from vit_edu.tasks.video_train import RUN, load_models, run_arm, save_models

    cfg = dataclasses.replace(RUN, steps=3, batch_size=8, warmup_steps=1, eval_every=3, train_size=24)
    model, record = run_arm(SMALL, 0, cfg, tiny_data())  # SMALL is space-only: no time table
    assert record["same_prediction_reversed"] == 1.0
    assert record["accuracy"] + record["reversed_accuracy"] == pytest.approx(1.0)
    assert record["parameters"] == sum(p.numel() for p in model.parameters()) and record["train_seconds"] > 0
    save_models(tmp_path / "m.pt", {"S": model})
    loaded = load_models(tmp_path / "m.pt")["S"]
    x = clips(batch=3)
    torch.testing.assert_close(loaded(x), model(x), atol=1e-2, rtol=1e-2)  # half-precision weights


def test_cost_measurement_rows_and_exponents():
    from vit_edu.tasks.video_cost import measure

    result = measure(frames=(2, 4), batch=1, repeats=1)
    assert set(result["runs"]) == {"S", "ST", "T+S"}
    st = result["runs"]["ST"]
    assert [r["frames"] for r in st] == [2, 4] and all(r["seconds"] > 0 for r in st)
    assert st[1]["attention"] == 4 * st[0]["attention"]  # (T·N)² pairs
    import math
    want = math.log(st[1]["total"] / st[0]["total"]) / math.log(2)  # two points: the slope between them
    assert result["exponents"]["ST"]["macs_all"] == pytest.approx(want)


@pytest.mark.parametrize("frames", [(2,), (1, 4), (2, 4.0)])
def test_cost_measurement_rejects_bad_frames(frames):
    from vit_edu.tasks.video_cost import measure

    with pytest.raises(ValueError, match="frames must be at least two whole numbers"):
        measure(frames=frames)
