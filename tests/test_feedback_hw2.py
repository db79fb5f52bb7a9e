"""Homework 2's checks: each public check passes the master's answer and names each classic mistake; each hidden
judge passes the master's answer and fails the mistake; calling the book's reference scores nothing.

The answers below are the master's solutions (``book/homework/hw2_encoder.ipynb``) and one classic mistake each.
No notebook runs here: the probes run in this process, as they would in the student's kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import vit_edu
from vit_edu.homework.feedback import hw2
from vit_edu.homework.grade import load_module

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ROOT / "book" / "homework" / "hidden"
cases = load_module("hidden_hw2_encoder", (HIDDEN / "hw2_encoder.py").read_text()).cases


# ---------------------------------------------------------------- the master's answers


def qkv_shapes(batch, seq, dim, heads):
    d = dim // heads
    return (batch, seq, 3 * dim), (batch, heads, seq, d), (batch, heads, seq, seq)


def my_attention(q, k, v, keep=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if keep is not None:
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def split_heads(x, heads):
    b, s, d = x.shape
    return x.reshape(b, s, heads, d // heads).transpose(1, 2)


def merge_heads(x, head_mask=None):
    b, h, s, d = x.shape
    if head_mask is not None:
        x = x * head_mask[None, :, None, None]
    return x.transpose(1, 2).reshape(b, s, h * d)


def residual_block_forward(block, x, scale, norm):
    if norm == "pre":
        x = x + scale * block.attn(block.norm1(x))[0]
        return x + scale * block.mlp(block.norm2(x))
    x = block.norm1(x + scale * block.attn(x)[0])
    return block.norm2(x + scale * block.mlp(x))


def encoder_block_params(dim, mlp_dim, qkv_bias):
    return 4 * dim + dim * 3 * dim + (3 * dim if qkv_bias else 0) + dim * dim + dim + 2 * dim * mlp_dim + mlp_dim + dim


def stream_std(norm, depth, seed):
    torch.manual_seed(seed)
    cfg = vit_edu.ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=depth, num_heads=4, mlp_dim=256,
                            norm=norm)
    blocks = [vit_edu.EncoderBlock(cfg, i) for i in range(depth)]
    x = torch.randn(16, cfg.seq_len, 64)
    stds = []
    with torch.no_grad():
        for block in blocks:
            x, _ = block(x)
            stds.append(x.std().item())
    return stds


def readout(tokens, pool, num_prefix):
    return tokens[:, 0] if pool == "cls" else tokens[:, num_prefix:].mean(dim=1)


def vit_params(c):
    d = c.embed_dim
    gh, gw = c.grid_size
    patch = d * c.in_channels * c.patch_size**2 + d
    cls = d if c.pool == "cls" else 0
    positions = (gh * gw + (1 if c.pool == "cls" else 0)) * d if c.pos_embed == "learned" else 0
    block = 4 * d + 3 * d * d + (3 * d if c.qkv_bias else 0) + d * d + d + 2 * d * c.mlp_dim + c.mlp_dim + d
    final_norm = 2 * d if c.norm == "pre" else 0
    return patch + cls + positions + c.depth * block + final_norm + d * c.num_classes + c.num_classes


POOL_ACC = {"cls": [42.8, 45.2, 41.6], "mean": [42.4, 39.4, 44.0]}
KEY = {"stream_growth": "b", "pre_std_48": 3.851, "pre_std_48_tolerance": 0.1, "pool_conclusion": "c",
       "pool_acc": POOL_ACC, "pool_acc_tolerance": 5.0}
MASTER = {"qkv_shapes": qkv_shapes, "my_attention": my_attention, "split_heads": split_heads,
          "merge_heads": merge_heads, "residual_block_forward": residual_block_forward,
          "encoder_block_params": encoder_block_params, "stream_std": stream_std, "pre_std_48": 3.85,
          "stream_growth": "b", "readout": readout, "vit_params": vit_params, "pool_acc": POOL_ACC,
          "pool_conclusion": "c"}

# ---------------------------------------------------------------- one classic mistake per question


def _q_not_split(batch, seq, dim, heads):
    return (batch, seq, 3 * dim), (batch, seq, heads, dim // heads), (batch, heads, seq, seq)


def _mask_after_softmax(q, k, v, keep=None):
    weights = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(-1)
    if keep is not None:
        weights = weights * keep[:, None, None, :]
    return weights @ v, weights


def _no_sqrt(q, k, v, keep=None):
    weights = (q @ k.transpose(-2, -1)).softmax(-1)
    return weights @ v, weights


def _mask_ignored(q, k, v, keep=None):
    return my_attention(q, k, v)


def _softmax_over_queries(q, k, v, keep=None):
    weights = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(-2)
    return weights @ v, weights


def _split_plain_reshape(x, heads):
    b, s, d = x.shape
    return x.reshape(b, heads, s, d // heads)


def _merge_plain_reshape(x, head_mask=None):
    b, h, s, d = x.shape
    if head_mask is not None:
        x = x * head_mask[None, :, None, None]
    return x.reshape(b, s, h * d)


def _mask_ignored_in_merge(x, head_mask=None):
    return merge_heads(x)


def _mask_tiled(x, head_mask=None):
    merged = merge_heads(x)
    return merged if head_mask is None else merged * head_mask.repeat(x.shape[-1])


def _mlp_not_scaled(block, x, scale, norm):
    if norm == "pre":
        x = x + scale * block.attn(block.norm1(x))[0]
        return x + block.mlp(block.norm2(x))
    x = block.norm1(x + scale * block.attn(x)[0])
    return block.norm2(x + block.mlp(x))


def _always_pre(block, x, scale, norm):
    return residual_block_forward(block, x, scale, "pre")


def _always_post(block, x, scale, norm):
    return residual_block_forward(block, x, scale, "post")


def _sum_scaled(block, x, scale, norm):
    x = scale * (x + block.attn(block.norm1(x))[0])
    return scale * (x + block.mlp(block.norm2(x)))


def _qkv_bias_ignored(dim, mlp_dim, qkv_bias):
    return encoder_block_params(dim, mlp_dim, True)


def _tokens_first(norm, depth, seed):
    torch.manual_seed(seed)
    cfg = vit_edu.ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=depth, num_heads=4, mlp_dim=256,
                            norm=norm)
    x = torch.randn(16, cfg.seq_len, 64)
    blocks = [vit_edu.EncoderBlock(cfg, i) for i in range(depth)]
    with torch.no_grad():
        out = []
        for block in blocks:
            x, _ = block(x)
            out.append(x.std().item())
    return out


def _mean_with_prefix(tokens, pool, num_prefix):
    return tokens[:, 0] if pool == "cls" else tokens.mean(dim=1)


def _always_final_norm(c):
    return vit_params(c) + (2 * c.embed_dim if c.norm == "post" else 0)


def _always_learned_table(c):
    extra = (c.grid_size[0] * c.grid_size[1] + (c.pool == "cls")) * c.embed_dim if c.pos_embed != "learned" else 0
    return vit_params(c) + extra


def _no_cls_row(c):
    return vit_params(c) - (c.embed_dim if c.pool == "cls" else 0)


# (public check, answer, mistake, words the public message must hold)
PUBLIC_MISTAKES = {
    "qkv not split": (hw2.check_qkv_shapes, _q_not_split, "each head gets d = D/h"),
    "mask after the softmax": (hw2.check_attention, _mask_after_softmax, "mask the scores before the softmax"),
    "no √d": (hw2.check_attention, _no_sqrt, "divide the scores by √d"),
    "mask ignored": (hw2.check_attention, _mask_ignored, "the mask is not applied"),
    "softmax over the queries": (hw2.check_attention, _softmax_over_queries, "every row of the weights should sum to 1"),
    "split without transpose": (hw2.check_split_heads, _split_plain_reshape, "then transpose(1, 2)"),
    "merge without transpose": (hw2.check_merge_heads, _merge_plain_reshape, "transpose(1, 2) before the reshape"),
    "head mask ignored": (hw2.check_merge_heads, _mask_ignored_in_merge, "the head mask is not applied"),
    "head mask tiled": (hw2.check_merge_heads, _mask_tiled, "repeat_interleave"),
    "MLP branch not scaled": (hw2.check_block_forward, _mlp_not_scaled, "the MLP branch's update is not scaled"),
    "sum scaled": (hw2.check_block_forward, _sum_scaled, "scale the branch's update, not the sum"),
    "Post-LN wiring": (hw2.check_block_forward, _always_post, "that is the post-LN wiring"),
    "qkv bias ignored": (hw2.check_block_params, _qkv_bias_ignored, "has no bias"),
    "tokens drawn first": (hw2.check_stream_std, _tokens_first, "follow the recipe's order"),
    "mean over the prefix too": (hw2.check_readout, _mean_with_prefix, "patch tokens only"),
    "no CLS row": (hw2.check_vit_params, _no_cls_row, "the CLS token, or its row of the position table"),
}


def test_public_checks_pass_the_masters_answers():
    for check, answer in [(hw2.check_qkv_shapes, qkv_shapes), (hw2.check_attention, my_attention),
                          (hw2.check_split_heads, split_heads), (hw2.check_merge_heads, merge_heads),
                          (hw2.check_block_forward, residual_block_forward),
                          (hw2.check_block_params, encoder_block_params), (hw2.check_stream_std, stream_std),
                          (hw2.check_readout, readout), (hw2.check_vit_params, vit_params),
                          (hw2.check_pool_acc, POOL_ACC), (hw2.check_pool_conclusion, "c"),
                          (hw2.check_stream_growth, "b")]:
        check(answer)
    hw2.check_pre_std_48(3.85, stream_std)


@pytest.mark.parametrize("label", PUBLIC_MISTAKES)
def test_public_check_names_the_classic_mistake(label):
    check, answer, words = PUBLIC_MISTAKES[label]
    with pytest.raises(AssertionError, match=words.replace("(", r"\(").replace(")", r"\)")):
        check(answer)


def test_public_checks_of_values_check_form_and_consistency_only():
    for bad in (None, ..., "e", 2):
        with pytest.raises(AssertionError):
            hw2.check_stream_growth(bad)
        with pytest.raises(AssertionError):
            hw2.check_pool_conclusion(bad)
    for letter in "abcd":  # a wrong letter passes the public check: it only checks the form
        hw2.check_stream_growth(letter)
        hw2.check_pool_conclusion(letter)
    with pytest.raises(AssertionError, match="your stream_std gives 3.85"):
        hw2.check_pre_std_48(4.1, stream_std)
    with pytest.raises(AssertionError, match="in percent"):
        hw2.check_pool_acc({"cls": [0.43, 0.45, 0.42], "mean": [0.42, 0.39, 0.44]})
    with pytest.raises(AssertionError, match="keys 'cls' and 'mean'"):
        hw2.check_pool_acc({"cls": [43.0, 45.0, 42.0]})
    hw2.check_pool_acc({"cls": [30.0, 31.0, 32.0], "mean": [60.0, 61.0, 62.0]})  # any real run's numbers pass


def test_the_public_checks_never_use_a_hidden_input():
    source = Path(hw2.__file__).read_text()
    for name in ("QKV", "SELF", "CROSS", "MASKED", "BLOCKS", "BLOCK_PARAMS", "STREAMS", "READOUT_CLS",
                 "READOUT_MEAN", "VIT_PARAMS"):
        assert name not in source
    for secret in ("0.3", "1.7", "3.851", "pool_conclusion\": \"c", "stream_growth\": \"b"):
        assert secret not in source, secret


# ---------------------------------------------------------------- the hidden checks


def verdicts(ns, question=None):
    """Every question's verdict (only ``question``'s checks run when it is given; the others then score 0)."""
    probed = {"cases": {c.id: cases.probe_one(c, ns, seconds=60) for c in cases.cases
                        if question in (None, c.question)}, "public": {}}
    return cases.judge_all(probed, KEY)


@pytest.fixture(scope="module")
def master():
    return verdicts(dict(MASTER))


def test_hidden_checks_give_the_master_full_marks(master):
    assert {q: v.score for q, v in master.items()} == {q: v.possible for q, v in master.items()}
    assert sum(v.possible for v in master.values()) == 24


# answer name -> mistake, and the score its question should then get
HIDDEN_MISTAKES = {
    "qkv not split": ("ch05_qkv_shapes", {"qkv_shapes": _q_not_split}, 0),
    "mask after the softmax": ("ch05_attention", {"my_attention": _mask_after_softmax}, 2),
    "no √d": ("ch05_attention", {"my_attention": _no_sqrt}, 0),
    "split without transpose": ("ch06_split_heads", {"split_heads": _split_plain_reshape}, 0),
    "merge without transpose": ("ch06_merge_heads", {"merge_heads": _merge_plain_reshape}, 0),
    "head mask ignored": ("ch06_merge_heads", {"merge_heads": _mask_ignored_in_merge}, 1),
    "MLP branch not scaled": ("ch07_block_forward", {"residual_block_forward": _mlp_not_scaled}, 1),
    "Pre-LN always": ("ch07_block_forward", {"residual_block_forward": _always_pre}, 2),
    "qkv bias ignored": ("ch07_block_params", {"encoder_block_params": _qkv_bias_ignored}, 0),
    "tokens drawn first": ("ch07_stream_growth", {"stream_std": _tokens_first}, 2),
    "stream number off": ("ch07_stream_growth", {"pre_std_48": 2.04}, 2),
    "stream grows like L": ("ch07_stream_growth", {"stream_growth": "c"}, 2),
    "mean over the prefix too": ("ch08_readout", {"readout": _mean_with_prefix}, 1),
    "Post-LN with a final norm": ("ch08_vit_params", {"vit_params": _always_final_norm}, 2),
    "sin-cos counted": ("ch08_vit_params", {"vit_params": _always_learned_table}, 2),
    "accuracies as fractions": ("ch08_pool_experiment",
                                {"pool_acc": {p: [v / 100 for v in r] for p, r in POOL_ACC.items()}}, 1),
    "made-up accuracies": ("ch08_pool_experiment", {"pool_acc": {"cls": [80.0, 81.0, 82.0],
                                                                 "mean": [42.4, 39.4, 44.0]}}, 1),
    "CLS is better": ("ch08_pool_experiment", {"pool_conclusion": "a"}, 2),
}


@pytest.mark.parametrize("label", HIDDEN_MISTAKES)
def test_hidden_checks_give_the_mistake_its_partial_marks(label):
    question, change, score = HIDDEN_MISTAKES[label]
    got = verdicts({**MASTER, **change}, question)
    assert got[question].score == score, got[question]


REFERENCE_CALLS = {
    "ch05_attention": {"my_attention": lambda q, k, v, keep=None: (
        vit_edu.attention_weights(q, k) @ v, vit_edu.attention_weights(q, k))},
    "ch07_block_forward": {"residual_block_forward": lambda block, x, scale, norm: (
        hw2._rewired(block, norm, scale, scale)(x)[0])},
    "ch07_block_params": {"encoder_block_params": lambda d, m, b: vit_edu.count_parameters(vit_edu.EncoderBlock(
        vit_edu.ViTConfig(image_size=16, patch_size=16, embed_dim=d, num_heads=1, mlp_dim=m, qkv_bias=b)))},
    "ch08_readout": {"readout": lambda tokens, pool, num_prefix: vit_edu.VisionTransformer.pool(
        type("M", (), {"config": type("C", (), {"pool": pool})})(), tokens)},
    "ch08_vit_params": {"vit_params": lambda c: vit_edu.count_parameters(vit_edu.VisionTransformer(c))},
}


@pytest.mark.parametrize("question", REFERENCE_CALLS)
def test_calling_the_book_s_reference_scores_zero(question):
    got = verdicts({**MASTER, **REFERENCE_CALLS[question]}, question)
    assert got[question].score == 0
    assert any("called the book's reference" in d for d in got[question].detail), got[question].detail


def test_the_key_script_computes_what_the_judges_need():
    key = load_module("hw2_encoder_key", (HIDDEN / "hw2_encoder_key.py").read_text())
    assert abs(key.pre_std_48(range(1)) - stream_std("pre", 48, 0)[-1]) < 1e-9
