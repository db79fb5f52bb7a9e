"""Homework checks: compare a student's answer with the ``vit_edu`` reference, fail with a hint to act on.

Each ``check_*`` function takes the student's object (``None`` when the name is not defined) and a ``part``
(``"public"`` for the check students run, other names for the hidden tests), and raises ``AssertionError``
with a message that says what was expected, what came out and, for the classic mistakes, which one it is.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu.attention import attention_weights
from vit_edu.block import EncoderBlock
from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.embedding import add_position_embedding, prepend_cls
from vit_edu.model import VisionTransformer
from vit_edu.patches import patchify, patchify_without_permute, toy_image
from vit_edu.trace import count_parameters

# The 2×4 projection of homework 1's toy exercise: row 0 sums a token, row 1 is first minus last.
TOY_PROJECTION = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, -1.0]])


# ---------------------------------------------------------------- helpers


def require(obj: Any, name: str) -> Any:
    """Fail if the answer ``name`` is missing (``None``) or still the ``...`` placeholder."""
    if obj is None:
        raise AssertionError(f"`{name}` is not defined: run the cell that defines it, and the cells above it")
    if obj is Ellipsis:
        raise AssertionError(f"`{name}` is still `...`: replace the placeholder with your answer")
    return obj


def call(fn: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's function; an exception it raises becomes a failed check that names it."""
    require(fn, name)
    if not callable(fn):
        raise AssertionError(f"`{name}` should be a function, got {type(fn).__name__}")
    try:
        out = fn(*args, **kwargs)
    except Exception as e:
        raise AssertionError(f"{name}(...) raised {type(e).__name__}: {e}") from e
    if out is None or out is Ellipsis:
        raise AssertionError(f"{name}(...) returned {out!r}: replace `...` with code that returns the result")
    return out


def as_tensor(value: Any, name: str) -> torch.Tensor:
    """A tensor from a tensor or a (nested) list of numbers, or a failed check saying what it got."""
    require(value, name)
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64)
    try:
        return torch.tensor(value, dtype=torch.float64)
    except (TypeError, ValueError) as e:
        raise AssertionError(f"`{name}` should be a tensor or a list of numbers, got {type(value).__name__}") from e


def expect_shape(t: Any, shape: tuple[int, ...], name: str, hint: str = "") -> torch.Tensor:
    """Fail unless ``t`` is a tensor of exactly ``shape``."""
    if not isinstance(t, torch.Tensor):
        raise AssertionError(f"{name} should be a torch.Tensor of shape {shape}, got {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise AssertionError(f"{name} should have shape {tuple(shape)}, got {tuple(t.shape)}{hint}")
    return t


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5) -> bool:
    """True when two tensors of the same shape agree to ``atol`` (relative 1e-4)."""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=atol, rtol=1e-4)


def fmt(t: torch.Tensor, digits: int = 4) -> str:
    """A short, readable list of a tensor's first values."""
    flat = t.detach().flatten()[:8].double().tolist()
    text = ", ".join(f"{v:.{digits}g}" for v in flat)
    return f"[{text}{', …' if t.numel() > 8 else ''}]"


def _seeded(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- homework 1: chapters 0–4


def check_vit_b16_shapes(answer: Any, part: str = "public") -> None:
    """Chapter 0: ``{"N": ..., "S": ..., "D": ...}`` for ViT-B/16 on a 224×224 photo."""
    require(answer, "vit_b16_shapes")
    if not isinstance(answer, dict) or set(answer) != {"N", "S", "D"}:
        raise AssertionError(f"vit_b16_shapes should be a dict with keys 'N', 'S', 'D', got {answer!r}")
    if part == "public":
        return
    cfg = CONFIGS["vit-b/16"]
    want = {"N": cfg.num_patches, "S": cfg.seq_len, "D": cfg.embed_dim}
    for key, hint in (("N", "224/16 = 14 patches per side"), ("S", "the CLS token comes first: S = N + 1"),
                      ("D", "ViT-B's embedding width")):
        if answer[key] != want[key]:
            raise AssertionError(f"{key} should be {want[key]}, got {answer[key]!r} ({hint})")


def check_token_count(fn: Any, part: str = "public") -> None:
    """Chapter 1: ``token_count(height, width, patch_size, channels)`` -> ``(N, C·P·P)``."""
    cases = [(224, 224, 16, 3)] if part == "public" else [(32, 48, 8, 1), (384, 384, 32, 3), (12, 20, 4, 2)]
    for h, w, p, c in cases:
        got = call(fn, "token_count", h, w, p, c)
        want = ((h // p) * (w // p), c * p * p)
        if tuple(got) != want:
            hint = ""
            if tuple(got)[:1] == (h * w // p,):
                hint = ": N counts patches, (H/P)·(W/P), not pixels/P"
            elif len(tuple(got)) == 2 and tuple(got)[1] == p * p:
                hint = ": a token holds every channel, C·P·P numbers"
            raise AssertionError(f"token_count({h}, {w}, {p}, {c}) should be {want}, got {tuple(got)}{hint}")


def check_patchify(fn: Any, part: str = "public") -> None:
    """Chapter 1: ``my_patchify(images, patch_size)`` equals :func:`vit_edu.patchify` (token order, contents)."""
    if part == "public":
        images, p = toy_image(), 2
    else:
        images, p = _seeded(2, 3, 8, 12, seed=1), 4
    b, c, h, w = images.shape
    n, length = (h // p) * (w // p), c * p * p
    got = call(fn, "my_patchify", images.clone(), p)
    expect_shape(got, (b, n, length), f"my_patchify(images of shape {tuple(images.shape)}, {p})",
                 " (B, N, C·P·P)")
    if part == "shape":
        return
    want = patchify(images, p)
    if close(got, want):
        return
    for i in range(n):
        if not close(got[0, i], want[0, i]):
            hint = ""
            if close(got, patchify_without_permute(images, p)):
                hint = ": did you permute before the final reshape? (reshape alone keeps memory order)"
            elif c > 1 and close(got, images.permute(0, 2, 3, 1).reshape(b, h // p, p, w // p, p, c)
                                 .permute(0, 1, 3, 2, 4, 5).reshape(b, n, length)):
                hint = ": the channel must come first inside a token, (c, p_h, p_w), like Conv2d's weight"
            raise AssertionError(f"token {i} should be {fmt(want[0, i])}, got {fmt(got[0, i])}{hint}")


def check_toy_tokens(answer: Any, part: str = "public") -> None:
    """Chapter 2: the four tokens of the 4×4 toy with P = 2, typed by hand."""
    got = as_tensor(answer, "toy_tokens")
    expect_shape(got, (4, 4), "toy_tokens", " (4 tokens of 2·2 numbers)")
    if part == "public":
        return
    want = patchify(toy_image(), 2)[0].double()
    for i in range(4):
        if not close(got[i], want[i]):
            row = toy_image()[0, 0].reshape(4, 4)[i]
            hint = ": that is the image's row, not a 2×2 patch" if close(got[i], row) else ""
            raise AssertionError(f"token {i} should be {fmt(want[i])}, got {fmt(got[i])}{hint}")


def check_toy_projection(answer: Any, part: str = "public") -> None:
    """Chapter 2: the toy tokens times ``TOY_PROJECTION``ᵀ, by hand: ``(4, 2)``."""
    got = as_tensor(answer, "toy_projected")
    expect_shape(got, (4, 2), "toy_projected", " (4 tokens, D = 2 features each)")
    want = patchify(toy_image(), 2)[0].double() @ TOY_PROJECTION.double().T
    rows = [0] if part == "public" else range(4)
    for i in rows:
        if not close(got[i], want[i]):
            raise AssertionError(f"token {i} projected should be {fmt(want[i])}, got {fmt(got[i])}: "
                                 f"feature j is the dot product of token {i} with row j of W")


def check_patch_params(fn: Any, part: str = "public") -> None:
    """Chapter 3: ``patch_embedding_params(channels, patch_size, dim)`` = D·C·P·P + D."""
    cases = [(3, 16, 768)] if part == "public" else [(1, 4, 10), (3, 14, 1280), (2, 8, 64)]
    for c, p, d in cases:
        got = call(fn, "patch_embedding_params", c, p, d)
        want = d * c * p * p + d
        if got != want:
            hint = ": don't forget the D biases" if got == d * c * p * p else ""
            raise AssertionError(f"patch_embedding_params({c}, {p}, {d}) should be {want}, got {got!r}{hint}")


def check_linear_to_conv(fn: Any, part: str = "public") -> None:
    """Chapter 3: ``linear_to_conv(linear, channels, patch_size)`` gives a Conv2d equal to Linear on patches."""
    c, p, d, size = (1, 2, 3, 4) if part == "public" else (3, 4, 5, 8)
    torch.manual_seed(0)
    linear = nn.Linear(c * p * p, d)
    conv = call(fn, "linear_to_conv", linear, c, p)
    if not isinstance(conv, nn.Conv2d):
        raise AssertionError(f"linear_to_conv should return an nn.Conv2d, got {type(conv).__name__}")
    if conv.kernel_size != (p, p) or conv.stride != (p, p):
        raise AssertionError(f"the Conv2d should have kernel_size=stride={p}, got kernel_size={conv.kernel_size}, "
                             f"stride={conv.stride}: each output must see one whole patch, patches must not overlap")
    expect_shape(conv.weight, (d, c, p, p), "conv.weight", " (D, C, P, P)")
    if conv.bias is None or not close(conv.bias, linear.bias):
        raise AssertionError("conv.bias should be a copy of linear.bias")
    images = _seeded(2, c, size, size, seed=2)
    with torch.no_grad():
        want = linear(patchify(images, p))  # (B, N, D)
        got = conv(images).flatten(2).transpose(1, 2)
    if not close(got, want):
        hint = ""
        if close(conv.weight.flatten(1), linear.weight.reshape(d, p, p, c).permute(0, 3, 1, 2).flatten(1)):
            hint = ": the weight's columns are in (c, p_h, p_w) order: reshape to (D, C, P, P), no permute"
        raise AssertionError(f"conv(images) should equal linear(patchify(images)) token by token; token 0 should "
                             f"be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def check_seq_len(fn: Any, part: str = "public") -> None:
    """Chapter 4: ``pos_embed_shape(height, width, patch_size, dim, cls)`` = ``(1, S, D)``; parts public/cls/nocls."""
    cases = {
        "public": [(224, 224, 16, 768, True)],
        "cls": [(32, 48, 8, 64, True), (384, 384, 16, 1024, True)],
        "nocls": [(32, 48, 8, 64, False), (64, 64, 16, 32, False)],
    }[part]
    for h, w, p, d, cls in cases:
        got = tuple(call(fn, "pos_embed_shape", h, w, p, d, cls))
        cfg = ViTConfig(image_size=(h, w), patch_size=p, embed_dim=d, num_heads=1, pool="cls" if cls else "mean")
        want = (1, cfg.seq_len, d)
        if got != want:
            hint = ""
            if cls and got == (1, cfg.num_patches, d):
                hint = ": off by one, the CLS token needs a position too: S = N + 1"
            elif not cls and got == (1, cfg.num_patches + 1, d):
                hint = ": without a CLS token there are only the N patch tokens"
            raise AssertionError(f"pos_embed_shape({h}, {w}, {p}, {d}, cls={cls}) should be {want}, got {got}{hint}")


def check_embed_tokens(fn: Any, part: str = "public") -> None:
    """Chapter 4: ``embed_tokens(tokens, cls_token, pos_embed)`` = prepend CLS, then add positions."""
    b, n, d = (1, 3, 2) if part == "public" else (3, 6, 8)
    tokens, cls, pos = _seeded(b, n, d, seed=3), _seeded(1, 1, d, seed=4), _seeded(1, n + 1, d, seed=5)
    got = call(fn, "embed_tokens", tokens.clone(), cls.clone(), pos.clone())
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (b, n + 1, 2 * d):
        raise AssertionError(f"embed_tokens should return shape {(b, n + 1, d)}, got {tuple(got.shape)}: "
                             f"position embeddings are added, not concatenated")
    expect_shape(got, (b, n + 1, d), "embed_tokens(tokens (B, N, D), ...)", " (B, N+1, D)")
    want = add_position_embedding(prepend_cls(tokens, cls), pos)
    if close(got, want):
        return
    appended = torch.cat([tokens, cls.expand(b, -1, -1)], dim=1) + pos
    hint = ": the CLS token goes in front (index 0), not at the end" if close(got, appended) else ""
    if not hint and close(got, prepend_cls(tokens, cls)):
        hint = ": add pos_embed after prepending the CLS token"
    raise AssertionError(f"token 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


# ---------------------------------------------------------------- homework 2: chapters 5–8


def check_qkv_shapes(fn: Any, part: str = "public") -> None:
    """Chapter 5: ``qkv_shapes(batch, seq, dim, heads)`` -> shapes of the qkv output, one head's Q, the weights."""
    cases = [(2, 197, 768, 12)] if part == "public" else [(1, 65, 192, 3), (4, 50, 64, 8)]
    for b, s, d, h in cases:
        got = tuple(tuple(x) for x in call(fn, "qkv_shapes", b, s, d, h))
        want = ((b, s, 3 * d), (b, h, s, d // h), (b, h, s, s))
        for i, what in enumerate(("qkv(x)", "q (per head)", "attention weights")):
            if got[i] != want[i]:
                raise AssertionError(f"qkv_shapes({b}, {s}, {d}, {h}): {what} should be {want[i]}, got {got[i]}")


def check_attention(fn: Any, part: str = "public") -> None:
    """Chapter 5: ``my_attention(q, k, v)`` -> ``(softmax(QKᵀ/√d) V, weights)``."""
    shape = (1, 1, 3, 4) if part == "public" else (2, 3, 5, 16)
    q, k, v = (_seeded(*shape, seed=s) * 2 for s in (6, 7, 8))
    out = call(fn, "my_attention", q.clone(), k.clone(), v.clone())
    if not isinstance(out, tuple) or len(out) != 2:
        raise AssertionError("my_attention should return a pair (output, weights)")
    got_out, got_w = out
    b, h, s, d = shape
    expect_shape(got_w, (b, h, s, s), "weights", " (..., S, S): one row per query, one column per key")
    expect_shape(got_out, shape, "output", " (..., S, d)")
    if part == "shape":
        sums = got_w.sum(-1)
        if not close(sums, torch.ones_like(sums)):
            raise AssertionError(f"every row of the weights should sum to 1, got row sums {fmt(sums)}: "
                                 f"softmax over the keys, dim=-1")
        return
    want_w = attention_weights(q, k)
    if not close(got_w, want_w):
        hint = ""
        if close(got_w, (q @ k.transpose(-2, -1)).softmax(-1)):
            hint = ": did you divide the scores by √d (d = q.shape[-1]) before the softmax?"
        elif close(got_w, (q @ k.transpose(-2, -1) / d).softmax(-1)):
            hint = ": divide by √d, not by d"
        elif close(got_w, (q @ k.transpose(-2, -1) / d**0.5).softmax(-2)):
            hint = ": the softmax runs over the keys, dim=-1, so each row sums to 1"
        raise AssertionError(f"weights row 0 should be {fmt(want_w[0, 0, 0])}, got {fmt(got_w[0, 0, 0])}{hint}")
    if not close(got_out, want_w @ v):
        raise AssertionError(f"output should be weights @ v; row 0 should be {fmt((want_w @ v)[0, 0, 0])}, "
                             f"got {fmt(got_out[0, 0, 0])}")


def check_split_heads(fn: Any, part: str = "public") -> None:
    """Chapter 6: ``split_heads(x (B, S, D), h)`` -> ``(B, h, S, D/h)``, head i = features i·d … (i+1)·d."""
    b, s, d, h = (1, 2, 4, 2) if part == "public" else (2, 5, 12, 3)
    x = _seeded(b, s, d, seed=9)
    got = call(fn, "split_heads", x.clone(), h)
    expect_shape(got, (b, h, s, d // h), f"split_heads(x of shape {(b, s, d)}, {h})", " (B, h, S, D/h)")
    want = x.reshape(b, s, h, d // h).transpose(1, 2)
    if not close(got, want):
        hint = ""
        if close(got, x.reshape(b, h, s, d // h)):
            hint = ": reshape to (B, S, h, d) first, then transpose(1, 2): a plain reshape mixes tokens"
        raise AssertionError(f"head 0, token 0 should be {fmt(want[0, 0, 0])}, got {fmt(got[0, 0, 0])}{hint}")


def check_merge_heads(fn: Any, part: str = "public") -> None:
    """Chapter 6: ``merge_heads(x (B, h, S, d))`` -> ``(B, S, h·d)``, the inverse of splitting."""
    b, h, s, d = (1, 2, 3, 2) if part == "public" else (2, 4, 5, 3)
    x = _seeded(b, h, s, d, seed=10)
    got = call(fn, "merge_heads", x.clone())
    expect_shape(got, (b, s, h * d), f"merge_heads(x of shape {(b, h, s, d)})", " (B, S, h·d)")
    if part == "shape":
        return
    want = x.transpose(1, 2).reshape(b, s, h * d)
    if not close(got, want):
        hint = ""
        if close(got, x.reshape(b, s, h * d)):
            hint = ": did you transpose(1, 2) before the reshape? Without it, token 0 gets head 0's first tokens"
        raise AssertionError(f"token 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def _small_block(seed: int, dim: int = 16, heads: int = 4) -> EncoderBlock:
    cfg = ViTConfig(image_size=8, patch_size=4, embed_dim=dim, depth=1, num_heads=heads, mlp_dim=2 * dim)
    torch.manual_seed(seed)
    block = EncoderBlock(cfg).eval()
    with torch.no_grad():  # move LayerNorm off identity, so a missing or misplaced norm shows
        for ln in (block.norm1, block.norm2):
            ln.weight.add_(torch.randn_like(ln.weight) * 0.5)
            ln.bias.add_(torch.randn_like(ln.bias) * 0.5)
    return block


def check_pre_ln_block(fn: Any, part: str = "public") -> None:
    """Chapter 7: ``pre_ln_forward(block, x)`` = ``x + attn(norm1(x))`` then ``x + mlp(norm2(x))``."""
    block = _small_block(seed=11 if part == "public" else 12)
    x = _seeded(2, 5, 16, seed=13)
    with torch.no_grad():
        got = call(fn, "pre_ln_forward", block, x.clone())
        expect_shape(got, tuple(x.shape), "pre_ln_forward(block, x)", ": a block keeps the shape (B, S, D)")
        if part == "shape":
            return
        want = block(x)[0]
        if close(got, want, atol=1e-4):
            return
        a = block.attn(x)[0]
        post = block.norm1(x + a)
        post = block.norm2(post + block.mlp(post))
        one = x + block.attn(block.norm1(x))[0]
        hint = ""
        if close(got, post, atol=1e-4):
            hint = ": that is Post-LN; Pre-LN normalises the input of each sub-layer: x + attn(norm1(x))"
        elif close(got, one + block.mlp(block.norm2(x)), atol=1e-4):
            hint = ": the MLP's residual starts from the first sum, x1 = x + attn(...); then x1 + mlp(norm2(x1))"
        elif close(got, block.mlp(block.norm2(one)), atol=1e-4):
            hint = ": add the MLP's output back to its input (the second residual)"
    raise AssertionError(f"token 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def check_block_params(fn: Any, part: str = "public") -> None:
    """Chapter 7: ``encoder_block_params(dim, mlp_dim)`` = parameters of one ``EncoderBlock``."""
    cases = [(768, 3072)] if part == "public" else [(192, 768), (64, 100), (384, 1536)]
    for d, m in cases:
        cfg = ViTConfig(image_size=16, patch_size=16, embed_dim=d, num_heads=1, mlp_dim=m)
        want = count_parameters(EncoderBlock(cfg))  # on the CPU: the meta device's first init costs seconds
        got = call(fn, "encoder_block_params", d, m)
        if got != want:
            hint = ""
            if got == want - 4 * d:
                hint = ": the two LayerNorms have a weight and a bias of D each"
            elif got == want - 3 * d - d - m - d:
                hint = ": count the biases too (qkv 3D, proj D, fc1 mlp_dim, fc2 D)"
            raise AssertionError(f"encoder_block_params({d}, {m}) should be {want}, got {got!r}{hint}")


def check_readout(fn: Any, part: str = "public") -> None:
    """Chapter 8: ``readout(tokens (B, S, D), pool)``: token 0 for ``"cls"``, the mean of the tokens for ``"mean"``."""
    pool = "mean" if part == "mean" else "cls"
    tokens = _seeded(2, 5, 3, seed=14 if part == "public" else 15)
    got = call(fn, "readout", tokens.clone(), pool)
    expect_shape(got, (2, 3), f"readout(tokens of shape (2, 5, 3), {pool!r})", " (B, D)")
    want = tokens[:, 0] if pool == "cls" else tokens.mean(dim=1)
    if not close(got, want):
        hint = ""
        if pool == "cls" and close(got, tokens.mean(dim=1)):
            hint = ": with pool='cls' the head reads the CLS token, tokens[:, 0], not the mean of the tokens"
        elif pool == "mean" and close(got, tokens[:, 0]):
            hint = ": with pool='mean' average over the tokens, tokens.mean(dim=1)"
        raise AssertionError(f"readout(..., {pool!r}) should be {fmt(want)}, got {fmt(got)}{hint}")


def check_vit_params(fn: Any, part: str = "public") -> None:
    """Chapter 8: ``vit_params(config)`` = the number of parameters of ``VisionTransformer(config)``."""
    names = ["vit-ti/16"] if part == "public" else ["vit-s/16"]
    configs = [CONFIGS[n] for n in names]
    if part != "public":
        configs.append(ViTConfig(image_size=(32, 48), patch_size=8, embed_dim=32, depth=2, num_heads=4,
                                 mlp_dim=64, num_classes=7, pool="mean"))
    for cfg in configs:
        want = count_parameters(VisionTransformer(cfg))
        got = call(fn, "vit_params", cfg)
        if got != want:
            diff = want - got if isinstance(got, int) else None
            d = cfg.embed_dim
            hint = ""
            if cfg.pool == "cls" and diff == d:
                hint = ": D parameters missing: the CLS token, or its row of the position table (S = N + 1)"
            elif cfg.pool == "mean" and diff in (-d, -2 * d):
                hint = ": with pool='mean' there is no CLS token and no position row for it (S = N)"
            elif diff == 2 * d:
                hint = ": the final LayerNorm (2·D) is missing"
            raise AssertionError(f"vit_params for {cfg.image_size} / patch {cfg.patch_size} / D={cfg.embed_dim} "
                                 f"/ depth {cfg.depth} / pool={cfg.pool!r} should be {want:,}, got {got!r}{hint}")




# ---------------------------------------------------------------- homework 3: chapters 9–13


def _tiny_vit(pool: str = "cls", image_size: int = 16) -> VisionTransformer:
    cfg = ViTConfig(image_size=image_size, patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_dim=32,
                    num_classes=4, pool=pool)
    torch.manual_seed(0)
    return VisionTransformer(cfg)


def check_decay_split(fn: Any, part: str = "public") -> None:
    """Chapter 9: ``decay_split(model)`` -> ``(decay, no-decay names)``, as in ``vit_edu.train.parameter_groups``."""
    from vit_edu.train import parameter_groups

    model = _tiny_vit("cls" if part == "public" else "mean")
    names = {id(p): n for n, p in model.named_parameters()}
    want_decay, want_keep = ({names[id(p)] for p in g["params"]} for g in parameter_groups(model, 0.05))
    got = call(fn, "decay_split", model)
    if not isinstance(got, tuple) or len(got) != 2:
        raise AssertionError("decay_split should return a pair (names with decay, names without)")
    got_decay, got_keep = set(got[0]), set(got[1])
    for name in sorted(want_decay | want_keep):
        if name in want_decay and name not in got_decay:
            raise AssertionError(f"{name!r} is a weight matrix: it should get weight decay")
        if name in want_keep and name not in got_keep:
            why = ("a LayerNorm parameter" if "norm" in name else "a bias" if name.endswith("bias")
                   else "an embedding (CLS or position)")
            raise AssertionError(f"{name!r} is {why}: it should not get weight decay")
    if got_decay & got_keep or (got_decay | got_keep) != (want_decay | want_keep):
        raise AssertionError("every parameter name should appear exactly once, in one of the two lists")


def check_lr_schedule(fn: Any, part: str = "public") -> None:
    """Chapter 9: ``lr_at(step, base_lr, warmup_steps, total_steps)`` equals the learning rate of ``make_optimizer``."""
    from vit_edu.train import TrainConfig, make_optimizer

    lr, warmup, total = (1e-3, 4, 12) if part == "public" else (3e-4, 10, 50)
    optimizer, scheduler = make_optimizer(nn.Linear(2, 2), TrainConfig(steps=total, warmup_steps=warmup, lr=lr))
    for step in range(total):
        want = optimizer.param_groups[0]["lr"]
        got = call(fn, "lr_at", step, lr, warmup, total)
        if not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12):
            phase = "warm-up" if step < warmup else "cosine decay"
            raise AssertionError(f"lr_at({step}, {lr}, {warmup}, {total}) should be {want:.6g} ({phase}), got {got!r}")
        optimizer.step()
        scheduler.step()


def _random_attentions(layers: int, b: int, h: int, s: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, h, s, s, generator=g) * 2).softmax(-1) for _ in range(layers)]


def check_rollout(fn: Any, part: str = "public") -> None:
    """Chapter 10: ``my_rollout(attentions)`` equals :func:`vit_edu.explain.attention_rollout` (mean fusion)."""
    from vit_edu.explain import attention_rollout

    layers, b, h, s = (2, 1, 2, 3) if part == "public" else (3, 2, 3, 5)
    att = _random_attentions(layers, b, h, s, seed=20)
    got = call(fn, "my_rollout", [a.clone() for a in att])
    expect_shape(got, (b, s, s), "my_rollout(L × (B, h, S, S))", " (B, S, S)")
    sums = got.sum(-1)
    if not close(sums, torch.ones_like(sums)):
        raise AssertionError(f"every row of the rollout should sum to 1, got row sums {fmt(sums)}: renormalise "
                             f"each row by its own sum (keepdim=True) after adding the identity")
    if part == "shape":
        return
    want = attention_rollout(att)
    if close(got, want):
        return
    eye = torch.eye(s)
    plain = torch.eye(s).expand(b, s, s)
    reverse = torch.eye(s).expand(b, s, s)
    for a in att:
        step = a.mean(1)
        plain = step @ plain
        full = step + eye
        reverse = reverse @ (full / full.sum(-1, keepdim=True))
    hint = ""
    if close(got, plain):
        hint = ": add the identity (the residual path) before renormalising"
    elif close(got, reverse):
        hint = ": multiply in layer order, R = Â_L ⋯ Â_1 (the newest layer on the left)"
    raise AssertionError(f"row 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def check_cls_map(fn: Any, part: str = "public") -> None:
    """Chapter 10: ``cls_map(attentions, grid)`` = the last layer's CLS row over the patches, heads averaged."""
    from vit_edu.explain import cls_attention

    gh, gw = (2, 2) if part == "public" else (2, 3)
    att = _random_attentions(2, 2, 3, 1 + gh * gw, seed=21)
    got = call(fn, "cls_map", [a.clone() for a in att], (gh, gw))
    expect_shape(got, (2, gh, gw), f"cls_map(attentions, ({gh}, {gw}))", " (B, gh, gw)")
    want = cls_attention(att)[-1].mean(1).reshape(2, gh, gw)
    if not close(got, want):
        hint = ""
        if close(got, att[-1].mean(1)[:, 1:, 0].reshape(2, gh, gw)):
            hint = ": take row 0 (the CLS query), columns 1: (the patch keys), not column 0"
        elif close(got, cls_attention(att)[0].mean(1).reshape(2, gh, gw)):
            hint = ": use the last layer, attentions[-1]"
        raise AssertionError(f"image 0 should be {fmt(want[0])}, got {fmt(got[0])}{hint}")


def check_position_similarity(fn: Any, part: str = "public") -> None:
    """Chapter 11: ``my_position_similarity(pos (N, D))`` = cosine similarity ``(N, N)``."""
    from vit_edu.explain import position_similarity

    pos = _seeded(4, 3, seed=22) * 3 if part == "public" else _seeded(9, 8, seed=23) * 5
    got = call(fn, "my_position_similarity", pos.clone())
    n = pos.shape[0]
    expect_shape(got, (n, n), "my_position_similarity(pos of shape (N, D))", " (N, N)")
    want = position_similarity(pos)
    if not close(got, want):
        hint = ": normalise each row to length 1 first (cosine, not the plain dot product)" if close(
            got, pos @ pos.T) else ""
        raise AssertionError(f"row 0 should be {fmt(want[0])}, got {fmt(got[0])}{hint}")


def check_patch_distances(fn: Any, part: str = "public") -> None:
    """Chapter 11: ``centre_distances(grid, patch_size)`` = pixel distances between patch centres ``(N, N)``."""
    from vit_edu.explain import patch_distances

    grid, p = ((2, 2), 8) if part == "public" else ((2, 3), 4)
    got = call(fn, "centre_distances", grid, p)
    n = grid[0] * grid[1]
    expect_shape(got, (n, n), f"centre_distances({grid}, {p})", " (N, N)")
    want = patch_distances(grid, p)
    if not close(got, want, atol=1e-4):
        hint = ": multiply by the patch size: distances are in pixels" if close(got, want / p, atol=1e-4) else ""
        raise AssertionError(f"row 0 should be {fmt(want[0])}, got {fmt(got[0])}{hint}")


def check_new_table_shape(fn: Any, part: str = "public") -> None:
    """Chapter 12: ``new_table_shape(image_size, patch_size, dim)`` = ``(grid, (1, 1 + gh·gw, D))``."""
    cases = [(48, 8, 128)] if part == "public" else [(64, 8, 32), (384, 16, 768)]
    for size, p, d in cases:
        got = call(fn, "new_table_shape", size, p, d)
        want = ((size // p, size // p), (1, 1 + (size // p) ** 2, d))
        try:
            got = (tuple(got[0]), tuple(got[1]))
        except (TypeError, IndexError) as e:
            raise AssertionError(f"new_table_shape should return ((gh, gw), (1, S, D)), got {got!r}") from e
        if got != want:
            hint = ": the CLS row stays: S = 1 + gh·gw" if got[1] == (1, (size // p) ** 2, d) else ""
            raise AssertionError(f"new_table_shape({size}, {p}, {d}) should be {want}, got {got}{hint}")


def check_interpolate(fn: Any, part: str = "public") -> None:
    """Chapter 12: ``my_interpolate(pos (1, 1+N, D), old_grid, new_grid)`` = :func:`vit_edu.interpolate_pos_embed`."""
    from vit_edu.position import interpolate_pos_embed

    old, new, d = ((2, 2), (3, 3), 2) if part == "public" else ((4, 4), (6, 5), 6)
    pos = _seeded(1, 1 + old[0] * old[1], d, seed=24)
    got = call(fn, "my_interpolate", pos.clone(), old, new)
    expect_shape(got, (1, 1 + new[0] * new[1], d), f"my_interpolate(pos, {old}, {new})", " (1, 1 + gh'·gw', D)")
    if part == "shape":
        return
    want = interpolate_pos_embed(pos, new, old_grid=old)
    if not close(got[:, 0], pos[:, 0]):
        raise AssertionError("row 0 (the CLS token's position) should be copied unchanged: it has no place "
                             "on the grid")
    if not close(got, want, atol=1e-4):
        hint = ""
        scrambled = F.interpolate(pos[:, 1:].reshape(1, d, *old), size=new, mode="bicubic", align_corners=True)
        if close(got[:, 1:], scrambled.reshape(1, d, -1).transpose(1, 2), atol=1e-4):
            hint = ": transpose (1, N, D) to (1, D, N) before reshaping to (1, D, gh, gw)"
        raise AssertionError(f"patch row 1 should be {fmt(want[0, 1])}, got {fmt(got[0, 1])}{hint}")


def check_initial_loss(fn: Any, part: str = "public") -> None:
    """Chapter 13: ``initial_loss(num_classes)`` = cross-entropy of an untrained ``vit_edu`` model (zero head)."""
    cases = [4] if part == "public" else [10, 1000, 2]
    for k in cases:
        cfg = ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32, num_classes=k)
        torch.manual_seed(0)
        with torch.no_grad():
            logits = VisionTransformer(cfg)(torch.rand(3, 3, 16, 16))
        want = F.cross_entropy(logits, torch.arange(3) % k).item()
        got = call(fn, "initial_loss", k)
        if not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-5):
            hint = ": the head starts at zero, so every class gets probability 1/K"
            raise AssertionError(f"initial_loss({k}) should be {want:.5f}, got {got!r}{hint}")


DIAGNOSES = ("patch_size", "cls_width", "pos_rows", "learning_rate", "num_classes", "input_norm", "resolution")
_DIAGNOSIS_KEY = {"a": "patch_size", "b": "learning_rate", "c": "num_classes", "d": "pos_rows",
                  "e": "input_norm", "f": "resolution"}


def check_diagnosis(answer: Any, part: str = "public") -> None:
    """Chapter 13: ``diagnosis`` maps each symptom ``"a"``…``"f"`` to one cause from :data:`DIAGNOSES`."""
    require(answer, "diagnosis")
    if not isinstance(answer, dict) or set(answer) != set(_DIAGNOSIS_KEY):
        raise AssertionError(f"diagnosis should be a dict with keys {sorted(_DIAGNOSIS_KEY)}, got {answer!r}")
    for key, value in answer.items():
        if value not in DIAGNOSES:
            raise AssertionError(f"diagnosis[{key!r}] should be one of {DIAGNOSES}, got {value!r}")
    if part == "public":
        return
    wrong = sorted(k for k, v in _DIAGNOSIS_KEY.items() if answer[k] != v)
    if wrong:
        raise AssertionError(f"{len(wrong)} of 6 symptoms have the wrong cause: {', '.join(wrong)} "
                             f"(chapter 13 shows each one)")
