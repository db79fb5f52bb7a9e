"""Homework 2's checks (instructor only): the public examples and the hidden checks, computed with the references.

``make(draw)`` builds every example: its inputs (hidden ones drawn from the course's secret through ``draw``),
what the book's reference (or, for the exercises' generalisations, the reference code below) returns on them,
and what each classic mistake returns, with its hint. The two experiments' reference numbers are run here too,
with the recipes the exercises state. Nothing of this module enters the package, the site or a grading sandbox:
only the data it returns does. 24 points: 17 for code, 2 for warm-ups, 5 for the two experiments' results.
"""

import random
from dataclasses import fields, replace
from functools import cache

import torch
import torch.nn.functional as F

from vit_edu.attention import attention_weights
from vit_edu.block import EncoderBlock
from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.data import CLASS_NAMES, make_shapes
from vit_edu.homework.assignment import Assignment, seeded
from vit_edu.homework.checks import Example, Mistake
from vit_edu.homework.plain import Recipe, recipe
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters

ATTENTION_REFS = ("vit_edu.attention.attention_weights", "vit_edu.attention.MultiHeadSelfAttention",
                  "vit_edu.variants.windows.masked_self_attention",
                  "torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention")
# The experiments' answers: the letters the runs support, and how far a student's run may be from the reference's.
STREAM_GROWTH, POOL_CONCLUSION = "b", "c"
PRE_STD_48_TOLERANCE, POOL_ACC_TOLERANCE = 0.1, 5.0


def config_recipe(cfg: ViTConfig) -> Recipe:
    """A ``ViTConfig`` as a check's input: every field, so the student's code gets the very same config."""
    return recipe("vit_edu.config.ViTConfig", **{f.name: getattr(cfg, f.name) for f in fields(cfg)})


# ---------------------------------------------------------------- chapter 5


def qkv_shapes(b, s, dim, h):
    """``qkv_shapes(b, s, dim, h)``: the three shapes, and each shape's classic slip."""
    d = dim // h
    qkv, q, w = (b, s, 3 * dim), (b, h, s, d), (b, h, s, s)
    return Example("qkv_shapes", (qkv, q, w), [b, s, dim, h], what=f"qkv_shapes({b}, {s}, {dim}, {h})", mistakes=[
        Mistake("one Linear(D, 3D) makes Q, K and V of every token at once", ((b, s, dim), q, w)),
        Mistake("each head gets d = D/h features of every token, heads before tokens: (B, h, S, d)",
                (qkv, (b, s, h, d), w)),
        Mistake("each head gets d = D/h features of every token", (qkv, (b, h, s, dim), w)),
        Mistake("one S×S table per head and per image", (qkv, q, (b, s, s))),
        Mistake("the weights compare every query with every key: one S×S table per head", (qkv, q, (b, h, s, d)))])


def attention_inputs(b, h, s_q, s_k, d, seed, masked):
    """Seeded ``q (B, h, S_q, d)``, ``k, v (B, h, S_k, d)`` and, with ``masked``, a ``keep (B, S_k)`` mask that
    keeps the first key and drops the last of every image."""
    q, k, v = (2 * seeded(b, h, s, d, seed=seed + i) for i, s in enumerate((s_q, s_k, s_k)))
    if not masked:
        return q, k, v, None
    keep = seeded(b, s_k, seed=seed + 3) > 0
    keep[:, 0], keep[:, -1] = True, False
    return q, k, v, keep


def attention(b, h, s_q, s_k, d, seed, masked):
    """``my_attention(q, k, v, keep)`` = ``(softmax(QKᵀ/√d) V, weights)``, dropped keys at weight exactly 0."""
    q, k, v, keep = attention_inputs(b, h, s_q, s_k, d, seed, masked)
    raw = q @ k.transpose(-2, -1)  # (B, h, S_q, S_k)

    def masked_fill(scores):
        return scores if keep is None else scores.masked_fill(~keep[:, None, None, :], float("-inf"))

    def pair(weights):
        return weights @ v, weights

    want = attention_weights(q, k) if keep is None else masked_fill(raw / d**0.5).softmax(-1)
    mistakes = []
    if keep is not None:
        unmasked = (raw / d**0.5).softmax(-1)
        mistakes += [Mistake("the mask is not applied: a key with keep=False must get weight 0", pair(unmasked)),
                     Mistake("zeroing the weights after the softmax leaves rows that no longer sum to 1; mask the "
                             "scores before the softmax (a score of -inf gets weight 0)",
                             pair(unmasked * keep[:, None, None, :]))]
    mistakes += [Mistake("did you divide the scores by √d (d = q.shape[-1]) before the softmax?",
                         pair(masked_fill(raw).softmax(-1))),
                 Mistake("divide by √d, not by d", pair(masked_fill(raw / d).softmax(-1)))]
    if keep is None:
        mistakes.append(Mistake("the softmax runs over the keys, dim=-1, so each row sums to 1",
                                pair((raw / d**0.5).softmax(-2))))
    return Example("my_attention", pair(want), [q, k, v, keep], mistakes=mistakes,
                   what=f"my_attention(q {tuple(q.shape)}, k {tuple(k.shape)}, v, keep="
                        f"{'None' if keep is None else tuple(keep.shape)})",
                   shape_hint=": (output (B, h, S_q, d), weights (B, h, S_q, S_k)), one row per query, one column "
                              "per key")


# ---------------------------------------------------------------- chapter 6


def split_heads(x, h):
    """``split_heads(x (B, S, D), h)`` -> ``(B, h, S, D/h)``, head i = features i·d … (i+1)·d - 1."""
    b, s, dim = x.shape
    return Example("split_heads", x.reshape(b, s, h, dim // h).transpose(1, 2), [x, h],
                   what=f"split_heads(x of shape {(b, s, dim)}, {h})", shape_hint=" (B, h, S, D/h)", mistakes=[
            Mistake("reshape to (B, S, h, d) first, then transpose(1, 2): a plain reshape mixes tokens",
                    x.reshape(b, h, s, dim // h)),
            Mistake("head i holds a block of d neighbouring features, not every h-th feature",
                    x.reshape(b, s, dim // h, h).permute(0, 3, 1, 2))])


def merge_heads(x, head_mask):
    """``merge_heads(x (B, h, S, d), head_mask)`` -> ``(B, S, h·d)``, head i's output times ``head_mask[i]``."""
    b, h, s, d = x.shape
    scaled = x if head_mask is None else x * head_mask[None, :, None, None]  # (B, h, S, d)
    mistakes = [Mistake("did you transpose(1, 2) before the reshape? Without it, token 0 gets head 0's first tokens",
                        scaled.reshape(b, s, h * d)),
                Mistake("each token's h outputs go side by side, head 0's d features first, not interleaved",
                        scaled.permute(0, 2, 3, 1).reshape(b, s, h * d))]
    if head_mask is not None:
        merged = x.transpose(1, 2).reshape(b, s, h * d)
        mistakes += [Mistake("the head mask is not applied", merged),
                     Mistake("head i owns d neighbouring features of the merged token, so its factor repeats d times "
                             "in a row (repeat_interleave), not h-periodically (repeat)", merged * head_mask.repeat(d))]
    return Example("merge_heads", scaled.transpose(1, 2).reshape(b, s, h * d), [x, head_mask], mistakes=mistakes,
                   what=f"merge_heads(x of shape {(b, h, s, d)}, {'None' if head_mask is None else 'head_mask'})",
                   shape_hint=" (B, S, h·d)")


# ---------------------------------------------------------------- chapter 7


def small_block(seed, dim, heads, mlp):
    """A Pre-LN ``EncoderBlock`` with random weights and LayerNorms moved off the identity, so a missing norm shows."""
    cfg = ViTConfig(image_size=8, patch_size=4, embed_dim=dim, depth=1, num_heads=heads, mlp_dim=mlp)
    torch.manual_seed(seed)
    block = EncoderBlock(cfg).eval()
    with torch.no_grad():
        for ln in (block.norm1, block.norm2):
            ln.weight.add_(torch.randn_like(ln.weight) * 0.5)
            ln.bias.add_(torch.randn_like(ln.bias) * 0.5)
        for lin in (block.mlp.fc1, block.mlp.fc2, block.attn.proj):
            lin.bias.add_(torch.randn_like(lin.bias) * 0.1)
    return block, cfg


def rewired(block, cfg, norm, attn_scale, mlp_scale):
    """The package's own block with ``block``'s weights, ``norm`` wiring, and each branch's last layer scaled.

    Scaling a branch's last linear layer (weight and bias) scales that branch's output: the reference for a
    residual scale without writing the block's formula again.
    """
    ref = EncoderBlock(replace(cfg, norm=norm)).eval()
    ref.load_state_dict(block.state_dict())
    with torch.no_grad():
        for lin, s in ((ref.attn.proj, attn_scale), (ref.mlp.fc2, mlp_scale)):
            lin.weight.mul_(s)
            lin.bias.mul_(s)
    return ref


def block_forward(seed, x, heads, mlp, scale, norm):
    """``residual_block_forward(block, x (B, S, D), scale, norm)``: both residual updates scaled by ``scale``."""
    dim = x.shape[-1]
    block, cfg = small_block(seed, dim, heads, mlp)
    other = "post" if norm == "pre" else "pre"
    with torch.no_grad():
        def out(n, a, m):
            return rewired(block, cfg, n, a, m)(x)[0]

        mistakes = [Mistake(f"that is the {other}-LN wiring; with norm={norm!r} " + (
            "each branch reads a normalised copy and the sum is not normalised" if norm == "pre"
            else "each LayerNorm normalises the sum of the input and the scaled branch"), out(other, scale, scale))]
        if scale != 1:
            mistakes += [Mistake("the scale is missing: multiply each branch's update by scale before adding it",
                                 out(norm, 1, 1)),
                         Mistake("the MLP branch's update is not scaled", out(norm, scale, 1)),
                         Mistake("the attention branch's update is not scaled", out(norm, 1, scale))]
        if norm == "pre":
            n1, n2, attn, mlp_ = block.norm1, block.norm2, (lambda t: block.attn(t)[0]), block.mlp
            x1 = x + scale * attn(n1(x))  # (B, S, D): the first sum
            sum_scaled = scale * (x + attn(n1(x)))
            mistakes += [
                Mistake("the MLP branch reads the first sum (x + scale·attention update), not the block input",
                        x1 + scale * mlp_(n2(x))),
                Mistake("scale the branch's update, not the sum: the residual path carries its input unchanged",
                        scale * (sum_scaled + mlp_(n2(sum_scaled)))),
                *(Mistake("add the MLP's update back to its input (the second residual)", k * mlp_(n2(x1)))
                  for k in (scale, 1))]
        want = out(norm, scale, scale)
    arg = recipe("vit_edu.block.EncoderBlock", config_recipe(cfg), state=block.state_dict())
    return Example("residual_block_forward", want, [arg, x, scale, norm], atol=1e-4, mistakes=mistakes,
                   what=f"residual_block_forward(block (D={dim}, {heads} heads), x of shape {tuple(x.shape)}, "
                        f"{scale}, {norm!r})", shape_hint=": a block keeps the shape (B, S, D)")


def block_params(d, m, qkv_bias):
    """``encoder_block_params(dim, mlp_dim, qkv_bias)`` = parameters of one ``EncoderBlock``."""
    cfg = ViTConfig(image_size=16, patch_size=16, embed_dim=d, num_heads=1, mlp_dim=m, qkv_bias=qkv_bias)
    want = count_parameters(EncoderBlock(cfg))
    mistakes = [Mistake("the two LayerNorms have a weight and a bias of D each", want - 4 * d)]
    if not qkv_bias:
        mistakes += [Mistake("with qkv_bias=False the Linear(D, 3D) has no bias (the output projection keeps its own)",
                             want + 3 * d),
                     Mistake("qkv_bias=False removes only the qkv bias; the output projection keeps its bias",
                             want - d)]
    mistakes.append(Mistake("count the biases too (qkv 3D, proj D, fc1 mlp_dim, fc2 D)",
                            want - (3 * d if qkv_bias else 0) - d - m - d))
    return Example("encoder_block_params", want, [d, m, qkv_bias], mistakes=mistakes,
                   what=f"encoder_block_params({d}, {m}, qkv_bias={qkv_bias})")


def stream_stds(norm, depth, seed, tokens_first=False):
    """The recipe of exercise 7.3: the std of the residual stream after each of ``depth`` fresh blocks
    (``tokens_first``: the classic slip of drawing the tokens before building the blocks)."""
    torch.manual_seed(seed)
    cfg = ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=depth, num_heads=4, mlp_dim=256, norm=norm)
    if tokens_first:
        x = torch.randn(16, cfg.seq_len, cfg.embed_dim)
    blocks = [EncoderBlock(cfg, i) for i in range(depth)]
    if not tokens_first:
        x = torch.randn(16, cfg.seq_len, cfg.embed_dim)  # (16, S, 64)
    stds = []
    with torch.no_grad():
        for blk in blocks:
            x, _ = blk(x)
            stds.append(x.std().item())
    return stds


def stream_std(norm, depth, seed):
    """``stream_std(norm, depth, seed)`` follows the recipe: one std per block, as the reference gives."""
    other = "post" if norm == "pre" else "pre"
    return Example("stream_std", stream_stds(norm, depth, seed), [norm, depth, seed], atol=1e-3,
                   what=f"stream_std({norm!r}, {depth}, {seed})", mistakes=[
            Mistake("a Pre-LN block's output is not normalised: use vit_edu.EncoderBlock(cfg) with norm='pre'"
                    if norm == "pre" else "pass norm=norm to the ViTConfig: every Post-LN block ends in a LayerNorm",
                    stream_stds(other, depth, seed)),
            Mistake("close but not equal: follow the recipe's order exactly (seed, then all blocks, then the tokens), "
                    "with the recipe's sizes", stream_stds(norm, depth, seed, tokens_first=True))])


# ---------------------------------------------------------------- chapter 8


def readout(tokens, pool, num_prefix):
    """``readout(tokens, pool, num_prefix)``: token 0 for ``"cls"``, the mean of the patch tokens for ``"mean"``."""
    b, s, d = tokens.shape
    patches_mean = tokens[:, num_prefix:].mean(dim=1)  # (B, D)
    mistakes = [Mistake("drop the token axis (no keepdim, no slice 0:1)", shape=(b, 1, d))]
    if pool == "cls":
        mistakes.append(Mistake("with pool='cls' the head reads the CLS token, token 0, not a mean", patches_mean))
        if num_prefix > 1:
            mistakes.append(Mistake("the CLS token comes first (index 0); the other prefix tokens follow it",
                                    tokens[:, num_prefix - 1]))
    else:
        if num_prefix > 0:
            mistakes.append(Mistake("the mean runs over the patch tokens only, after the num_prefix prefix tokens",
                                    tokens.mean(dim=1)))
        mistakes.append(Mistake("with pool='mean' average the patch tokens", tokens[:, 0]))
    return Example("readout", tokens[:, 0] if pool == "cls" else patches_mean, [tokens, pool, num_prefix],
                   what=f"readout(tokens of shape {(b, s, d)}, {pool!r}, num_prefix={num_prefix})",
                   shape_hint=" (B, D)", mistakes=mistakes)


def vit_params(cfg):
    """``vit_params(config)`` = the number of parameters of ``VisionTransformer(config)``."""
    want = count_parameters(VisionTransformer(cfg))
    d, s = cfg.embed_dim, cfg.seq_len
    mistakes = []
    if cfg.pool == "cls":
        mistakes.append(Mistake("D parameters missing: the CLS token, or its row of the position table (S = N + 1)",
                                want - d))
    else:
        mistakes += [Mistake("with pool='mean' there is no CLS token and no position row for it (S = N)", want + k * d)
                     for k in (1, 2)]
    if cfg.pos_embed == "learned":
        mistakes.append(Mistake("the learned position table (S × D) is missing", want - s * d))
    else:
        mistakes.append(Mistake(f"with pos_embed={cfg.pos_embed!r} there is no learned position table (a sin-cos "
                                "table is a fixed buffer, not a parameter)", want + s * d))
    if cfg.norm == "pre":
        mistakes.append(Mistake("the final LayerNorm (2·D) is missing", want - 2 * d))
    else:
        mistakes.append(Mistake("a Post-LN model has no final LayerNorm (every block already ends in one)",
                                want + 2 * d))
    if not cfg.qkv_bias:
        mistakes.append(Mistake("with qkv_bias=False the qkv projections have no bias", want + 3 * d * cfg.depth))
    h, w = cfg.image_size
    if h != w and cfg.pos_embed == "learned":  # the grid counts only in the position table
        mistakes += [Mistake("mind the image's height and width: the grid is config.grid_size, (H/P, W/P)",
                             count_parameters(VisionTransformer(replace(cfg, image_size=(side, side)))))
                     for side in (h, w)]
    if cfg.in_channels != 3:
        mistakes.append(Mistake("mind the image's channels: a patch holds config.in_channels·P·P numbers",
                                count_parameters(VisionTransformer(replace(cfg, in_channels=3)))))
    return Example("vit_params", want, [config_recipe(cfg)], mistakes=mistakes,
                   what=f"vit_params(config of image {cfg.image_size}, patch {cfg.patch_size}, C={cfg.in_channels}, "
                        f"D={d}, depth {cfg.depth}, pool={cfg.pool!r}, norm={cfg.norm!r}, "
                        f"pos_embed={cfg.pos_embed!r}, qkv_bias={cfg.qkv_bias})")


def distinct(draw_example):
    """An example of ``draw_example()``, drawn again until no classic mistake gives the right count or another
    mistake's: then each wrong count earns one hint, the right one."""
    while True:
        example = draw_example()
        counts = [example.expect, *(m.output for m in example.mistakes)]
        if len(set(counts)) == len(counts):
            return example


def train_tiny(pool, seed, x_train, y_train, x_test, y_test, steps=50, batch=32, lr=1e-3):
    """Exercise 8.3: chapter 8's tiny run with a seed for the weights and the batches; test accuracy in percent."""
    torch.manual_seed(seed)
    cfg = ViTConfig(image_size=32, patch_size=8, num_classes=len(CLASS_NAMES), embed_dim=64, depth=2, num_heads=4,
                    mlp_dim=256, pool=pool)
    model = VisionTransformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    order = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(x_train), (batch,), generator=order)
        loss = F.cross_entropy(model((x_train[idx] - 0.5) / 0.25), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        return 100 * (model((x_test - 0.5) / 0.25).argmax(1) == y_test).float().mean().item()


@cache
def experiment_key():
    """The two experiments' reference numbers, on one thread as the notebook runs them (about 5 s; made once)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pre_std_48 = sum(stream_stds("pre", 48, s)[-1] for s in range(5)) / 5  # exercise 7.3, seeds 0–4
        x_train, y_train, _ = make_shapes(1000, image_size=32, seed=1)
        x_test, y_test, _ = make_shapes(500, image_size=32, seed=2)
        acc = {pool: [round(train_tiny(pool, s, x_train, y_train, x_test, y_test), 1) for s in range(3)]
               for pool in ("cls", "mean")}
        return {"pre_std_48": round(pre_std_48, 3), "pool_acc": acc}
    finally:
        torch.set_num_threads(threads)


def make(draw):
    """Homework 2's questions, public examples and hidden checks (``draw(label)``: a seed from the secret)."""
    a = Assignment("hw2_encoder")

    q = a.question("ch05_qkv_shapes", ("qkv_shapes",))
    q.public = [qkv_shapes(2, 197, 768, 12)]
    r = random.Random(draw("qkv_shapes"))
    sizes = [(r.randint(1, 4), 2 * r.randint(5, 99) + 1, r.randint(2, 8), 4 * r.randint(1, 8)) for _ in range(3)]
    # S is odd and over 8, d even and h at most 8: no slip gives the right shape by chance
    q.check("other batches, lengths, widths and heads", [qkv_shapes(b, s, h * d, h) for b, s, h, d in sizes])

    q = a.question("ch05_attention", ("my_attention",), references=ATTENTION_REFS)
    q.public = [attention(1, 1, 3, 4, 4, seed=6, masked=False), attention(1, 1, 3, 4, 4, seed=6, masked=True)]
    r = random.Random(draw("attention"))
    s = r.randint(4, 8)
    q.check("self-attention, several heads",
            [attention(r.randint(2, 3), r.randint(2, 4), s, s, 4 * r.randint(2, 4), r.randrange(2**31), False)])
    s = r.randint(2, 4)
    q.check("fewer queries than keys (S_q ≠ S_k)",
            [attention(2, r.randint(2, 3), s, s + r.randint(2, 5), 8, r.randrange(2**31), False)])
    q.check("a keep mask over the keys",
            [attention(3, 2, s, s + r.randint(2, 4), r.choice((4, 8)), r.randrange(2**31), True)])

    q = a.question("ch06_split_heads", ("split_heads",), references=("vit_edu.attention.MultiHeadSelfAttention",))
    q.public = [split_heads(seeded(1, 2, 4, seed=9), 2)]
    r = random.Random(draw("split_heads"))
    h = r.randint(3, 6)
    q.check("another batch, width and number of heads",
            [split_heads(seeded(r.randint(2, 4), r.randint(3, 7), h * r.randint(2, 5), seed=r.randrange(2**31)), h)],
            points=2)

    q = a.question("ch06_merge_heads", ("merge_heads",), references=("vit_edu.attention.MultiHeadSelfAttention",))
    q.public = [merge_heads(seeded(1, 2, 3, 2, seed=10), None),
                merge_heads(seeded(1, 3, 2, 2, seed=12), torch.tensor([1.0, 0.0, 0.5]))]
    r = random.Random(draw("merge_heads"))
    b, h, s, d = r.randint(2, 3), r.randint(3, 6), r.randint(3, 6), r.randint(2, 4)
    x = seeded(b, h, s, d, seed=r.randrange(2**31))  # (B, h, S, d)
    q.check("more heads and tokens, no mask", [merge_heads(x, None)])
    q.check("more heads and tokens, with a head mask",
            [merge_heads(x, seeded(h, seed=r.randrange(2**31)).abs())])

    q = a.question("ch07_block_forward", ("residual_block_forward",),
                   references=("vit_edu.block.EncoderBlock.forward",))
    q.public = [block_forward(11, seeded(2, 5, 16, seed=13), 4, 32, 0.5, "pre")]
    r = random.Random(draw("block_forward"))

    def random_block(scale, norm):
        heads = r.randint(2, 4)
        x = seeded(3, r.randint(4, 7), heads * 4 * r.randint(1, 2), seed=r.randrange(2**31))  # (B, S, D)
        return block_forward(r.randrange(2**31), x, heads, 8 * r.randint(3, 6), scale, norm)

    q.check("Pre-LN with a residual scale", [random_block(round(r.uniform(0.2, 0.8), 2), "pre")], points=2)
    q.check("Post-LN with a residual scale", [random_block(round(r.uniform(1.2, 2.0), 2), "post")])
    q.check("Pre-LN and Post-LN at scale 1 equal the block", [random_block(1.0, "pre"), random_block(1.0, "post")])

    q = a.question("ch07_block_params", ("encoder_block_params",),
                   references=("vit_edu.block.EncoderBlock", "vit_edu.trace.count_parameters",
                               "vit_edu.widgets.cost_calculator.vit_parameters"))
    q.public = [block_params(768, 3072, True), block_params(768, 3072, False)]
    r = random.Random(draw("block_params"))
    q.check("other widths, with and without the qkv bias",
            [distinct(lambda: block_params(8 * r.randint(2, 16), 8 * r.randint(4, 32), bias))
             for bias in (False, True, False)])

    q = a.question("ch07_stream_growth", ("stream_std", "pre_std_48", "stream_growth"))
    key = experiment_key()
    q.public = [stream_std("pre", 3, 0), Example("pre_std_48", 0.0, form_only=True, what="pre_std_48"),
                Example("stream_growth", "a", form_only=True, what="stream_growth")]
    r = random.Random(draw("stream_std"))
    q.check("stream_std follows the recipe (other depths and seeds)",
            [stream_std(norm, r.randint(4, 9), r.randrange(1000)) for norm in ("pre", "post")])
    q.check("pre_std_48: the measured Pre-LN stream after 48 blocks",
            [Example("pre_std_48", key["pre_std_48"], atol=PRE_STD_48_TOLERANCE, rtol=0, what="pre_std_48")])
    q.check("stream_growth: how the stream grows with depth",
            [Example("stream_growth", STREAM_GROWTH, what="stream_growth")])

    q = a.question("ch08_readout", ("readout",), references=("vit_edu.model.VisionTransformer",))
    tokens = seeded(2, 5, 3, seed=14)
    q.public = [readout(tokens, "cls", 2), readout(tokens, "mean", 1)]
    r = random.Random(draw("readout"))

    def random_tokens():
        return seeded(r.randint(2, 3), r.randint(7, 9), r.randint(4, 6), seed=r.randrange(2**31))  # (B, S, D)

    q.check("pool='cls' with prefix tokens", [readout(random_tokens(), "cls", n) for n in (1, r.randint(2, 3))])
    q.check("pool='mean' with and without prefix tokens",
            [readout(random_tokens(), "mean", n) for n in (0, r.randint(2, 3))])

    q = a.question("ch08_vit_params", ("vit_params",),
                   references=("vit_edu.model.VisionTransformer", "vit_edu.trace.count_parameters",
                               "vit_edu.widgets.cost_calculator.vit_parameters"))
    q.public = [vit_params(CONFIGS["vit-ti/16"])]
    r = random.Random(draw("vit_params"))

    def non_square():
        h, w = r.sample(range(2, 7), 2)
        return 8 * h, 8 * w

    heads = r.randint(2, 4)
    patch = r.choice((16, 32))
    q.check("a larger image with bigger patches", [distinct(lambda: vit_params(ViTConfig(
        image_size=patch * r.randint(8, 14), patch_size=patch, embed_dim=heads * 16 * r.randint(1, 2),
        depth=r.randint(2, 4), num_heads=heads, mlp_dim=64 * r.randint(2, 6))))])
    q.check("non-square grey images, mean pooling, no qkv bias", [distinct(lambda: vit_params(ViTConfig(
        image_size=non_square(), patch_size=8, in_channels=1, embed_dim=8 * r.randint(2, 4), depth=r.randint(2, 4),
        num_heads=2, mlp_dim=16 * r.randint(2, 4), num_classes=r.randint(3, 9), pool="mean", qkv_bias=False)))])
    q.check("Post-LN, sin-cos and no position table", [
        distinct(lambda: vit_params(ViTConfig(
            image_size=4 * r.randint(6, 10), patch_size=4, embed_dim=16 * r.randint(2, 4), depth=r.randint(2, 4),
            num_heads=4, mlp_dim=32 * r.randint(2, 4), num_classes=r.randint(3, 9), norm="post",
            pos_embed="sincos"))),
        distinct(lambda: vit_params(ViTConfig(
            image_size=non_square(), patch_size=8, embed_dim=8 * r.randint(2, 3), depth=2, num_heads=2,
            mlp_dim=8 * r.randint(2, 4), num_classes=r.randint(3, 9), pool="mean", pos_embed="none")))])

    q = a.question("ch08_pool_experiment", ("pool_acc", "pool_conclusion"))
    q.public = [Example("pool_acc", {"cls": [0.0, 0.0, 0.0], "mean": [0.0, 0.0, 0.0]}, form_only=True,
                        what="pool_acc"),
                Example("pool_conclusion", "a", form_only=True, what="pool_conclusion")]
    acc = key["pool_acc"]
    q.check("pool_acc: the six runs of the recipe", [Example(
        "pool_acc", acc, atol=POOL_ACC_TOLERANCE, rtol=0, what="pool_acc", mistakes=[
            Mistake("pool_acc holds fractions: report accuracies in percent (0–100)",
                    {pool: [v / 100 for v in runs] for pool, runs in acc.items()})])], points=2)
    q.check("pool_conclusion: what the runs can and cannot show",
            [Example("pool_conclusion", POOL_CONCLUSION, what="pool_conclusion")])
    return a
