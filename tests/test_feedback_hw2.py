"""Homework 2's checks as data: the public checks pass the master's answers and name each classic mistake; the
hidden checks, drawn from two secrets, give the master full marks and each mistake its hint; the shipped public
data holds no hidden value and is what ``make()`` gives now.

The master's answers are the code cells of ``book/homework/hw2_encoder.ipynb`` (its set-up, solutions and
experiments), run in this process; the mistakes are written out below. Hidden examples are judged as the grader
judges them: the answer's output encoded and decoded, the example read back from its JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from vit_edu.homework.assignment import drawer
from vit_edu.homework.build import load_module, public_draw
from vit_edu.homework.checks import PUBLIC, check
from vit_edu.homework.plain import decode

from homework_helpers import assert_close, in_process_grade as grade, master_namespace

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw2_encoder"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
SECRETS = ("secret-one-xyz", "another-secret-42")


# ---------------------------------------------------------------- fixtures: built once per module


@pytest.fixture(scope="module")
def hidden():
    """The instructor's module, loaded once, so its experiments' reference runs are made once."""
    return load_module(f"hidden_{NAME}", ROOT / "book" / "homework" / "hidden" / f"{NAME}.py")


@pytest.fixture(scope="module")
def assignments(hidden):
    """The assignment built with each of two secrets."""
    return {secret: hidden.make(drawer(secret, NAME)) for secret in SECRETS}


@pytest.fixture(scope="module")
def master():
    """The master\'s answers: its set-up and solution cells run in one namespace, as in the notebook."""
    return master_namespace(MASTER)


def answers_of(assignment, question: str, ns: dict) -> dict:
    return {a: ns.get(a) for a in assignment.questions[question].answers}


# ---------------------------------------------------------------- the classic mistakes


def qkv_not_3d(batch, seq, dim, heads):
    return (batch, seq, dim), (batch, heads, seq, dim // heads), (batch, heads, seq, seq)


def q_not_transposed(batch, seq, dim, heads):
    return (batch, seq, 3 * dim), (batch, seq, heads, dim // heads), (batch, heads, seq, seq)


def q_not_split(batch, seq, dim, heads):
    return (batch, seq, 3 * dim), (batch, heads, seq, dim), (batch, heads, seq, seq)


def weights_one_table(batch, seq, dim, heads):
    return (batch, seq, 3 * dim), (batch, heads, seq, dim // heads), (batch, seq, seq)


def weights_like_q(batch, seq, dim, heads):
    return (batch, seq, 3 * dim), (batch, heads, seq, dim // heads), (batch, heads, seq, dim // heads)


def attention_with(scale_power=0.5, softmax_dim=-1, mask_after=False, use_mask=True):
    """A ``my_attention`` with one slip: another scale, the softmax over the queries, the mask late or ignored."""
    def my_attention(q, k, v, keep=None):
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** scale_power
        if keep is not None and use_mask and not mask_after:
            scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        weights = scores.softmax(softmax_dim)
        if keep is not None and use_mask and mask_after:
            weights = weights * keep[:, None, None, :]
        return weights @ v, weights
    return my_attention


def split_plain_reshape(x, heads):
    b, s, d = x.shape
    return x.reshape(b, heads, s, d // heads)


def split_interleaved(x, heads):
    b, s, d = x.shape
    return x.reshape(b, s, d // heads, heads).permute(0, 3, 1, 2)


def merge_with(transpose=True, interleave=False, mask="right"):
    """A ``merge_heads`` with one slip: no transpose, features interleaved, the mask ignored or tiled."""
    def merge_heads(x, head_mask=None):
        b, h, s, d = x.shape
        if head_mask is not None and mask == "right":
            x = x * head_mask[None, :, None, None]
        if interleave:
            out = x.permute(0, 2, 3, 1).reshape(b, s, h * d)
        else:
            out = (x.transpose(1, 2) if transpose else x).reshape(b, s, h * d)
        return out * head_mask.repeat(d) if head_mask is not None and mask == "tiled" else out
    return merge_heads


def block_with(attn_scaled=True, mlp_scaled=True, wiring=None, mlp_reads_input=False, sum_scaled=False,
               second_residual=True, mlp_unscaled_alone=False):
    """A ``residual_block_forward`` with one slip of the scale, the wiring or the residuals."""
    def residual_block_forward(block, x, scale, norm):
        a, m = (scale if attn_scaled else 1), (scale if mlp_scaled else 1)
        if (wiring or norm) == "post":
            x = block.norm1(x + a * block.attn(x)[0])
            return block.norm2(x + m * block.mlp(x))
        if sum_scaled:
            x = scale * (x + block.attn(block.norm1(x))[0])
            return scale * (x + block.mlp(block.norm2(x)))
        x1 = x + a * block.attn(block.norm1(x))[0]
        update = block.mlp(block.norm2(x if mlp_reads_input else x1))
        if not second_residual:
            return update if mlp_unscaled_alone else m * update
        return x1 + m * update
    return residual_block_forward


def block_params_with(norms=4, qkv_bias_always=False, proj_bias=True, biases=True):
    """An ``encoder_block_params`` with one slip: LayerNorms, the qkv bias, the projection's bias, every bias."""
    def encoder_block_params(dim, mlp_dim, qkv_bias):
        qkv_b = 3 * dim if (qkv_bias or qkv_bias_always) and biases else 0
        proj_b = dim if proj_bias and biases else 0
        mlp_b = mlp_dim + dim if biases else 0
        return norms * dim + 3 * dim * dim + qkv_b + dim * dim + proj_b + 2 * dim * mlp_dim + mlp_b
    return encoder_block_params


def stream_with(fixed_norm=None, tokens_first=False):
    """A ``stream_std`` with one slip: ``norm`` ignored, or the tokens drawn before the blocks."""
    def stream_std(norm, depth, seed):
        import vit_edu
        torch.manual_seed(seed)
        cfg = vit_edu.ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=depth, num_heads=4, mlp_dim=256,
                                norm=fixed_norm or norm)
        x = torch.randn(16, cfg.seq_len, 64) if tokens_first else None
        blocks = [vit_edu.EncoderBlock(cfg, i) for i in range(depth)]
        x = torch.randn(16, cfg.seq_len, 64) if x is None else x
        stds = []
        with torch.no_grad():
            for block in blocks:
                x, _ = block(x)
                stds.append(x.std().item())
        return stds
    return stream_std


def readout_keepdim(tokens, pool, num_prefix):
    return tokens[:, 0:1] if pool == "cls" else tokens[:, num_prefix:].mean(dim=1, keepdim=True)


def readout_with(cls_index=None, cls_mean=False, mean_all=False, mean_token0=False):
    """A ``readout`` with one slip: the CLS token looked up elsewhere or averaged, the mean over the wrong tokens."""
    def readout(tokens, pool, num_prefix):
        if pool == "cls":
            if cls_mean:
                return tokens[:, num_prefix:].mean(dim=1)
            return tokens[:, num_prefix - 1 if cls_index == "last prefix" else 0]
        if mean_token0:
            return tokens[:, 0]
        return tokens.mean(dim=1) if mean_all else tokens[:, num_prefix:].mean(dim=1)
    return readout


def vit_params_with(slip):
    """A ``vit_params`` with one slip of the CLS token, the position table, the final norm, the qkv bias, the grid
    or the channels."""
    def vit_params(c):
        d = c.embed_dim
        gh, gw = c.grid_size
        gh, gw = {"square h": (gh, gh), "square w": (gw, gw)}.get(slip, (gh, gw))
        channels = 3 if slip == "three channels" else c.in_channels
        cls = c.pool == "cls" or slip in ("mean CLS token", "mean CLS token and row")
        rows = gh * gw + (1 if c.pool == "cls" and slip != "no CLS row" or slip == "mean CLS token and row" else 0)
        learned = c.pos_embed == "learned" or slip == "table always"
        positions = rows * d if learned and slip != "no table" else 0
        qkv_b = 3 * d if c.qkv_bias or slip == "qkv bias always" else 0
        block = 4 * d + 3 * d * d + qkv_b + d * d + d + 2 * d * c.mlp_dim + c.mlp_dim + d
        final = 2 * d if (c.norm == "pre" or slip == "final norm always") and slip != "no final norm" else 0
        patch = d * channels * c.patch_size**2 + d
        return patch + (d if cls else 0) + positions + c.depth * block + final + d * c.num_classes + c.num_classes
    return vit_params


# label: (question, answers changed, points its hidden checks then give, hint words, the public check names it)
MISTAKES = {
    "qkv not 3D": ("ch05_qkv_shapes", {"qkv_shapes": qkv_not_3d}, 0, "one Linear(D, 3D)", True),
    "q not transposed": ("ch05_qkv_shapes", {"qkv_shapes": q_not_transposed}, 0, "heads before tokens", True),
    "q not split": ("ch05_qkv_shapes", {"qkv_shapes": q_not_split}, 0, "each head gets d = D/h", True),
    "one weight table": ("ch05_qkv_shapes", {"qkv_shapes": weights_one_table}, 0, "per head and per image", True),
    "weights shaped like q": ("ch05_qkv_shapes", {"qkv_shapes": weights_like_q}, 0, "every query with every key",
                              True),
    "mask after the softmax": ("ch05_attention", {"my_attention": attention_with(mask_after=True)}, 2,
                               "mask the scores before the softmax", True),
    "mask ignored": ("ch05_attention", {"my_attention": attention_with(use_mask=False)}, 2, "the mask is not applied",
                     True),
    "no √d": ("ch05_attention", {"my_attention": attention_with(scale_power=0)}, 0, "the scores by √d", True),
    "divided by d": ("ch05_attention", {"my_attention": attention_with(scale_power=1)}, 0, "not by d", True),
    "softmax over the queries": ("ch05_attention", {"my_attention": attention_with(softmax_dim=-2)}, 0,
                                 "the softmax runs over the keys", True),
    "split without transpose": ("ch06_split_heads", {"split_heads": split_plain_reshape}, 0, "then transpose(1, 2)",
                                True),
    "split interleaved": ("ch06_split_heads", {"split_heads": split_interleaved}, 0, "not every h-th feature", True),
    "merge without transpose": ("ch06_merge_heads", {"merge_heads": merge_with(transpose=False)}, 0,
                                "transpose(1, 2) before the reshape", True),
    "merge interleaved": ("ch06_merge_heads", {"merge_heads": merge_with(interleave=True)}, 0, "not interleaved",
                          True),
    "head mask ignored": ("ch06_merge_heads", {"merge_heads": merge_with(mask="ignored")}, 1,
                          "the head mask is not applied", True),
    "head mask tiled": ("ch06_merge_heads", {"merge_heads": merge_with(mask="tiled")}, 1, "repeat_interleave", True),
    "Post-LN wiring": ("ch07_block_forward", {"residual_block_forward": block_with(wiring="post")}, 1,
                       "that is the post-LN wiring", True),
    "Pre-LN wiring": ("ch07_block_forward", {"residual_block_forward": block_with(wiring="pre")}, 2,
                      "that is the pre-LN wiring", False),
    "scale missing": ("ch07_block_forward", {"residual_block_forward": block_with(attn_scaled=False,
                                                                                  mlp_scaled=False)}, 1,
                      "the scale is missing", True),
    "MLP not scaled": ("ch07_block_forward", {"residual_block_forward": block_with(mlp_scaled=False)}, 1,
                       "the MLP branch's update is not scaled", True),
    "attention not scaled": ("ch07_block_forward", {"residual_block_forward": block_with(attn_scaled=False)}, 1,
                             "the attention branch's update is not scaled", True),
    "MLP reads the input": ("ch07_block_forward", {"residual_block_forward": block_with(mlp_reads_input=True)}, 1,
                            "not the block input", True),
    "sum scaled": ("ch07_block_forward", {"residual_block_forward": block_with(sum_scaled=True)}, 2,
                   "scale the branch's update, not the sum", True),
    "no second residual": ("ch07_block_forward", {"residual_block_forward": block_with(second_residual=False)}, 1,
                           "the second residual", True),
    "no second residual, unscaled": ("ch07_block_forward", {"residual_block_forward": block_with(
        second_residual=False, mlp_unscaled_alone=True)}, 1, "the second residual", True),
    "LayerNorms left out": ("ch07_block_params", {"encoder_block_params": block_params_with(norms=0)}, 0,
                            "the two LayerNorms", True),
    "qkv bias always": ("ch07_block_params", {"encoder_block_params": block_params_with(qkv_bias_always=True)}, 0,
                        "has no bias", True),
    "proj bias dropped": ("ch07_block_params", {"encoder_block_params": block_params_with(proj_bias=False)}, 0,
                          "the output projection keeps its bias", False),
    "no biases": ("ch07_block_params", {"encoder_block_params": block_params_with(biases=False)}, 0,
                  "count the biases too", True),
    "Post-LN stream": ("ch07_stream_growth", {"stream_std": stream_with(fixed_norm="post")}, 2,
                       "a Pre-LN block's output is not normalised", True),
    "Pre-LN stream": ("ch07_stream_growth", {"stream_std": stream_with(fixed_norm="pre")}, 2,
                      "pass norm=norm", False),
    "tokens drawn first": ("ch07_stream_growth", {"stream_std": stream_with(tokens_first=True)}, 2,
                           "follow the recipe's order", True),
    "stream number off": ("ch07_stream_growth", {"pre_std_48": 2.04}, 2, "", False),
    "stream grows like L": ("ch07_stream_growth", {"stream_growth": "c"}, 2, "", False),
    "readout keeps the token axis": ("ch08_readout", {"readout": readout_keepdim}, 0, "drop the token axis", True),
    "CLS averaged": ("ch08_readout", {"readout": readout_with(cls_mean=True)}, 1, "not a mean", True),
    "CLS after the prefix": ("ch08_readout", {"readout": readout_with(cls_index="last prefix")}, 1,
                             "the CLS token comes first", True),
    "mean over the prefix too": ("ch08_readout", {"readout": readout_with(mean_all=True)}, 1, "patch tokens only",
                                 True),
    "mean is token 0": ("ch08_readout", {"readout": readout_with(mean_token0=True)}, 1, "average the patch tokens",
                        True),
    "no CLS row": ("ch08_vit_params", {"vit_params": vit_params_with("no CLS row")}, 2,
                   "the CLS token, or its row of the position table", True),
    "mean with a CLS row": ("ch08_vit_params", {"vit_params": vit_params_with("mean CLS token and row")}, 1,
                            "no position row for it", False),
    "mean with a CLS token": ("ch08_vit_params", {"vit_params": vit_params_with("mean CLS token")}, 1,
                              "no position row for it", False),
    "no position table": ("ch08_vit_params", {"vit_params": vit_params_with("no table")}, 1,
                          "the learned position table", True),
    "a table always": ("ch08_vit_params", {"vit_params": vit_params_with("table always")}, 2,
                       "no learned position table", False),
    "no final norm": ("ch08_vit_params", {"vit_params": vit_params_with("no final norm")}, 0,
                      "the final LayerNorm (2·D) is missing", True),
    "final norm always": ("ch08_vit_params", {"vit_params": vit_params_with("final norm always")}, 2,
                          "a Post-LN model has no final LayerNorm", False),
    "qkv bias ignored": ("ch08_vit_params", {"vit_params": vit_params_with("qkv bias always")}, 2,
                         "the qkv projections have no bias", False),
    "square grid (height)": ("ch08_vit_params", {"vit_params": vit_params_with("square h")}, 2,
                             "the grid is config.grid_size", False),
    "square grid (width)": ("ch08_vit_params", {"vit_params": vit_params_with("square w")}, 2,
                            "the grid is config.grid_size", False),
    "three channels always": ("ch08_vit_params", {"vit_params": vit_params_with("three channels")}, 2,
                              "config.in_channels", False),
    "accuracies as fractions": ("ch08_pool_experiment", {"pool_acc": "fractions"}, 1, "in percent", False),
    "made-up accuracies": ("ch08_pool_experiment", {"pool_acc": {"cls": [80.0, 81.0, 82.0],
                                                                 "mean": [42.4, 39.4, 44.0]}}, 1, "", False),
    "CLS is better": ("ch08_pool_experiment", {"pool_conclusion": "a"}, 2, "", False),
}


def with_mistake(ns: dict, change: dict) -> dict:
    """The master's answers with one mistake (``"fractions"``: the master's accuracies divided by 100)."""
    if change.get("pool_acc") == "fractions":
        change = {"pool_acc": {p: [v / 100 for v in runs] for p, runs in ns["pool_acc"].items()}}
    return {**ns, **change}


# ---------------------------------------------------------------- the public checks


def test_public_checks_pass_the_masters_answers(assignments, master):
    assignment = assignments[SECRETS[0]]
    for question in assignment.questions:
        check(question, **answers_of(assignment, question, master))


@pytest.mark.parametrize("label", [k for k, v in MISTAKES.items() if v[4]])
def test_public_check_names_the_classic_mistake(label, assignments, master):
    question, change, _, words, _ = MISTAKES[label]
    with pytest.raises(AssertionError) as e:
        check(question, **answers_of(assignments[SECRETS[0]], question, with_mistake(master, change)))
    assert words in str(e.value), str(e.value)


def test_public_checks_of_values_check_their_form_only(assignments, master):
    answers = answers_of(assignments[SECRETS[0]], "ch08_pool_experiment", master)
    check("ch08_pool_experiment", **{**answers, "pool_acc": {"cls": [30.0, 31.0, 32.0], "mean": [60.0, 61.0, 62.0]},
                                     "pool_conclusion": "d"})  # any real run's numbers, any letter
    for bad in ({"cls": [43.0, 45.0, 42.0]}, {"cls": [1.0] * 3, "mean": "no"}):
        with pytest.raises(AssertionError, match="pool_acc"):
            check("ch08_pool_experiment", **{**answers, "pool_acc": bad})
    with pytest.raises(AssertionError, match="stream_growth"):
        check("ch07_stream_growth", **{**answers_of(assignments[SECRETS[0]], "ch07_stream_growth", master),
                                       "stream_growth": 2})


def test_the_public_data_holds_no_hidden_value(hidden, assignments):
    public = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert set(public) == {"assignment", "questions"}
    assert all(set(spec) == {"public"} for spec in public["questions"].values())
    values = {e["answer"]: e for spec in public["questions"].values() for e in spec["public"] if e["args"] is None}
    assert set(values) == {"pre_std_48", "stream_growth", "pool_acc", "pool_conclusion"}
    assert all(e["form_only"] and not e["mistakes"] for e in values.values())
    key = hidden.experiment_key()
    for answer, right in (("stream_growth", hidden.STREAM_GROWTH), ("pool_conclusion", hidden.POOL_CONCLUSION),
                          ("pre_std_48", key["pre_std_48"])):
        assert decode(values[answer]["expect"]) != right, answer
    text = json.dumps(public)
    for v in key["pool_acc"]["cls"] + key["pool_acc"]["mean"] + [key["pre_std_48"]]:
        assert str(v) not in text, v


# ---------------------------------------------------------------- the hidden checks


def test_hidden_examples_differ_between_secrets(assignments):
    one, two = (a.data()["questions"] for a in assignments.values())
    for question in ("ch05_qkv_shapes", "ch05_attention", "ch06_split_heads", "ch06_merge_heads",
                     "ch07_block_forward", "ch07_block_params", "ch08_readout", "ch08_vit_params"):
        assert one[question]["checks"] != two[question]["checks"], question
        assert one[question]["public"] == two[question]["public"], question


@pytest.mark.parametrize("secret", SECRETS)
def test_hidden_checks_give_the_master_full_marks(secret, assignments, master):
    assignment = assignments[secret]
    for question, q in assignment.questions.items():
        assert grade(assignment, question, master) == (q.points, []), question
    assert sum(q.points for q in assignment.questions.values()) == 24


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("label", MISTAKES)
def test_hidden_checks_give_the_mistake_its_hint_and_partial_marks(label, secret, assignments, master):
    question, change, points, words, _ = MISTAKES[label]
    score, hints = grade(assignments[secret], question, with_mistake(master, change))
    assert score == points, (score, hints)
    assert any(words in h for h in hints) if words else hints, hints


def test_the_committed_public_data_is_what_make_gives(hidden):
    committed = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert_close(committed, json.loads(json.dumps(hidden.make(public_draw).public_data())), "public")

