"""Homework 1 (chapters 0–4): each ``expect_*`` judges an answer on given inputs, each ``check_*`` is the public check.

``expect_*(got, *inputs)`` computes what the book's reference gives on the inputs and raises ``AssertionError``
with a hint for the classic mistakes; the public ``check_*(answer)`` runs it on the public example only. The
hidden checks (other inputs, in the instructor's build) call the same ``expect_*``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.embedding import add_position_embedding, prepend_cls
from vit_edu.homework.feedback.common import as_tensor, as_tuple, call, close, expect_shape, fmt, require, seeded
from vit_edu.patches import patchify, patchify_without_permute, toy_image

# The 2×4 projection of exercise 2.2: row 0 sums a token, row 1 is first minus last.
TOY_PROJECTION = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, -1.0]])
# Exercise 1.2's public example: 0…23 row by row on a 4×6 grid, not the toy of exercise 2.1.
PUBLIC_IMAGE = torch.arange(24.0).reshape(1, 1, 4, 6)


def expect_vit_b16_shapes(answer: Any) -> None:
    """``{"N", "S", "D"}`` of ViT-B/16 on a 224×224 photo."""
    cfg = CONFIGS["vit-b/16"]
    want = {"N": cfg.num_patches, "S": cfg.seq_len, "D": cfg.embed_dim}
    if not isinstance(answer, dict) or set(answer) != set(want):
        raise AssertionError(f"vit_b16_shapes should be a dict with keys 'N', 'S', 'D', got {answer!r}")
    for key, hint in (("N", "224/16 = 14 patches per side"), ("S", "the CLS token comes first: S = N + 1"),
                      ("D", "ViT-B's embedding width")):
        if answer[key] != want[key]:
            raise AssertionError(f"{key} should be {want[key]}, got {answer[key]!r} ({hint})")


def check_vit_b16_shapes(answer: Any) -> None:
    """Public: the form, and S = N + 1 (not the values)."""
    require(answer, "vit_b16_shapes")
    if not isinstance(answer, dict) or set(answer) != {"N", "S", "D"}:
        raise AssertionError(f"vit_b16_shapes should be a dict with keys 'N', 'S', 'D', got {answer!r}")
    if not all(isinstance(v, int) and v > 0 for v in answer.values()):
        raise AssertionError(f"N, S and D should be positive ints, got {answer!r}")
    if answer["S"] != answer["N"] + 1:
        raise AssertionError(f"S = {answer['S']} and N = {answer['N']}: the CLS token comes first, S = N + 1")


def expect_token_count(got: Any, h: int, w: int, p: int, c: int) -> None:
    """``token_count(h, w, p, c)`` = ``(N, C·P·P)``."""
    want = ((h // p) * (w // p), c * p * p)
    got = as_tuple(got, f"token_count({h}, {w}, {p}, {c})")
    if got != want:
        hint = ""
        if got[:1] == (h * w // p,):
            hint = ": N counts patches, (H/P)·(W/P), not pixels/P"
        elif len(got) == 2 and got[1] == p * p and c > 1:
            hint = ": a token holds every channel, C·P·P numbers"
        raise AssertionError(f"token_count({h}, {w}, {p}, {c}) should be {want}, got {got}{hint}")


def check_token_count(fn: Any) -> None:
    expect_token_count(call(fn, "token_count", 224, 224, 16, 3), 224, 224, 16, 3)


def expect_patchify(got: Any, images: torch.Tensor, p: int, *, values: bool = True) -> None:
    """``my_patchify(images, p)`` equals :func:`vit_edu.patchify` (shape; with ``values``, order and contents)."""
    b, c, h, w = images.shape
    n, length = (h // p) * (w // p), c * p * p
    expect_shape(got, (b, n, length), f"my_patchify(images of shape {tuple(images.shape)}, {p})", " (B, N, C·P·P)")
    want = patchify(images, p)
    if not values or close(got, want):
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


def check_patchify(fn: Any) -> None:
    expect_patchify(call(fn, "my_patchify", PUBLIC_IMAGE.clone(), 2), PUBLIC_IMAGE, 2)


def expect_toy_tokens(answer: Any) -> None:
    """The four tokens of the 4×4 toy with P = 2."""
    got = expect_shape(as_tensor(answer, "toy_tokens"), (4, 4), "toy_tokens", " (4 tokens of 2·2 numbers)")
    want = patchify(toy_image(), 2)[0].double()
    for i in range(4):
        if not close(got[i], want[i]):
            row = toy_image()[0, 0].reshape(4, 4)[i]
            hint = ": that is the image's row, not a 2×2 patch" if close(got[i], row) else ""
            raise AssertionError(f"token {i} is wrong{hint}")


def check_toy_tokens(answer: Any) -> None:
    """Public: the form, and every number 1…16 used exactly once (not the order)."""
    got = expect_shape(as_tensor(answer, "toy_tokens"), (4, 4), "toy_tokens", " (4 tokens of 2·2 numbers)")
    if sorted(got.flatten().tolist()) != list(range(1, 17)):
        raise AssertionError("the four tokens together should hold each pixel 1…16 exactly once")


def expect_toy_projection(answer: Any, rows: tuple[int, ...] = (0, 1, 2, 3)) -> None:
    """The toy tokens times ``TOY_PROJECTION``ᵀ, by hand: ``(4, 2)``."""
    got = expect_shape(as_tensor(answer, "toy_projected"), (4, 2), "toy_projected", " (4 tokens, D = 2 each)")
    want = patchify(toy_image(), 2)[0].double() @ TOY_PROJECTION.double().T
    for i in rows:
        if not close(got[i], want[i]):
            raise AssertionError(f"token {i} projected should be {fmt(want[i])}, got {fmt(got[i])}: "
                                 f"feature j is the dot product of token {i} with row j of W")


def check_toy_projection(answer: Any) -> None:
    expect_toy_projection(answer, rows=(0,))


def expect_patch_params(got: Any, c: int, p: int, d: int) -> None:
    """``patch_embedding_params(c, p, d)`` = D·C·P·P + D."""
    want = d * c * p * p + d
    if got != want:
        hint = ": don't forget the D biases" if got == d * c * p * p else ""
        raise AssertionError(f"patch_embedding_params({c}, {p}, {d}) should be {want}, got {got!r}{hint}")


def check_patch_params(fn: Any) -> None:
    expect_patch_params(call(fn, "patch_embedding_params", 3, 16, 768), 3, 16, 768)


def conv_fields(conv: Any) -> dict[str, Any]:
    """What a judge needs of the student's Conv2d, as plain data (the grader recomputes its output)."""
    return {"type": type(conv).__name__, "is_conv2d": isinstance(conv, nn.Conv2d),
            "kernel_size": tuple(getattr(conv, "kernel_size", ())), "stride": tuple(getattr(conv, "stride", ())),
            "padding": getattr(conv, "padding", None),
            "weight": getattr(conv, "weight", None), "bias": getattr(conv, "bias", None)}


def expect_linear_to_conv(fields: dict[str, Any], linear: nn.Linear, c: int, p: int, images: torch.Tensor) -> None:
    """The Conv2d (given by :func:`conv_fields`) computes ``linear(patchify(images, p))`` token by token."""
    d = linear.out_features
    if not isinstance(fields, dict) or not fields.get("is_conv2d"):
        raise AssertionError(f"linear_to_conv should return an nn.Conv2d, got {fields.get('type')}")
    if tuple(fields["kernel_size"]) != (p, p) or tuple(fields["stride"]) != (p, p):
        raise AssertionError(f"the Conv2d should have kernel_size=stride={p}, got kernel_size={fields['kernel_size']}, "
                             f"stride={fields['stride']}: each output must see one whole patch, patches must not overlap")
    if fields["padding"] not in ((0, 0), 0, "valid"):
        raise AssertionError(f"the Conv2d should have no padding, got padding={fields['padding']}")
    weight = expect_shape(fields["weight"], (d, c, p, p), "conv.weight", " (D, C, P, P)")
    if fields["bias"] is None or not close(fields["bias"], linear.bias.detach()):
        raise AssertionError("conv.bias should be a copy of linear.bias")
    with torch.no_grad():
        want = linear(patchify(images, p))  # (B, N, D)
        got = torch.nn.functional.conv2d(images, weight.to(images.dtype), fields["bias"].to(images.dtype),
                                         stride=p).flatten(2).transpose(1, 2)
    if not close(got, want):
        hint = ""
        if close(weight.flatten(1), linear.weight.detach().reshape(d, p, p, c).permute(0, 3, 1, 2).flatten(1)):
            hint = ": the weight's columns are in (c, p_h, p_w) order: reshape to (D, C, P, P), no permute"
        raise AssertionError(f"conv(images) should equal linear(patchify(images)) token by token; token 0 should "
                             f"be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def seeded_linear(c: int, p: int, d: int, seed: int) -> nn.Linear:
    """The ``nn.Linear(C·P·P, D)`` of a check, the same wherever it is built."""
    torch.manual_seed(seed)
    return nn.Linear(c * p * p, d)


def check_linear_to_conv(fn: Any) -> None:
    c, p, d = 1, 2, 3
    linear = seeded_linear(c, p, d, seed=0)
    conv = call(fn, "linear_to_conv", linear, c, p)
    expect_linear_to_conv(conv_fields(conv), linear, c, p, seeded(2, c, 4, 4, seed=2))


def expect_seq_len(got: Any, h: int, w: int, p: int, d: int, cls: bool) -> None:
    """``pos_embed_shape(h, w, p, d, cls)`` = ``(1, S, D)``."""
    got = as_tuple(got, f"pos_embed_shape({h}, {w}, {p}, {d}, cls={cls})")
    cfg = ViTConfig(image_size=(h, w), patch_size=p, embed_dim=d, num_heads=1, pool="cls" if cls else "mean")
    want = (1, cfg.seq_len, d)
    if got != want:
        hint = ""
        if cls and got == (1, cfg.num_patches, d):
            hint = ": off by one, the CLS token needs a position too: S = N + 1"
        elif not cls and got == (1, cfg.num_patches + 1, d):
            hint = ": without a CLS token there are only the N patch tokens"
        raise AssertionError(f"pos_embed_shape({h}, {w}, {p}, {d}, cls={cls}) should be {want}, got {got}{hint}")


def check_seq_len(fn: Any) -> None:
    expect_seq_len(call(fn, "pos_embed_shape", 224, 224, 16, 768, True), 224, 224, 16, 768, True)


def expect_embed_tokens(got: Any, tokens: torch.Tensor, cls: torch.Tensor, pos: torch.Tensor) -> None:
    """``embed_tokens(tokens, cls, pos)`` = prepend CLS, then add positions."""
    b, n, d = tokens.shape
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


def check_embed_tokens(fn: Any) -> None:
    tokens, cls, pos = seeded(1, 3, 2, seed=3), seeded(1, 1, 2, seed=4), seeded(1, 4, 2, seed=5)
    expect_embed_tokens(call(fn, "embed_tokens", tokens.clone(), cls.clone(), pos.clone()), tokens, cls, pos)
