"""Hidden checks of homework 1 (instructor only: built into the autograder zip, never into ``vit_edu``).

Each check's probe runs in the student's kernel and returns plain data; its judge runs in the grader with the
public ``expect_*`` of :mod:`vit_edu.homework.feedback.hw1` on these inputs. 15 points, 11 of them for code.
"""

from vit_edu.homework.cases import Cases, call, value
from vit_edu.homework.feedback import hw1
from vit_edu.homework.feedback.common import seeded

cases = Cases("hw1_tokens")

# ---------------------------------------------------------------- chapter 0

cases.question("ch00_shapes", answers=("vit_b16_shapes",), public="check_vit_b16_shapes")
cases.add("ch00_shapes", "N, S and D of ViT-B/16")(lambda ns: value(ns, "vit_b16_shapes")).judge(
    lambda got, key: hw1.expect_vit_b16_shapes(got))

# ---------------------------------------------------------------- chapter 1

cases.question("ch01_token_count", answers=("token_count",), public="check_token_count",
               references=("vit_edu.config.ViTConfig", "vit_edu.patches.patchify"))
cases.each("ch01_token_count", "non-square images, 1 and 2 channels", "token_count",
           [(40, 56, 8, 1), (320, 320, 32, 3), (18, 30, 6, 2)], hw1.expect_token_count)

cases.question("ch01_patchify", answers=("my_patchify",), public="check_patchify",
               references=("vit_edu.patches.patchify", "vit_edu.patches.unpatchify", "vit_edu.patches._check_images",
                           "vit_edu.embedding.PatchEmbedding", "einops.rearrange", "einops.einops.rearrange"))


def patchify_inputs():
    return [(seeded(3, 3, 12, 8, seed=101), 4)]


cases.each("ch01_patchify", "shape on a 3-channel 12×8 batch", "my_patchify", patchify_inputs,
           lambda got, images, p: hw1.expect_patchify(got, images, p, values=False))
cases.each("ch01_patchify", "token order and contents on a 3-channel 12×8 batch", "my_patchify", patchify_inputs,
           hw1.expect_patchify, points=2)

# ---------------------------------------------------------------- chapter 2

cases.question("ch02_toy_tokens", answers=("toy_tokens",), public="check_toy_tokens")
cases.add("ch02_toy_tokens", "the four toy tokens")(lambda ns: value(ns, "toy_tokens")).judge(
    lambda got, key: hw1.expect_toy_tokens(got))

cases.question("ch02_toy_projection", answers=("toy_projected",), public="check_toy_projection")
cases.add("ch02_toy_projection", "all four projected tokens")(lambda ns: value(ns, "toy_projected")).judge(
    lambda got, key: hw1.expect_toy_projection(got))

# ---------------------------------------------------------------- chapter 3

cases.question("ch03_patch_params", answers=("patch_embedding_params",), public="check_patch_params",
               references=("vit_edu.embedding.PatchEmbedding", "vit_edu.trace.count_parameters"))
cases.each("ch03_patch_params", "other channels, patch sizes and widths", "patch_embedding_params",
           [(1, 6, 12), (4, 14, 1280), (2, 8, 96)], hw1.expect_patch_params)

cases.question("ch03_linear_to_conv", answers=("linear_to_conv",), public="check_linear_to_conv",
               references=("vit_edu.embedding.PatchEmbedding", "vit_edu.patches.patchify"))
CONV = [(3, 4, 5, 12, 7), (2, 2, 6, 6, 8)]  # channels, patch, width, image size, seed


@cases.add("ch03_linear_to_conv", "3 and 2 channels: kernel, stride, weight layout and bias", points=3)
def linear_to_conv(ns):
    return [hw1.conv_fields(call(ns, "linear_to_conv", hw1.seeded_linear(c, p, d, seed), c, p, plain=False))
            for c, p, d, _size, seed in CONV]


@linear_to_conv.judge
def _(got, key):
    for (c, p, d, size, seed), fields in zip(CONV, got, strict=True):
        hw1.expect_linear_to_conv(fields, hw1.seeded_linear(c, p, d, seed), c, p, seeded(2, c, size, size, seed=seed))


# ---------------------------------------------------------------- chapter 4

cases.question("ch04_seq_len", answers=("pos_embed_shape",), public="check_seq_len",
               references=("vit_edu.config.ViTConfig", "vit_edu.embedding.PositionEmbedding"))
cases.each("ch04_seq_len", "with a CLS token", "pos_embed_shape",
           [(40, 56, 8, 64, True), (448, 448, 16, 1024, True)], hw1.expect_seq_len)
cases.each("ch04_seq_len", "without a CLS token (mean pooling)", "pos_embed_shape",
           [(40, 56, 8, 64, False), (96, 64, 16, 32, False)], hw1.expect_seq_len)

cases.question("ch04_embed_tokens", answers=("embed_tokens",), public="check_embed_tokens",
               references=("vit_edu.embedding.prepend_cls", "vit_edu.embedding.add_position_embedding",
                           "vit_edu.embedding.PositionEmbedding"))
cases.each("ch04_embed_tokens", "a batch of 4 with N = 5, D = 6", "embed_tokens",
           lambda: [(seeded(4, 5, 6, seed=111), seeded(1, 1, 6, seed=112), seeded(1, 6, 6, seed=113))],
           hw1.expect_embed_tokens, points=2)
