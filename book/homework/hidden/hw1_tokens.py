"""Homework 1's checks (instructor only): the public examples and the hidden checks, computed with the references.

``make(draw)`` builds every example: its inputs (hidden ones drawn from the course's secret through ``draw``),
what the book's reference returns on them, and what each classic mistake returns, with its hint. Nothing of this
module enters the package, the site or a grading sandbox: only the data it returns does (the public examples in
the package, the hidden checks in the instructor's autograder zip). 15 points, 11 of them for code.
"""

import random

import torch
from torch import nn

from vit_edu.config import CONFIGS
from vit_edu.embedding import add_position_embedding, prepend_cls
from vit_edu.homework.assignment import Assignment, seeded
from vit_edu.homework.checks import Example, Mistake
from vit_edu.homework.plain import recipe
from vit_edu.patches import patchify, patchify_without_permute, toy_image

CONFIG_REFS = ("vit_edu.config.ViTConfig.grid_size", "vit_edu.config.ViTConfig.num_patches",
               "vit_edu.config.ViTConfig.seq_len", "vit_edu.config.ViTConfig.patch_dim")
PATCHIFY_REFS = ("vit_edu.patches.patchify", "vit_edu.patches.unpatchify", "vit_edu.patches.patchify_without_permute",
                 "vit_edu.embedding.PatchEmbedding", "einops.rearrange", "einops.einops.rearrange",
                 "torch.nn.functional.unfold", "torch.Tensor.unfold", "torch.nn.Unfold")
TOY_PROJECTION = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, -1.0]])


def token_count(h, w, p, c):
    return Example("token_count", ((h // p) * (w // p), c * p * p), [h, w, p, c], what=f"token_count({h}, {w}, {p}, {c})",
                   mistakes=[Mistake("N counts patches, (H/P)·(W/P), not pixels/P", (h * w // p, c * p * p)),
                             Mistake("a token holds every channel, C·P·P numbers", ((h // p) * (w // p), p * p))])


def patchify_example(images, p, shape_only=False):
    b, c, h, w = images.shape
    channel_last = images.permute(0, 2, 3, 1).reshape(b, h // p, p, w // p, p, c).permute(0, 1, 3, 2, 4, 5).reshape(
        b, (h // p) * (w // p), c * p * p)
    return Example("my_patchify", patchify(images, p), [images, p], form_only=shape_only,
                   what=f"my_patchify(images of shape {tuple(images.shape)}, {p})", shape_hint=" (B, N, C·P·P)",
                   mistakes=[Mistake("did you permute before the final reshape? (reshape alone keeps memory order)",
                                     patchify_without_permute(images, p)),
                             *([Mistake("the channel must come first inside a token, (c, p_h, p_w), like Conv2d's "
                                        "weight", channel_last)] if c > 1 else [])])


def patch_params(c, p, d):
    return Example("patch_embedding_params", d * c * p * p + d, [c, p, d], what=f"patch_embedding_params({c}, {p}, {d})",
                   mistakes=[Mistake("don't forget the D biases", d * c * p * p)])


def linear_to_conv(c, p, d, size, seed):
    torch.manual_seed(seed)
    linear = nn.Linear(c * p * p, d)
    images = seeded(2, c, size, size, seed=seed + 1)
    g = size // p
    with torch.no_grad():
        want = linear(patchify(images, p)).transpose(1, 2).reshape(2, d, g, g)  # (B, D, gh, gw), as Conv2d gives it
        permuted = linear.weight.reshape(d, p, p, c).permute(0, 3, 1, 2)
        wrong = nn.functional.conv2d(images, permuted, linear.bias, stride=p)
    arg = recipe("torch.nn.Linear", c * p * p, d, state={"weight": linear.weight.detach(), "bias": linear.bias.detach()})
    expect = {"class": "Conv2d", "output": want, "kernel_size": (p, p), "stride": (p, p), "padding": (0, 0),
              "bias": linear.bias.detach()}
    return Example("linear_to_conv", expect, [arg, c, p], what=f"linear_to_conv(nn.Linear({c * p * p}, {d}), {c}, {p})",
                   adapter={"apply": [images], "attrs": ["kernel_size", "stride", "padding", "bias"]},
                   mistakes=[Mistake("the weight's columns are in (c, p_h, p_w) order: reshape to (D, C, P, P), no "
                                     "permute", {**expect, "output": wrong})])


def seq_len(h, w, p, d, cls):
    n = (h // p) * (w // p)
    wrong = (1, n, d) if cls else (1, n + 1, d)
    hint = ("off by one: the CLS token needs a position too, S = N + 1" if cls else
            "without a CLS token there are only the N patch tokens")
    return Example("pos_embed_shape", (1, n + int(cls), d), [h, w, p, d, cls],
                   what=f"pos_embed_shape({h}, {w}, {p}, {d}, cls={cls})", mistakes=[Mistake(hint, wrong)])


def embed_tokens(tokens, cls, pos):
    b, n, d = tokens.shape
    appended = torch.cat([tokens, cls.expand(b, -1, -1)], dim=1) + pos
    return Example("embed_tokens", add_position_embedding(prepend_cls(tokens, cls), pos), [tokens, cls, pos],
                   what=f"embed_tokens(tokens of shape {tuple(tokens.shape)}, ...)", shape_hint=" (B, N+1, D)",
                   mistakes=[Mistake("position embeddings are added, not concatenated", shape=(b, n + 1, 2 * d)),
                             Mistake("the CLS token goes in front (index 0), not at the end", appended),
                             Mistake("add pos_embed after prepending the CLS token", prepend_cls(tokens, cls))])


def make(draw):
    """Homework 1's questions, public examples and hidden checks (``draw(label)``: a seed from the secret)."""
    a = Assignment("hw1_tokens")

    q = a.question("ch00_shapes", ("vit_b16_shapes",), references=CONFIG_REFS + ("vit_edu.trace.trace_shapes",))
    cfg = CONFIGS["vit-b/16"]
    want = {"N": cfg.num_patches, "S": cfg.seq_len, "D": cfg.embed_dim}
    q.public = [Example("vit_b16_shapes", {"N": 1, "S": 1, "D": 1}, form_only=True, what="vit_b16_shapes")]
    q.check("N, S and D of ViT-B/16", [Example("vit_b16_shapes", want, what="vit_b16_shapes", mistakes=[
        Mistake("the CLS token comes first: S = N + 1", {**want, "S": want["N"]}),
        Mistake("N counts patches, (224/16)², not pixels/16", {**want, "N": 224 * 224 // 16, "S": 224 * 224 // 16 + 1})])])

    q = a.question("ch01_token_count", ("token_count",), references=CONFIG_REFS + PATCHIFY_REFS)
    q.public = [token_count(224, 224, 16, 3)]
    r = random.Random(draw("token_count"))
    q.check("non-square images, 1 and 2 channels",
            [token_count(p * r.randint(2, 9), p * r.randint(2, 9), p, c) for p, c in ((8, 1), (32, 3), (6, 2))])

    q = a.question("ch01_patchify", ("my_patchify",), references=PATCHIFY_REFS)
    q.public = [patchify_example(torch.arange(24.0).reshape(1, 1, 4, 6), 2)]
    images = seeded(3, 3, 12, 8, seed=draw("patchify"))
    q.check("shape on a 3-channel 12×8 batch", [patchify_example(images, 4, shape_only=True)])
    q.check("token order and contents on a 3-channel 12×8 batch", [patchify_example(images, 4)], points=2)

    q = a.question("ch02_toy_tokens", ("toy_tokens",), references=PATCHIFY_REFS)
    image = toy_image().transpose(-1, -2)  # 1…16 column by column: not the row-by-row toy the chapters print
    tokens = patchify(image, 2)[0]
    q.public = [Example("toy_tokens", torch.arange(1.0, 17.0).reshape(4, 4), sorted_values=True, what="toy_tokens")]
    q.check("the four toy tokens", [Example("toy_tokens", tokens, what="toy_tokens", shape_hint=" (4 tokens of 2·2 numbers)",
                                            mistakes=[Mistake("that is the image's rows, not 2×2 patches",
                                                              image[0, 0].reshape(4, 4)),
                                                      Mistake("those are the tokens of the chapters' row-by-row toy; "
                                                              "this image is filled column by column",
                                                              patchify(toy_image(), 2)[0])])])

    q = a.question("ch02_toy_projection", ("toy_projected",), references=PATCHIFY_REFS)
    q.public = [Example("toy_projected", torch.zeros(4, 2), form_only=True, what="toy_projected",
                        shape_hint=" (4 tokens, D = 2 each)")]
    q.check("all four projected tokens", [Example("toy_projected", tokens @ TOY_PROJECTION.T, what="toy_projected",
                                                  mistakes=[Mistake("feature j is the dot product of a token with row "
                                                                    "j of W", tokens @ TOY_PROJECTION[[1, 0]].T)])])

    q = a.question("ch03_patch_params", ("patch_embedding_params",),
                   references=("vit_edu.embedding.PatchEmbedding", "vit_edu.trace.count_parameters"))
    q.public = [patch_params(3, 16, 768)]
    r = random.Random(draw("patch_params"))
    q.check("other channels, patch sizes and widths",
            [patch_params(c, r.randint(2, 16), r.randint(2, 96) * 8) for c in (1, 4, 2)])

    q = a.question("ch03_linear_to_conv", ("linear_to_conv",), references=PATCHIFY_REFS)
    q.public = [linear_to_conv(1, 2, 3, 4, seed=0)]
    q.check("3 and 2 channels: kernel, stride, weight layout and bias",
            [linear_to_conv(3, 4, 5, 12, draw("conv/1")), linear_to_conv(2, 2, 6, 6, draw("conv/2"))], points=3)

    q = a.question("ch04_seq_len", ("pos_embed_shape",),
                   references=CONFIG_REFS + ("vit_edu.embedding.PositionEmbedding",))
    q.public = [seq_len(224, 224, 16, 768, True)]
    r = random.Random(draw("seq_len"))
    sizes = [(8 * r.randint(2, 9), 8 * r.randint(2, 9), 8, 16 * r.randint(1, 8)) for _ in range(4)]
    q.check("with a CLS token", [seq_len(*s, True) for s in sizes[:2]])
    q.check("without a CLS token (mean pooling)", [seq_len(*s, False) for s in sizes[2:]])

    q = a.question("ch04_embed_tokens", ("embed_tokens",),
                   references=("vit_edu.embedding.prepend_cls", "vit_edu.embedding.add_position_embedding",
                               "vit_edu.embedding.PositionEmbedding"))
    q.public = [embed_tokens(seeded(1, 3, 2, seed=3), seeded(1, 1, 2, seed=4), seeded(1, 4, 2, seed=5))]
    s = draw("embed_tokens")
    q.check("a batch of 4 with N = 5, D = 6",
            [embed_tokens(seeded(4, 5, 6, seed=s), seeded(1, 1, 6, seed=s + 1), seeded(1, 6, 6, seed=s + 2))], points=2)
    return a
