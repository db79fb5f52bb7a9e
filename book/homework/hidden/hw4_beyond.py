"""Hidden checks of homework 4 (instructor only: built into the autograder zip, never into ``vit_edu``).

Each check's probe runs in the student's kernel and returns plain data; its judge runs in the grader with the
public ``expect_*`` of :mod:`vit_edu.homework.feedback.hw4` on these inputs. No answer key: every expected value,
the shares of the number question included, comes from the book's reference in :mod:`vit_edu.variants` (or the
exercise's definition where it asks for more than the reference does). 22 points: 20 for code, 2 for a number.
"""

import torch

from vit_edu.homework.cases import Cases, call, value
from vit_edu.homework.feedback import hw4
from vit_edu.homework.feedback.common import seeded

cases = Cases("hw4_beyond")

WINDOW_REFS = ("vit_edu.variants.windows.window_partition", "vit_edu.variants.windows.window_reverse",
               "vit_edu.variants.windows.WindowAttention")
MASK_REFS = ("vit_edu.variants.windows.region_labels", "vit_edu.variants.windows.shifted_window_mask",
             "vit_edu.variants.windows.window_groups", "vit_edu.variants.windows.global_window_mask",
             *WINDOW_REFS)


# ---------------------------------------------------------------- chapter 14

cases.question("ch14_window_partition", answers=("partition_windows",), public="check_partition",
               references=WINDOW_REFS)
PARTITIONS = {  # name: [(B, H, W, C, seed, mh, mw), ...]
    "rectangular windows on a batch of images": [(2, 6, 8, 3, 401, 3, 2), (3, 4, 9, 2, 402, 2, 3)],
    "square windows, a non-square grid, more channels": [(2, 8, 12, 5, 403, 4, 4), (1, 10, 5, 4, 404, 5, 5)],
}


def _partition_inputs(b, h, w, c, seed, mh, mw):
    return hw4.index_tokens(b, h, w, c, seed), (h, w), (mh, mw)


def _partition_case(name, specs):
    @cases.add("ch14_window_partition", name)
    def probe(ns):
        return [call(ns, "partition_windows", *_partition_inputs(*s)) for s in specs]

    @probe.judge
    def judge(got, key):
        for s, out in zip(specs, got, strict=True):
            hw4.expect_partition(out, *_partition_inputs(*s))


for _name, _specs in PARTITIONS.items():
    _partition_case(_name, _specs)

cases.question("ch14_window_reverse", answers=("merge_windows",), public="check_merge_windows",
               references=WINDOW_REFS)
REVERSES = {  # name: [(B, H, W, C, seed, mh, mw), ...]
    "square windows, several images": [(3, 8, 8, 2, 411, 4, 4), (2, 6, 9, 3, 412, 3, 3)],
    "rectangular windows": [(2, 6, 10, 3, 413, 2, 5), (1, 9, 4, 2, 414, 3, 4)],
}


def _reverse_inputs(b, h, w, c, seed, mh, mw):
    grid = hw4.index_tokens(b, h, w, c, seed).reshape(b, h, w, c)
    return hw4._partition(grid, (mh, mw)), (h, w), (mh, mw)


def _reverse_case(name, specs):
    @cases.add("ch14_window_reverse", name)
    def probe(ns):
        return [call(ns, "merge_windows", *_reverse_inputs(*s)) for s in specs]

    @probe.judge
    def judge(got, key):
        for s, out in zip(specs, got, strict=True):
            hw4.expect_merge_windows(out, *_reverse_inputs(*s))


for _name, _specs in REVERSES.items():
    _reverse_case(_name, _specs)

cases.question("ch14_shift_mask", answers=("shifted_mask",), public="check_shifted_mask", references=MASK_REFS)
MASKS = {  # name: ([(H, W, mh, mw, sh, sw), ...], points)
    "Swin's square windows shifted by half, on non-square grids": ([(8, 12, 4, 4, 2, 2), (14, 7, 7, 7, 3, 3)], 1),
    "rectangular windows with different shifts": ([(6, 10, 3, 5, 1, 2), (8, 9, 4, 3, 3, 1), (4, 8, 2, 4, 1, 3)], 2),
    "a shift along one axis only, and no shift": ([(6, 6, 3, 3, 0, 2), (9, 8, 3, 4, 2, 0), (6, 8, 3, 4, 0, 0)], 1),
}


def _mask_case(name, specs, points):
    @cases.add("ch14_shift_mask", name, points=points)
    def probe(ns):
        return [call(ns, "shifted_mask", (h, w), (mh, mw), (sh, sw)) for h, w, mh, mw, sh, sw in specs]

    @probe.judge
    def judge(got, key):
        for (h, w, mh, mw, sh, sw), out in zip(specs, got, strict=True):
            hw4.expect_shifted_mask(out, (h, w), (mh, mw), (sh, sw))


for _name, (_specs, _points) in MASKS.items():
    _mask_case(_name, _specs, _points)

cases.question("ch14_pairs_kept", answers=("pairs_kept",), public="check_pairs_kept")


@cases.add("ch14_pairs_kept", "the share of pairs the shifted mask keeps on Swin-T's three grids", points=2)
def _(ns):
    return value(ns, "pairs_kept")


_.judge(lambda got, key: hw4.expect_pairs_kept(got))

# ---------------------------------------------------------------- chapter 15

cases.question("ch15_deit_loss", answers=("deit_loss",), public="check_deit_loss",
               references=("vit_edu.variants.distill.distillation_loss",
                           "vit_edu.variants.distill.soft_distillation_term",
                           "vit_edu.variants.distill.train_distilled"))
DEIT = {  # name: [(B, K, seed, kind, alpha, tau, smoothing), ...]
    "hard distillation, other weights": [(6, 5, 421, "hard", 0.5, 1.0, 0.0), (5, 7, 422, "hard", 0.3, 4.0, 0.0)],
    "soft distillation at other temperatures": [(6, 5, 423, "soft", 0.5, 3.0, 0.0), (4, 8, 424, "soft", 0.7, 0.5, 0.0)],
    "DeiT's smoothing of the hard targets": [(6, 5, 425, "hard", 0.5, 1.0, 0.1), (5, 6, 426, "soft", 0.4, 2.0, 0.2)],
    "gradients reach both heads and not the teacher": [(4, 5, 427, "soft", 0.5, 2.0, 0.1),
                                                       (4, 5, 428, "hard", 0.6, 1.0, 0.0)],
}


def _deit_probe(ns, spec):
    b, k, seed, kind, alpha, tau, smoothing = spec
    c, d, y, t = hw4.deit_inputs(b, k, seed)
    for a in (c, d, t):
        a.requires_grad_(True)
    out = call(ns, "deit_loss", c, d, y, t, kind, alpha, tau, smoothing, plain=False)
    grads = None
    if isinstance(out, torch.Tensor) and out.requires_grad and out.numel() == 1:
        out.reshape(()).backward()
        grads = [c.grad, d.grad, t.grad]
    return {"loss": out, "grads": grads}


def _deit_case(name, specs, grads):
    @cases.add("ch15_deit_loss", name)
    def probe(ns):
        return [_deit_probe(ns, s) for s in specs]

    @probe.judge
    def judge(got, key):
        for s, out in zip(specs, got, strict=True):
            b, k, seed, kind, alpha, tau, smoothing = s
            hw4.expect_deit_loss(out["loss"], *hw4.deit_inputs(b, k, seed), kind, alpha, tau, smoothing)
            if grads:
                hw4.expect_deit_grads(out["grads"], f"deit_loss(kind={kind!r}, ...)")


for _name, _specs in DEIT.items():
    _deit_case(_name, _specs, _name.startswith("gradients"))

# ---------------------------------------------------------------- chapter 16

MAE_REFS = ("vit_edu.variants.mae.random_masking", "vit_edu.variants.mae.restore_order",
            "vit_edu.variants.mae.MaskedAutoencoder")
cases.question("ch16_masking", answers=("mask_tokens",), public="check_masking", references=MAE_REFS)
MASKINGS = {  # name: [(B, N, D, prefix, seed, mask_ratio), ...]
    "no prefix token, 75% hidden": [(3, 16, 4, 0, 431, 0.75), (2, 12, 5, 0, 432, 0.25)],
    "a CLS token, or two prefix tokens, in front": [(2, 16, 3, 1, 433, 0.75), (3, 10, 4, 2, 434, 0.5)],
    "N · (1 − mask_ratio) not a whole number": [(2, 14, 3, 1, 435, 0.75), (2, 10, 4, 0, 436, 0.65)],
}


def _masking_case(name, specs):
    @cases.add("ch16_masking", name)
    def probe(ns):
        return [call(ns, "mask_tokens", *hw4.masking_inputs(*s[:5]), s[5], s[3]) for s in specs]

    @probe.judge
    def judge(got, key):
        for s, out in zip(specs, got, strict=True):
            hw4.expect_masking(out, *hw4.masking_inputs(*s[:5]), s[5], s[3])


for _name, _specs in MASKINGS.items():
    _masking_case(_name, _specs)

cases.question("ch16_unshuffle", answers=("unshuffle",), public="check_unshuffle", references=MAE_REFS)
UNSHUFFLES = {  # name: [(B, K, N, D, seed), ...]
    "a quarter of the patches visible": [(3, 4, 16, 5, 441), (2, 3, 12, 4, 442)],
    "most patches visible, one image": [(1, 7, 9, 3, 443), (2, 9, 10, 2, 444)],
}


def _unshuffle_inputs(b, k, n, d, seed):
    g = torch.Generator().manual_seed(seed)
    ids_shuffle = torch.stack([torch.randperm(n, generator=g) for _ in range(b)])
    return seeded(b, k, d, seed=seed + 1), ids_shuffle, seeded(1, 1, d, seed=seed + 2)


def _unshuffle_case(name, specs):
    @cases.add("ch16_unshuffle", name)
    def probe(ns):
        return [call(ns, "unshuffle", *_unshuffle_inputs(*s)) for s in specs]

    @probe.judge
    def judge(got, key):
        for s, out in zip(specs, got, strict=True):
            hw4.expect_unshuffle(out, *_unshuffle_inputs(*s))


for _name, _specs in UNSHUFFLES.items():
    _unshuffle_case(_name, _specs)

# ---------------------------------------------------------------- chapter 17

cases.question("ch17_contrastive", answers=("group_contrastive_loss",), public="check_group_loss",
               references=("vit_edu.variants.clip.contrastive_loss", "vit_edu.variants.clip.TinyCLIP"))
CONTRASTIVE = {  # name: ([(B, E, seed, scale), ...], groups of each, points)
    "every pair different (CLIP's loss)": ([(6, 8, 451, 14.3), (3, 5, 452, 1.0)], [None, None], 1),
    "several images share a caption": ([(6, 8, 453, 14.3), (7, 4, 454, 30.0), (4, 6, 455, 5.0)],
                                       [[0, 1, 0, 2, 1, 0], [3, 3, 1, 5, 1, 3, 0], [2, 2, 2, 2]], 2),
}


def _contrastive_inputs(spec, groups):
    b, e, seed, scale = spec
    image_emb, text_emb = hw4.clip_inputs(b, e, seed)
    groups = torch.arange(b) if groups is None else torch.tensor(groups)
    return image_emb, text_emb, (torch.tensor(scale) if seed % 2 else scale), groups


def _contrastive_case(name, specs, groups, points):
    @cases.add("ch17_contrastive", name, points=points)
    def probe(ns):
        return [call(ns, "group_contrastive_loss", *_contrastive_inputs(s, g)) for s, g in zip(specs, groups)]

    @probe.judge
    def judge(got, key):
        for s, g, out in zip(specs, groups, got, strict=True):
            hw4.expect_group_loss(out, *_contrastive_inputs(s, g))


for _name, (_specs, _groups, _points) in CONTRASTIVE.items():
    _contrastive_case(_name, _specs, _groups, _points)
