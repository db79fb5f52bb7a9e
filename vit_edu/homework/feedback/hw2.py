"""Homework 2 (chapters 5–8): each ``expect_*`` judges an answer on given inputs; each ``check_*`` is a public check.

``expect_*(got, *inputs)`` computes what the book's reference gives on the inputs and raises ``AssertionError``
with a hint for the classic mistakes; the public ``check_*(answer)`` runs it on the public example only. The
hidden checks (other inputs, in the instructor's build) call the same ``expect_*``; the experiments' reference
numbers come from the instructor's answer key, never from this module.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from vit_edu.attention import attention_weights
from vit_edu.block import EncoderBlock
from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.homework.feedback.common import as_tuple, call, close, expect_shape, fmt, require, seeded
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters

__all__ = [
    "attention_inputs", "small_block", "reference_stream_std",
    "expect_qkv_shapes", "check_qkv_shapes", "expect_attention", "check_attention",
    "expect_split_heads", "check_split_heads", "expect_merge_heads", "check_merge_heads",
    "expect_block_forward", "check_block_forward", "expect_block_params", "check_block_params",
    "expect_stream_std", "check_stream_std", "check_pre_std_48", "expect_choice", "check_stream_growth",
    "expect_readout", "check_readout", "expect_vit_params", "check_vit_params",
    "expect_pool_acc", "check_pool_acc", "check_pool_conclusion",
]

CHOICES = ("a", "b", "c", "d")

# ---------------------------------------------------------------- chapter 5


def expect_qkv_shapes(got: Any, b: int, s: int, d: int, h: int) -> None:
    """``qkv_shapes(b, s, d, h)`` = shapes of ``qkv(x)``, of one head's queries, of the attention weights."""
    got = as_tuple(got, f"qkv_shapes({b}, {s}, {d}, {h})")
    want = ((b, s, 3 * d), (b, h, s, d // h), (b, h, s, s))
    if len(got) != 3:
        raise AssertionError(f"qkv_shapes({b}, {s}, {d}, {h}) should return three shapes, got {len(got)}")
    hints = {0: ": one Linear(D, 3D) makes Q, K and V of every token at once",
             1: ": each head gets d = D/h features of every token",
             2: ": one S×S table per head and per image"}
    for i, what in enumerate(("qkv(x)", "q (per head)", "attention weights")):
        if tuple(got[i]) != want[i]:
            raise AssertionError(f"qkv_shapes({b}, {s}, {d}, {h}): {what} should be {want[i]}, got {got[i]}{hints[i]}")


def check_qkv_shapes(fn: Any) -> None:
    expect_qkv_shapes(call(fn, "qkv_shapes", 2, 197, 768, 12), 2, 197, 768, 12)


def attention_inputs(b: int, h: int, s_q: int, s_k: int, d: int, seed: int,
                     masked: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Seeded ``q (B, h, S_q, d)``, ``k, v (B, h, S_k, d)`` and, with ``masked``, a ``keep (B, S_k)`` mask."""
    q, k, v = (2 * seeded(b, h, s, d, seed=seed + i) for i, s in enumerate((s_q, s_k, s_k)))
    if not masked:
        return q, k, v, None
    keep = seeded(b, s_k, seed=seed + 3) > 0
    keep[:, 0] = True  # every image keeps at least one key
    return q, k, v, keep


def expect_attention(got: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     keep: torch.Tensor | None) -> None:
    """``my_attention(q, k, v, keep)`` = ``(softmax(QKᵀ/√d) V, weights)``, dropped keys at weight exactly 0."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise AssertionError("my_attention should return a pair (output, weights)")
    got_out, got_w = got
    b, h, s_q, d = q.shape
    s_k = k.shape[-2]
    expect_shape(got_w, (b, h, s_q, s_k), f"weights (q of shape {tuple(q.shape)}, k of shape {tuple(k.shape)})",
                 " (B, h, S_q, S_k): one row per query, one column per key")
    expect_shape(got_out, (b, h, s_q, d), "output", " (B, h, S_q, d): one output per query")
    raw = q @ k.transpose(-2, -1)  # (B, h, S_q, S_k)

    def masked(scores: torch.Tensor) -> torch.Tensor:
        return scores if keep is None else scores.masked_fill(~keep[:, None, None, :], float("-inf"))

    want_w = attention_weights(q, k) if keep is None else masked(raw / d**0.5).softmax(-1)
    if not close(got_w, want_w):
        hint = ""
        sums = got_w.double().sum(-1)
        if keep is not None and close(got_w, (raw / d**0.5).softmax(-1)):
            hint = ": the mask is not applied: a key with keep=False must get weight 0"
        elif keep is not None and close(got_w, (raw / d**0.5).softmax(-1) * keep[:, None, None, :]):
            hint = (": zeroing the weights after the softmax leaves rows that no longer sum to 1; "
                    "mask the scores before the softmax (a score of -inf gets weight 0)")
        elif keep is not None and s_q == s_k and close(
                got_w, (raw / d**0.5).masked_fill(~keep[:, None, :, None], float("-inf")).softmax(-1)):
            hint = ": keep masks the keys, the last axis of the scores, not the queries"
        elif close(got_w, masked(raw).softmax(-1)):
            hint = ": did you divide the scores by √d (d = q.shape[-1]) before the softmax?"
        elif close(got_w, masked(raw / d).softmax(-1)):
            hint = ": divide by √d, not by d"
        elif keep is None and s_q == s_k and close(got_w, (raw / d**0.5).softmax(-2)):
            hint = ": the softmax runs over the keys, dim=-1, so each row sums to 1"
        elif not close(sums, torch.ones_like(sums)):
            hint = ": every row of the weights should sum to 1 (a softmax over the keys, dim=-1)"
        raise AssertionError(f"weights[0, 0, 0] should be {fmt(want_w[0, 0, 0])}, got {fmt(got_w[0, 0, 0])}{hint}")
    if not close(got_out, want_w @ v):
        raise AssertionError(f"output should be weights @ v; output[0, 0, 0] should be {fmt((want_w @ v)[0, 0, 0])}, "
                             f"got {fmt(got_out[0, 0, 0])}")


def check_attention(fn: Any) -> None:
    """Public: one head, three queries and four keys, first without a mask, then with one."""
    for masked in (False, True):
        q, k, v, keep = attention_inputs(1, 1, 3, 4, 4, seed=6, masked=masked)
        args = (q.clone(), k.clone(), v.clone(), None if keep is None else keep.clone())
        expect_attention(call(fn, "my_attention", *args), q, k, v, keep)


# ---------------------------------------------------------------- chapter 6


def expect_split_heads(got: Any, x: torch.Tensor, h: int) -> None:
    """``split_heads(x (B, S, D), h)`` -> ``(B, h, S, D/h)``, head i = features i·d … (i+1)·d - 1."""
    b, s, d = x.shape
    expect_shape(got, (b, h, s, d // h), f"split_heads(x of shape {(b, s, d)}, {h})", " (B, h, S, D/h)")
    want = x.reshape(b, s, h, d // h).transpose(1, 2)
    if not close(got, want):
        head, token = next((i, t) for i in range(h) for t in range(s) if not close(got[0, i, t], want[0, i, t]))
        hint = ""
        if close(got, x.reshape(b, h, s, d // h)):
            hint = ": reshape to (B, S, h, d) first, then transpose(1, 2): a plain reshape mixes tokens"
        elif close(got, x.reshape(b, s, d // h, h).permute(0, 3, 1, 2)):
            hint = ": head i holds a block of d neighbouring features, not every h-th feature"
        raise AssertionError(f"head {head}, token {token} should be {fmt(want[0, head, token])}, "
                             f"got {fmt(got[0, head, token])}{hint}")


def check_split_heads(fn: Any) -> None:
    x = seeded(1, 2, 4, seed=9)
    expect_split_heads(call(fn, "split_heads", x.clone(), 2), x, 2)


def expect_merge_heads(got: Any, x: torch.Tensor, head_mask: torch.Tensor | None) -> None:
    """``merge_heads(x (B, h, S, d), head_mask)`` -> ``(B, S, h·d)``, head i's output times ``head_mask[i]``."""
    b, h, s, d = x.shape
    expect_shape(got, (b, s, h * d), f"merge_heads(x of shape {(b, h, s, d)}, ...)", " (B, S, h·d)")
    scaled = x if head_mask is None else x * head_mask[None, :, None, None]
    want = scaled.transpose(1, 2).reshape(b, s, h * d)
    if not close(got, want):
        token = next(t for t in range(s) if not close(got[0, t], want[0, t]))
        hint = ""
        if close(got, scaled.reshape(b, s, h * d)):
            hint = ": did you transpose(1, 2) before the reshape? Without it, token 0 gets head 0's first tokens"
        elif close(got, scaled.permute(0, 2, 3, 1).reshape(b, s, h * d)):
            hint = ": each token's h outputs go side by side, head 0's d features first, not interleaved"
        elif head_mask is not None and close(got, x.transpose(1, 2).reshape(b, s, h * d)):
            hint = ": the head mask is not applied"
        elif head_mask is not None and close(got, x.transpose(1, 2).reshape(b, s, h * d) * head_mask.repeat(d)):
            hint = (": head i owns d neighbouring features of the merged token, so its factor repeats d times in a "
                    "row (repeat_interleave), not h-periodically (repeat)")
        raise AssertionError(f"token {token} should be {fmt(want[0, token])}, got {fmt(got[0, token])}{hint}")


def check_merge_heads(fn: Any) -> None:
    """Public: two heads without a mask, then three heads with a mask."""
    for x, head_mask in ((seeded(1, 2, 3, 2, seed=10), None),
                         (seeded(1, 3, 2, 2, seed=12), torch.tensor([1.0, 0.0, 0.5]))):
        args = (x.clone(), None if head_mask is None else head_mask.clone())
        expect_merge_heads(call(fn, "merge_heads", *args), x, head_mask)


# ---------------------------------------------------------------- chapter 7


def small_block(seed: int, dim: int = 16, heads: int = 4, mlp: int = 32) -> EncoderBlock:
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
    return block


def _rewired(block: EncoderBlock, norm: str, attn_scale: float, mlp_scale: float) -> EncoderBlock:
    """The package's own block with ``block``'s weights, ``norm`` wiring, and each branch's last layer scaled.

    Scaling a branch's last linear layer (weight and bias) scales that branch's output: the reference for a
    residual scale without writing the block's formula again.
    """
    dim, heads, mlp = block.norm1.normalized_shape[0], block.attn.num_heads, block.mlp.fc1.out_features
    cfg = ViTConfig(image_size=8, patch_size=4, embed_dim=dim, depth=1, num_heads=heads, mlp_dim=mlp, norm=norm,
                    qkv_bias=block.attn.qkv.bias is not None, ln_eps=block.norm1.eps)
    ref = EncoderBlock(cfg).eval()
    ref.load_state_dict(block.state_dict())
    with torch.no_grad():
        for lin, s in ((ref.attn.proj, attn_scale), (ref.mlp.fc2, mlp_scale)):
            lin.weight.mul_(s)
            lin.bias.mul_(s)
    return ref


def expect_block_forward(got: Any, block: EncoderBlock, x: torch.Tensor, scale: float, norm: str) -> None:
    """``residual_block_forward(block, x, scale, norm)``: each residual branch's update scaled by ``scale``."""
    expect_shape(got, tuple(x.shape), f"residual_block_forward(block, x, {scale}, {norm!r})",
                 ": a block keeps the shape (B, S, D)")
    with torch.no_grad():
        want = _rewired(block, norm, scale, scale)(x)[0]
        if close(got, want, atol=1e-4):
            return
        other = "post" if norm == "pre" else "pre"
        n1, n2, attn, mlp = block.norm1, block.norm2, (lambda h: block.attn(h)[0]), block.mlp
        hint = ""
        if close(got, _rewired(block, other, scale, scale)(x)[0], atol=1e-4):
            hint = (f": that is the {other}-LN wiring; with norm={norm!r} "
                    + ("each branch reads a normalised copy and the sum is not normalised" if norm == "pre"
                       else "each LayerNorm normalises the sum of the input and the scaled branch"))
        elif scale != 1 and close(got, _rewired(block, norm, 1, 1)(x)[0], atol=1e-4):
            hint = ": the scale is missing: multiply each branch's update by scale before adding it"
        elif close(got, _rewired(block, norm, scale, 1)(x)[0], atol=1e-4):
            hint = ": the MLP branch's update is not scaled"
        elif close(got, _rewired(block, norm, 1, scale)(x)[0], atol=1e-4):
            hint = ": the attention branch's update is not scaled"
        elif norm == "pre":
            x1 = x + scale * attn(n1(x))
            if close(got, x1 + scale * mlp(n2(x)), atol=1e-4):
                hint = ": the MLP branch reads the first sum (x + scale·attention update), not the block input"
            elif close(got, _scaled_sums(block, x, scale), atol=1e-4):
                hint = ": scale the branch's update, not the sum: the residual path carries its input unchanged"
            elif close(got, scale * mlp(n2(x1)), atol=1e-4) or close(got, mlp(n2(x1)), atol=1e-4):
                hint = ": add the MLP's update back to its input (the second residual)"
    raise AssertionError(f"token 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def _scaled_sums(block: EncoderBlock, x: torch.Tensor, scale: float) -> torch.Tensor:
    """The classic mistake of a Pre-LN residual scale: the whole sum scaled, not the branch's update."""
    x1 = scale * (x + block.attn(block.norm1(x))[0])
    return scale * (x1 + block.mlp(block.norm2(x1)))


def check_block_forward(fn: Any) -> None:
    """Public: one Pre-LN block, residual scale 0.5."""
    block, x = small_block(seed=11), seeded(2, 5, 16, seed=13)
    with torch.no_grad():
        got = call(fn, "residual_block_forward", block, x.clone(), 0.5, "pre")
    expect_block_forward(got, block, x, 0.5, "pre")


def expect_block_params(got: Any, d: int, m: int, qkv_bias: bool) -> None:
    """``encoder_block_params(dim, mlp_dim, qkv_bias)`` = parameters of one ``EncoderBlock``."""
    cfg = ViTConfig(image_size=16, patch_size=16, embed_dim=d, num_heads=1, mlp_dim=m, qkv_bias=qkv_bias)
    want = count_parameters(EncoderBlock(cfg))
    if got != want:
        hint = ""
        if not isinstance(got, int) or isinstance(got, bool):
            hint = ": return an int"
        elif got == want - 4 * d:
            hint = ": the two LayerNorms have a weight and a bias of D each"
        elif not qkv_bias and got == want + 3 * d:
            hint = ": with qkv_bias=False the Linear(D, 3D) has no bias (the output projection keeps its own)"
        elif not qkv_bias and got == want - d:
            hint = ": qkv_bias=False removes only the qkv bias; the output projection keeps its bias"
        elif got == want - (3 * d if qkv_bias else 0) - d - m - d:
            hint = ": count the biases too (qkv 3D, proj D, fc1 mlp_dim, fc2 D)"
        raise AssertionError(f"encoder_block_params({d}, {m}, qkv_bias={qkv_bias}) should be {want}, got {got!r}{hint}")


def check_block_params(fn: Any) -> None:
    """Public: ViT-B's block, with and without the qkv bias."""
    for qkv_bias in (True, False):
        expect_block_params(call(fn, "encoder_block_params", 768, 3072, qkv_bias), 768, 3072, qkv_bias)


def reference_stream_std(norm: str, depth: int, seed: int) -> list[float]:
    """The recipe of exercise 7.3: the std of the residual stream after each of ``depth`` fresh blocks."""
    torch.manual_seed(seed)
    cfg = ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=depth, num_heads=4, mlp_dim=256, norm=norm)
    blocks = [EncoderBlock(cfg, i) for i in range(depth)]
    x = torch.randn(16, cfg.seq_len, cfg.embed_dim)
    stds = []
    with torch.no_grad():
        for blk in blocks:
            x, _ = blk(x)
            stds.append(x.std().item())
    return stds


def expect_stream_std(got: Any, norm: str, depth: int, seed: int) -> None:
    """``stream_std(norm, depth, seed)`` follows the recipe: one std per block, as the reference gives."""
    what = f"stream_std({norm!r}, {depth}, {seed})"
    if not isinstance(got, (list, tuple)):
        raise AssertionError(f"{what} should return a list of {depth} numbers (one per block), got "
                             f"{type(got).__name__}")
    if len(got) != depth:
        raise AssertionError(f"{what} should return {depth} numbers (one per block), got {len(got)}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in got):
        raise AssertionError(f"{what} should hold plain numbers (use .item()), got {got[:3]!r}")
    want = reference_stream_std(norm, depth, seed)
    if not close(torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64), atol=1e-3):
        hint = ""
        if abs(got[0] - 1) < 0.05 and norm == "pre":
            hint = ": a Pre-LN block's output is not normalised: use vit_edu.EncoderBlock(cfg) with norm='pre'"
        elif abs(got[-1] - want[-1]) < 0.1 * want[-1]:
            hint = (": close but not equal: follow the recipe's order exactly (seed, then all blocks, then the "
                    "tokens), with the recipe's sizes")
        raise AssertionError(f"{what}: after block 1 the std should be {want[0]:.4f}, got {got[0]:.4f}; after block "
                             f"{depth} {want[-1]:.4f}, got {got[-1]:.4f}{hint}")


def check_stream_std(fn: Any) -> None:
    expect_stream_std(call(fn, "stream_std", "pre", 3, 0), "pre", 3, 0)


def expect_choice(got: Any, want: str, what: str) -> None:
    """A multiple-choice answer: one of the letters, and the key's."""
    if not isinstance(got, str) or got.strip().lower() not in CHOICES:
        raise AssertionError(f"{what} should be one of the letters {', '.join(map(repr, CHOICES))}, got {got!r}")
    if got.strip().lower() != want:
        raise AssertionError(f"{what}: not the answer the runs support")


def _check_choice_form(answer: Any, name: str) -> None:
    require(answer, name)
    if not isinstance(answer, str) or answer.strip().lower() not in CHOICES:
        raise AssertionError(f"{name} should be one of the letters {', '.join(map(repr, CHOICES))}, got {answer!r}")


def _check_number(answer: Any, name: str) -> float:
    require(answer, name)
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        raise AssertionError(f"{name} should be a number, got {answer!r}")
    return float(answer)


def check_pre_std_48(answer: Any, fn: Any) -> None:
    """Public: a number with two decimals, the one your own ``stream_std`` gives (not the reference's)."""
    got = _check_number(answer, "pre_std_48")
    runs = [call(fn, "stream_std", "pre", 48, seed) for seed in range(5)]
    if not all(isinstance(r, (list, tuple)) and len(r) == 48 for r in runs):
        raise AssertionError("stream_std('pre', 48, seed) should return 48 numbers")
    mean = sum(float(r[-1]) for r in runs) / 5
    if abs(got - mean) > 0.006:
        raise AssertionError(f"pre_std_48 is {got!r}, but your stream_std gives {mean:.2f} after block 48 "
                             f"(mean over seeds 0–4): report what your run prints, to two decimals")


def check_stream_growth(answer: Any) -> None:
    """Public: the form of the growth answer (the letter is graded by the hidden check)."""
    _check_choice_form(answer, "stream_growth")


# ---------------------------------------------------------------- chapter 8


def expect_readout(got: Any, tokens: torch.Tensor, pool: str, num_prefix: int) -> None:
    """``readout(tokens, pool, num_prefix)``: token 0 for ``"cls"``, the mean of the patch tokens for ``"mean"``."""
    b, s, d = tokens.shape
    what = f"readout(tokens of shape {(b, s, d)}, {pool!r}, num_prefix={num_prefix})"
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (b, 1, d):
        raise AssertionError(f"{what} should have shape {(b, d)}, got {tuple(got.shape)}: drop the token axis "
                             f"(no keepdim, no slice 0:1)")
    expect_shape(got, (b, d), what, " (B, D)")
    want = tokens[:, 0] if pool == "cls" else tokens[:, num_prefix:].mean(dim=1)
    if close(got, want):
        return
    hint = ""
    if pool == "cls" and close(got, tokens[:, num_prefix:].mean(dim=1)):
        hint = ": with pool='cls' the head reads the CLS token, token 0, not a mean"
    elif pool == "cls" and num_prefix > 1 and close(got, tokens[:, num_prefix - 1]):
        hint = ": the CLS token comes first (index 0); the other prefix tokens follow it"
    elif pool == "mean" and num_prefix > 0 and close(got, tokens.mean(dim=1)):
        hint = ": the mean runs over the patch tokens only, after the num_prefix prefix tokens"
    elif pool == "mean" and close(got, tokens[:, 0]):
        hint = ": with pool='mean' average the patch tokens"
    raise AssertionError(f"{what} should be {fmt(want)}, got {fmt(got)}{hint}")


def check_readout(fn: Any) -> None:
    """Public: a CLS model with one extra prefix token, and mean pooling behind one prefix token."""
    tokens = seeded(2, 5, 3, seed=14)
    for pool, num_prefix in (("cls", 2), ("mean", 1)):
        expect_readout(call(fn, "readout", tokens.clone(), pool, num_prefix), tokens, pool, num_prefix)


def expect_vit_params(got: Any, cfg: ViTConfig) -> None:
    """``vit_params(config)`` = the number of parameters of ``VisionTransformer(config)``."""
    want = count_parameters(VisionTransformer(cfg))
    if got == want:
        return
    diff = want - got if isinstance(got, int) and not isinstance(got, bool) else None
    d, s = cfg.embed_dim, cfg.seq_len
    hint = ""
    if diff is None:
        hint = ": return an int"
    elif cfg.pool == "cls" and diff == d:
        hint = ": D parameters missing: the CLS token, or its row of the position table (S = N + 1)"
    elif cfg.pool == "mean" and diff in (-d, -2 * d):
        hint = ": with pool='mean' there is no CLS token and no position row for it (S = N)"
    elif cfg.pos_embed == "learned" and diff == s * d:
        hint = ": the learned position table (S × D) is missing"
    elif cfg.pos_embed != "learned" and diff == -s * d:
        hint = (f": with pos_embed={cfg.pos_embed!r} there is no learned position table "
                "(a sin-cos table is a fixed buffer, not a parameter)")
    elif cfg.norm == "pre" and diff == 2 * d:
        hint = ": the final LayerNorm (2·D) is missing"
    elif cfg.norm == "post" and diff == -2 * d:
        hint = ": a Post-LN model has no final LayerNorm (every block already ends in one)"
    elif not cfg.qkv_bias and diff == -3 * d * cfg.depth:
        hint = ": with qkv_bias=False the qkv projections have no bias"
    elif cfg.image_size[0] != cfg.image_size[1] or cfg.in_channels != 3:
        hint = ": mind the image's height and width and its channels (config.grid_size, config.in_channels)"
    raise AssertionError(f"vit_params for image {cfg.image_size} / patch {cfg.patch_size} / C={cfg.in_channels} / "
                         f"D={d} / depth {cfg.depth} / pool={cfg.pool!r} / norm={cfg.norm!r} / "
                         f"pos_embed={cfg.pos_embed!r} / qkv_bias={cfg.qkv_bias} should be {want:,}, got {got!r}{hint}")


def check_vit_params(fn: Any) -> None:
    cfg = CONFIGS["vit-ti/16"]
    expect_vit_params(call(fn, "vit_params", cfg), cfg)


POOLS = ("cls", "mean")


def _pool_acc_form(answer: Any) -> dict[str, list[float]]:
    require(answer, "pool_acc")
    if not isinstance(answer, dict) or set(answer) != set(POOLS):
        raise AssertionError(f"pool_acc should be a dict with keys 'cls' and 'mean', got {answer!r}")
    for pool in POOLS:
        runs = answer[pool]
        if not isinstance(runs, (list, tuple)) or len(runs) != 3 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100 for v in runs):
            raise AssertionError(f"pool_acc[{pool!r}] should be three test accuracies in percent (seeds 0, 1, 2), "
                                 f"got {runs!r}")
    return {pool: [float(v) for v in answer[pool]] for pool in POOLS}


def expect_pool_acc(answer: Any, key: dict[str, list[float]], tolerance: float) -> None:
    """Each of the six accuracies within ``tolerance`` points of the key's run of the same recipe."""
    got = _pool_acc_form(answer)
    if all(v <= 1 for pool in POOLS for v in got[pool]):
        raise AssertionError("pool_acc holds fractions: report accuracies in percent (0–100)")
    for pool in POOLS:
        for seed, (g, w) in enumerate(zip(got[pool], key[pool], strict=True)):
            if abs(g - w) > tolerance:
                raise AssertionError(f"pool_acc[{pool!r}] for seed {seed} is {g:.1f}: not within {tolerance:g} points "
                                     f"of the reference run of the same recipe")


def check_pool_acc(answer: Any) -> None:
    """Public: the form (two poolings × three seeds, in percent) and that the runs learned something."""
    got = _pool_acc_form(answer)
    if all(v <= 1 for pool in POOLS for v in got[pool]):
        raise AssertionError("pool_acc holds fractions: report accuracies in percent (0–100)")
    if len({v for pool in POOLS for v in got[pool]}) == 1:
        raise AssertionError("all six accuracies are equal: did every run use its own pool and seed?")


def check_pool_conclusion(answer: Any) -> None:
    """Public: the form of the conclusion (the letter is graded by the hidden check)."""
    _check_choice_form(answer, "pool_conclusion")
