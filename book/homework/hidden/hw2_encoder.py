"""Hidden checks of homework 2 (instructor only: built into the autograder zip, never into ``vit_edu``).

Each check's probe runs in the student's kernel and returns plain data; its judge runs in the grader with the
public ``expect_*`` of :mod:`vit_edu.homework.feedback.hw2` on these inputs, and, for the two experiments, with
the answer key (``hw2_encoder_key.json`` and what ``hw2_encoder_key.py`` computes). 24 points: 17 for code, 2 for
warm-ups, 5 for the two experiments' results.
"""

from vit_edu.config import ViTConfig
from vit_edu.homework.cases import Cases, call, value
from vit_edu.homework.feedback import hw2
from vit_edu.homework.feedback.common import seeded, within

cases = Cases("hw2_encoder")

# ---------------------------------------------------------------- chapter 5

cases.question("ch05_qkv_shapes", answers=("qkv_shapes",), public="check_qkv_shapes")
QKV = [(3, 50, 96, 4), (1, 82, 120, 5), (2, 9, 36, 6)]


@cases.add("ch05_qkv_shapes", "other batches, lengths, widths and heads")
def _(ns):
    return [call(ns, "qkv_shapes", *args) for args in QKV]


@_.judge
def _(got, key):
    for args, out in zip(QKV, got, strict=True):
        hw2.expect_qkv_shapes(out, *args)


ATTENTION_REFS = ("vit_edu.attention.attention_weights", "vit_edu.attention.MultiHeadSelfAttention",
                  "torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention")
cases.question("ch05_attention", answers=("my_attention",), public="check_attention", references=ATTENTION_REFS)
SELF = (3, 2, 6, 6, 12, 201, False)  # B, h, S_q, S_k, d, seed, masked
CROSS = (2, 2, 3, 7, 8, 211, False)
MASKED = (3, 2, 4, 6, 8, 221, True)


def _attention(ns, spec):
    q, k, v, keep = hw2.attention_inputs(*spec)
    return call(ns, "my_attention", q, k, v, keep)


def _attention_judge(spec):
    return lambda got, key: hw2.expect_attention(got, *hw2.attention_inputs(*spec))


cases.add("ch05_attention", "self-attention, several heads")(lambda ns: _attention(ns, SELF)).judge(
    _attention_judge(SELF))
cases.add("ch05_attention", "fewer queries than keys (S_q ≠ S_k)")(lambda ns: _attention(ns, CROSS)).judge(
    _attention_judge(CROSS))
cases.add("ch05_attention", "a keep mask over the keys")(lambda ns: _attention(ns, MASKED)).judge(
    _attention_judge(MASKED))

# ---------------------------------------------------------------- chapter 6

cases.question("ch06_split_heads", answers=("split_heads",), public="check_split_heads",
               references=("vit_edu.attention.MultiHeadSelfAttention",))


def _split_input():
    return seeded(3, 4, 15, seed=231), 5


@cases.add("ch06_split_heads", "another batch, width and number of heads", points=2)
def _(ns):
    x, h = _split_input()
    return call(ns, "split_heads", x, h)


_.judge(lambda got, key: hw2.expect_split_heads(got, *_split_input()))

cases.question("ch06_merge_heads", answers=("merge_heads",), public="check_merge_heads",
               references=("vit_edu.attention.MultiHeadSelfAttention",))


def _merge_inputs(masked):
    x = seeded(2, 5, 4, 3, seed=241)  # (B, h, S, d)
    return x, (seeded(5, seed=242).abs() if masked else None)


def _merge_case(name, masked):
    @cases.add("ch06_merge_heads", name)
    def probe(ns):
        return call(ns, "merge_heads", *_merge_inputs(masked))

    probe.judge(lambda got, key: hw2.expect_merge_heads(got, *_merge_inputs(masked)))


_merge_case("more heads and tokens, no mask", False)
_merge_case("more heads and tokens, with a head mask", True)

# ---------------------------------------------------------------- chapter 7

cases.question("ch07_block_forward", answers=("residual_block_forward",), public="check_block_forward",
               references=("vit_edu.block.EncoderBlock.forward",))
BLOCKS = {  # name: (block seed, x seed, dim, heads, mlp, scale, norm, points)
    "Pre-LN with a residual scale": (251, 252, 24, 3, 40, 0.3, "pre", 2),
    "Post-LN with a residual scale": (253, 254, 16, 2, 48, 1.7, "post", 1),
    "Pre-LN and Post-LN at scale 1 equal the block": (255, 256, 16, 4, 32, 1.0, "both", 1),
}


def _block_case(name, spec):
    block_seed, x_seed, dim, heads, mlp, scale, norm, points = spec
    norms = ("pre", "post") if norm == "both" else (norm,)

    @cases.add("ch07_block_forward", name, points=points)
    def probe(ns):
        out = []
        for n in norms:
            block, x = hw2.small_block(block_seed, dim, heads, mlp), seeded(3, 6, dim, seed=x_seed)
            out.append(call(ns, "residual_block_forward", block, x, scale, n))
        return out

    @probe.judge
    def judge(got, key):
        for n, out in zip(norms, got, strict=True):
            hw2.expect_block_forward(out, hw2.small_block(block_seed, dim, heads, mlp),
                                     seeded(3, 6, dim, seed=x_seed), scale, n)


for _name, _spec in BLOCKS.items():
    _block_case(_name, _spec)

cases.question("ch07_block_params", answers=("encoder_block_params",), public="check_block_params",
               references=("vit_edu.block.EncoderBlock", "vit_edu.trace.count_parameters"))
BLOCK_PARAMS = [(96, 200, False), (48, 192, True), (40, 100, False)]


@cases.add("ch07_block_params", "other widths, with and without the qkv bias")
def _(ns):
    return [call(ns, "encoder_block_params", *args) for args in BLOCK_PARAMS]


@_.judge
def _(got, key):
    for args, out in zip(BLOCK_PARAMS, got, strict=True):
        hw2.expect_block_params(out, *args)


cases.question("ch07_stream_growth", answers=("stream_std", "pre_std_48", "stream_growth"),
               public="check_stream_std")
STREAMS = [("pre", 7, 17), ("post", 4, 23)]


@cases.add("ch07_stream_growth", "stream_std follows the recipe (other depths and seeds)")
def _(ns):
    return [call(ns, "stream_std", *args) for args in STREAMS]


@_.judge
def _(got, key):
    for args, out in zip(STREAMS, got, strict=True):
        hw2.expect_stream_std(out, *args)


@cases.add("ch07_stream_growth", "pre_std_48: the measured Pre-LN stream after 48 blocks")
def _(ns):
    return value(ns, "pre_std_48")


_.judge(lambda got, key: within(got, key["pre_std_48"], key["pre_std_48_tolerance"], "pre_std_48"))


@cases.add("ch07_stream_growth", "stream_growth: how the stream grows with depth")
def _(ns):
    return value(ns, "stream_growth")


_.judge(lambda got, key: hw2.expect_choice(got, key["stream_growth"], "stream_growth"))

# ---------------------------------------------------------------- chapter 8

cases.question("ch08_readout", answers=("readout",), public="check_readout",
               references=("vit_edu.model.VisionTransformer",))
READOUT_CLS = [(3, 7, 5, "cls", 1, 261), (2, 9, 4, "cls", 3, 262)]  # B, S, D, pool, prefix, seed
READOUT_MEAN = [(3, 7, 5, "mean", 0, 263), (2, 9, 4, "mean", 3, 264)]


def _readout_case(name, specs):
    @cases.add("ch08_readout", name)
    def probe(ns):
        return [call(ns, "readout", seeded(b, s, d, seed=seed), pool, prefix) for b, s, d, pool, prefix, seed in specs]

    @probe.judge
    def judge(got, key):
        for (b, s, d, pool, prefix, seed), out in zip(specs, got, strict=True):
            hw2.expect_readout(out, seeded(b, s, d, seed=seed), pool, prefix)


_readout_case("pool='cls' with prefix tokens", READOUT_CLS)
_readout_case("pool='mean' with and without prefix tokens", READOUT_MEAN)

cases.question("ch08_vit_params", answers=("vit_params",), public="check_vit_params",
               references=("vit_edu.model.VisionTransformer", "vit_edu.trace.count_parameters",
                           "vit_edu.widgets.cost_calculator.vit_parameters"))
VIT_PARAMS = {
    "a larger image with bigger patches": [ViTConfig(image_size=384, patch_size=32, embed_dim=192, depth=4,
                                                     num_heads=3, mlp_dim=768)],
    "non-square grey images, mean pooling, no qkv bias": [
        ViTConfig(image_size=(40, 24), patch_size=8, in_channels=1, embed_dim=24, depth=3, num_heads=2, mlp_dim=48,
                  num_classes=6, pool="mean", qkv_bias=False)],
    "Post-LN, sin-cos and no position table": [
        ViTConfig(image_size=32, patch_size=4, embed_dim=48, depth=3, num_heads=4, mlp_dim=96, num_classes=5,
                  norm="post", pos_embed="sincos"),
        ViTConfig(image_size=(24, 40), patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_dim=20, num_classes=3,
                  pool="mean", pos_embed="none")],
}


def _vit_params_case(name, configs):
    @cases.add("ch08_vit_params", name)
    def probe(ns):
        return [call(ns, "vit_params", cfg) for cfg in configs]

    @probe.judge
    def judge(got, key):
        for cfg, out in zip(configs, got, strict=True):
            hw2.expect_vit_params(out, cfg)


for _name, _configs in VIT_PARAMS.items():
    _vit_params_case(_name, _configs)

cases.question("ch08_pool_experiment", answers=("pool_acc", "pool_conclusion"), public="check_pool_acc")


@cases.add("ch08_pool_experiment", "pool_acc: the six runs of the recipe", points=2)
def _(ns):
    return value(ns, "pool_acc")


_.judge(lambda got, key: hw2.expect_pool_acc(got, key["pool_acc"], key["pool_acc_tolerance"]))


@cases.add("ch08_pool_experiment", "pool_conclusion: what the runs can and cannot show")
def _(ns):
    return value(ns, "pool_conclusion")


_.judge(lambda got, key: hw2.expect_choice(got, key["pool_conclusion"], "pool_conclusion"))
