"""Homework 4's checks (instructor only): the public examples and the hidden checks, computed with the references.

``make(draw)`` builds every example: its inputs (hidden ones drawn from the course's secret through ``draw``),
what the right answer returns on them and what each classic mistake returns, with its hint. The right answers
come from the book's references in :mod:`vit_edu.variants`, and, where an exercise asks for more than they do
(rectangular windows on a token sequence, a shift per axis, DeiT's label smoothing, prefix tokens, the inverse
of a shuffle, repeated captions), from the reference code below. Nothing of this module enters the package, the
site or a grading sandbox: only the data it returns does. 22 points: 20 for code, 2 for a number.
"""

import math
import random

import torch
import torch.nn.functional as F

from vit_edu.homework.assignment import Assignment, seeded
from vit_edu.homework.checks import Example, Mistake, difference
from vit_edu.variants.clip import contrastive_loss
from vit_edu.variants.distill import distillation_loss, soft_distillation_term
from vit_edu.variants.mae import restore_order
from vit_edu.variants.windows import shifted_window_mask, window_partition, window_reverse

WINDOW_REFS = ("vit_edu.variants.windows.window_partition", "vit_edu.variants.windows.window_reverse",
               "vit_edu.variants.windows.WindowAttention")
MASK_REFS = ("vit_edu.variants.windows.region_labels", "vit_edu.variants.windows.shifted_window_mask",
             "vit_edu.variants.windows.window_groups", "vit_edu.variants.windows.global_window_mask", *WINDOW_REFS)
DEIT_REFS = ("vit_edu.variants.distill.distillation_loss", "vit_edu.variants.distill.soft_distillation_term",
             "vit_edu.variants.distill.train_distilled")
MAE_REFS = ("vit_edu.variants.mae.random_masking", "vit_edu.variants.mae.restore_order",
            "vit_edu.variants.mae.MaskedAutoencoder")
CLIP_REFS = ("vit_edu.variants.clip.contrastive_loss", "vit_edu.variants.clip.TinyCLIP")
PAIR_GRIDS = (56, 28, 14)  # Swin-T's first three stages at 224×224 (stage 4, 7×7, has one window and no shift)
PAIR_WINDOW, PAIR_SHIFT = 7, 3


def example(*args, **kwargs) -> Example:
    """An ``Example`` without the mistakes that give the right output on its inputs (they would name nothing)."""
    ex = Example(*args, **kwargs)
    ex.mistakes = [m for m in ex.mistakes
                   if m.output is None or m.sort_dim is not None or difference(m.output, ex.expect, ex) is not None]
    return ex


# ---------------------------------------------------------------- chapter 14: windows


def window_order(height: int, width: int, window: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column of every token of every window, windows row by row and tokens row by row: ``(N,)`` each."""
    mh, mw = window
    rows = torch.arange(height).reshape(height // mh, 1, mh, 1)  # (nh, 1, mh, 1)
    cols = torch.arange(width).reshape(1, width // mw, 1, mw)  # (1, nw, 1, mw)
    shape = (height // mh, width // mw, mh, mw)
    return rows.expand(shape).flatten(), cols.expand(shape).flatten()


def partition(x: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    """``(B, H, W, C)`` -> ``(B·nW, mh·mw, C)``: the book's ``window_partition``, generalised to rectangles."""
    mh, mw = window
    b, h, w, c = x.shape
    if mh == mw:
        return window_partition(x, mh)
    rows, cols = window_order(h, w, window)
    return x[:, rows, cols].reshape(-1, mh * mw, c)


def reverse(windows: torch.Tensor, window: tuple[int, int], height: int, width: int) -> torch.Tensor:
    """``(B·nW, mh·mw, C)`` -> ``(B, H, W, C)``: the book's ``window_reverse``, generalised to rectangles."""
    mh, mw = window
    if mh == mw:
        return window_reverse(windows, mh, height, width)
    c = windows.shape[-1]
    b = windows.shape[0] // ((height // mh) * (width // mw))
    rows, cols = window_order(height, width, window)
    out = windows.new_zeros(b, height, width, c)
    out[:, rows, cols] = windows.reshape(b, -1, c)
    return out


def index_tokens(b: int, h: int, w: int, c: int, seed: int) -> torch.Tensor:
    """``(B, H·W, C)`` whose channel 0 is the token's index, the others seeded noise: a misplaced token shows."""
    x = seeded(b, h * w, c, seed=seed)
    x[..., 0] = torch.arange(b * h * w, dtype=torch.float32).reshape(b, h * w)
    return x


def partition_example(b: int, h: int, w: int, c: int, seed: int, mh: int, mw: int) -> Example:
    """``partition_windows(tokens, (H, W), (mh, mw))`` on index tokens."""
    tokens = index_tokens(b, h, w, c, seed)
    x = tokens.reshape(b, h, w, c)
    want = partition(x, (mh, mw))
    nw = (h // mh) * (w // mw)
    mistakes = [Mistake("a plain reshape cuts the sequence into runs of consecutive tokens of a row, not into "
                        "windows: split the rows and the columns, bring the two window indices together, then "
                        "flatten", tokens.reshape(b * nw, mh * mw, c))]
    if h != w:
        mistakes.append(Mistake("the tokens run row by row: token i sits in row i // W, column i % W (grid = (H, W))",
                                partition(tokens.reshape(b, w, h, c).transpose(1, 2), (mh, mw))))
    if mh != mw and h % mw == 0 and w % mh == 0:
        mistakes.append(Mistake("the window is (rows, columns) = (mh, mw): mh rows high and mw columns wide",
                                partition(x, (mw, mh))))
    mistakes += [Mistake("each window holds the right tokens, in the wrong order: inside a window, tokens go row by "
                         "row", want, sort_dim=1),
                 Mistake("the right windows in the wrong order: image by image, and in each image windows row by "
                         "row", want, sort_dim=0)]
    return example("partition_windows", want, [tokens, (h, w), (mh, mw)],
                   what=f"partition_windows(tokens of shape {tuple(tokens.shape)}, grid {(h, w)}, window {(mh, mw)})",
                   shape_hint=" (B·nW, mh·mw, C): one sequence of mh·mw tokens per window", mistakes=mistakes)


def merge_example(b: int, h: int, w: int, c: int, seed: int, mh: int, mw: int) -> Example:
    """``merge_windows(windows, (H, W), (mh, mw))`` on the windows of index tokens."""
    windows = partition(index_tokens(b, h, w, c, seed).reshape(b, h, w, c), (mh, mw))
    want = reverse(windows, (mh, mw), h, w).reshape(b, h * w, c)
    return example("merge_windows", want, [windows, (h, w), (mh, mw)],
                   what=f"merge_windows(windows of shape {tuple(windows.shape)}, grid {(h, w)}, window {(mh, mw)})",
                   shape_hint=" (B, H·W, C): B = the number of windows / windows per image", mistakes=[
                       Mistake("a plain reshape does not undo the window cut: split the window indices and the rows "
                               "and columns inside a window, put each row index next to its window-row index, then "
                               "merge", windows.reshape(b, h * w, c)),
                       Mistake("every token is there, some in the wrong place: merge_windows(partition_windows(t, "
                               "grid, window), grid, window) gives t back", want, sort_dim=1)])


def same_label(labels: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    """``(H, W)`` region labels -> ``(nW, mh·mw, mh·mw)``: True where query and key of a window share a label."""
    per_window = partition(labels[None, :, :, None].float(), window)[..., 0]  # (nW, mh·mw)
    return per_window[:, :, None] == per_window[:, None, :]


def wrap_mask(height: int, width: int, window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """``(nW, mh·mw, mh·mw)``: in the windows of the grid rolled up by ``sh`` and left by ``sw``, True where query
    and key are on the same side of every wrap (the book's ``shifted_window_mask``, generalised)."""
    (mh, mw), (sh, sw) = window, shift
    if mh == mw and sh == sw:
        return shifted_window_mask(height, width, mh, sh)
    wrapped = 2 * (torch.arange(height) >= height - sh)[:, None] + (torch.arange(width) >= width - sw)[None, :]
    return same_label(wrapped, window)


def mask_example(h: int, w: int, mh: int, mw: int, sh: int, sw: int) -> Example:
    """``shifted_mask((H, W), (mh, mw), (sh, sw))``."""
    want = wrap_mask(h, w, (mh, mw), (sh, sw))
    first_rows = 2 * (torch.arange(h) < sh)[:, None] + (torch.arange(w) < sw)[None, :]
    mistakes = [Mistake("every pair is allowed (the mask of regular windows), but the roll put tokens from opposite "
                        "edges of the grid into the same window: they were not neighbours and must not attend to "
                        "each other", torch.ones_like(want))]
    if sh != sw:
        mistakes.append(Mistake("the first shift is along the rows (the grid moves up by sh), the second along the "
                                "columns", wrap_mask(h, w, (mh, mw), (sw, sh))))
    mistakes.append(Mistake("the roll moves the grid up and left, so the tokens that wrapped around are in the last "
                            "rows and columns of the rolled grid, not the first", same_label(first_rows, (mh, mw))))
    return example("shifted_mask", want, [(h, w), (mh, mw), (sh, sw)],
                   what=f"shifted_mask(grid {(h, w)}, window {(mh, mw)}, shift {(sh, sw)})",
                   shape_hint=" (nW, mh·mw, mh·mw): one query × key table per window", mistakes=mistakes)


def mask_specs(r: random.Random, kind: str) -> list[tuple[int, int, int, int, int, int]]:
    """Drawn ``(H, W, mh, mw, sh, sw)`` for one hidden check: Swin's square windows shifted by half on a
    non-square grid, rectangular windows with two different shifts, or a shift along one axis (or none)."""
    if kind == "square":
        out = []
        for m in r.sample(range(3, 8), 2):
            gh, gw = r.sample(range(2, 5), 2)  # different: a non-square grid
            out.append((m * gh, m * gw, m, m, m // 2, m // 2))
        return out
    specs = []
    for i in range(3):
        mh, mw = r.sample(range(2, 6), 2)  # different: rectangular windows
        h, w = mh * r.randint(2, 4), mw * r.randint(2, 4)
        if kind == "rectangular":
            sh, sw = r.randint(1, mh - 1), r.randint(1, mw - 1)
            if sh == sw:
                sh, sw = (sh, sw + 1) if sw + 1 < mw else (sh + 1, sw) if sh + 1 < mh else (sh, sw - 1)
            specs.append((h, w, mh, mw, sh, sw))
        else:  # along the columns only, along the rows only, no shift
            sh, sw = ((0, r.randint(1, mw - 1)), (r.randint(1, mh - 1), 0), (0, 0))[i]
            specs.append((h, w, mh, mw, sh, sw))
    return specs


def kept_shares() -> dict[int, float]:
    """Per grid side, the share of a window layer's pairs (nW·M⁴) that the shifted layer's mask keeps."""
    out = {}
    for side in PAIR_GRIDS:
        mask = wrap_mask(side, side, (PAIR_WINDOW, PAIR_WINDOW), (PAIR_SHIFT, PAIR_SHIFT))
        out[side] = mask.sum().item() / mask.numel()
    return out


def pairs_example() -> Example:
    """The number: the three shares, within 0.0001."""
    want = kept_shares()
    global_share = {s: v * PAIR_WINDOW**2 / s**2 for s, v in want.items()}  # nW·M⁴ / N² = M² / side²
    return example("pairs_kept", want, what="pairs_kept", atol=1e-4, rtol=0, mistakes=[
        Mistake("that is the share of the pairs the mask drops, not of those it keeps",
                {s: 1 - v for s, v in want.items()}),
        Mistake("that is the share of global attention's N² pairs; divide by the pairs a regular window layer "
                "computes (nW·7⁴)", global_share),
        Mistake("a share of 1 is what regular windows keep (no shift): roll the grid by 3 along both axes before "
                "cutting 7×7 windows", {s: 1.0 for s in want})])


# ---------------------------------------------------------------- chapter 15: distillation

NOT_SMOOTHED = ("the true labels are not smoothed: with smoothing = ε > 0, the CLS head's target gives the true "
                "class 1 − ε and ε/(K − 1) to each other class")
OTHER_CONVENTION = ("that is the other convention of label smoothing: torch's label_smoothing (and DeiT's code, "
                    "through timm) spreads ε over all K classes, so the true class keeps 1 − ε + ε/K; this "
                    "exercise asks for the paper's form: 1 − ε on the true class and ε/(K − 1) on each other class")
TEACHER_SMOOTHED = ("DeiT does not smooth the teacher's pseudo-labels: the distillation head's hard term is a plain "
                    "cross-entropy against argmax(teacher_logits); only the true labels are smoothed")
BOTH_SMOOTHED = ("DeiT does not smooth the teacher's pseudo-labels (the hard term is a plain cross-entropy against "
                 "argmax(teacher_logits)); and torch's label_smoothing is the other convention, ε spread over all "
                 "K classes, where this exercise asks for ε/(K − 1) on each other class")


def deit_inputs(b: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``cls_logits, dist_logits (B, K)``, ``labels (B,)`` and ``teacher_logits (B, K)``; the teacher
    disagrees with the labels on some images, as a real teacher does."""
    cls_logits, dist_logits = 2 * seeded(b, k, seed=seed), 2 * seeded(b, k, seed=seed + 1)
    teacher = 3 * seeded(b, k, seed=seed + 2)
    labels = torch.randint(0, k, (b,), generator=torch.Generator().manual_seed(seed + 3))
    return cls_logits, dist_logits, labels, teacher


def smoothed_ce(logits: torch.Tensor, labels: torch.Tensor, eps: float) -> torch.Tensor:
    """Cross-entropy against 1 − ε on the label and ε/(K − 1) on each other class (the DeiT paper's form)."""
    k = logits.shape[-1]
    target = torch.full_like(logits, eps / (k - 1)).scatter(1, labels[:, None], 1 - eps)  # (B, K)
    return -(target * logits.log_softmax(-1)).sum(-1).mean()


def deit_reference(c: torch.Tensor, d: torch.Tensor, y: torch.Tensor, t: torch.Tensor, kind: str, alpha: float,
                   tau: float, eps: float) -> torch.Tensor:
    """The exercise's loss: the book's ``distillation_loss`` with the CLS head's true labels smoothed (the paper's
    form); the teacher's term is the book's, its pseudo-labels unsmoothed, as in DeiT."""
    book = distillation_loss(c, d, y, t, kind=kind, alpha=alpha, tau=tau)
    return book + (1 - alpha) * (smoothed_ce(c, y, eps) - F.cross_entropy(c, y))


def kl(student: torch.Tensor, teacher: torch.Tensor, tau: float, reduction: str = "batchmean") -> torch.Tensor:
    """KL(softmax(teacher/τ) ‖ softmax(student/τ)), without τ²."""
    return F.kl_div((student / tau).log_softmax(-1), (teacher / tau).log_softmax(-1), reduction=reduction,
                    log_target=True)


def deit_mistakes(kind: str, alpha: float, tau: float, eps: float) -> list[tuple[str, object]]:
    """The classic mistakes, each as (hint, loss(c, d, y, t)) computed the mistaken way."""
    def mix(label, teacher):
        return (1 - alpha) * label + alpha * teacher

    def term(d, t):  # the right distillation term
        if kind == "hard":
            return F.cross_entropy(d, t.detach().argmax(-1))
        return soft_distillation_term(d, t.detach(), tau)

    out = [(NOT_SMOOTHED, lambda c, d, y, t: mix(F.cross_entropy(c, y), term(d, t))),
           (OTHER_CONVENTION, lambda c, d, y, t: mix(F.cross_entropy(c, y, label_smoothing=eps), term(d, t)))]
    if kind == "hard":
        out += [(TEACHER_SMOOTHED, lambda c, d, y, t: mix(smoothed_ce(c, y, eps), smoothed_ce(d, t.argmax(-1), eps))),
                (BOTH_SMOOTHED, lambda c, d, y, t: mix(F.cross_entropy(c, y, label_smoothing=eps),
                                                       F.cross_entropy(d, t.argmax(-1), label_smoothing=eps)))]
    out.append(("α weighs the teacher's term, 1 − α the true labels' term",
                lambda c, d, y, t: alpha * smoothed_ce(c, y, eps) + (1 - alpha) * term(d, t)))
    probs = "hard distillation uses the teacher's top class (argmax) as the target, not its probabilities"
    if kind == "hard":
        out += [(probs, lambda c, d, y, t: mix(smoothed_ce(c, y, eps), kl(d, t.detach(), 1.0))),
                (probs, lambda c, d, y, t: mix(smoothed_ce(c, y, eps), F.cross_entropy(d, t.detach().softmax(-1))))]
    else:
        out += [("multiply the KL term by τ²: without it its gradient shrinks like 1/τ²",
                 lambda c, d, y, t: mix(smoothed_ce(c, y, eps), kl(d, t.detach(), tau))),
                ("that is the summed KL divided by B·K, the convention of DeiT's code (and of F.kl_div's "
                 "reduction='mean'); this exercise asks for the paper's: the sum over the classes, averaged over "
                 "the images (reduction='batchmean'), K times larger",
                 lambda c, d, y, t: mix(smoothed_ce(c, y, eps), tau**2 * kl(d, t.detach(), tau, "sum") / d.numel())),
                ("KL(teacher ‖ student): the teacher's distribution comes first (it weighs the log-ratio), the "
                 "student's second", lambda c, d, y, t: mix(smoothed_ce(c, y, eps), tau**2 * kl(t.detach(), d, tau))),
                ("the teacher's term trains the distillation head (dist_logits), not the CLS head",
                 lambda c, d, y, t: mix(smoothed_ce(c, y, eps), tau**2 * kl(c, t.detach(), tau))),
                ("a gradient reaches teacher_logits: the teacher is a fixed target, detach it",
                 lambda c, d, y, t: mix(smoothed_ce(c, y, eps), soft_distillation_term(d, t, tau)))]
    return out


def deit_example(b: int, k: int, seed: int, kind: str, alpha: float, tau: float, eps: float,
                 grads: bool = False) -> Example:
    """``deit_loss(...)``; with ``grads``, the loss and the gradients of both heads' logits and the teacher's."""
    args = deit_inputs(b, k, seed)

    def run(loss_fn):
        c, d, y, t = (a.clone() for a in args)
        if not grads:
            with torch.no_grad():
                return loss_fn(c, d, y, t)
        for a in (c, d, t):
            a.requires_grad_(True)
        loss = loss_fn(c, d, y, t)
        loss.backward()
        return {"output": loss.detach(), "grads": [c.grad, d.grad, t.grad]}  # the teacher's: None

    def right(c, d, y, t):
        return deit_reference(c, d, y, t, kind, alpha, tau, eps)

    want = run(right)
    value = want["output"] if grads else want
    mistakes = [Mistake(hint, run(fn)) for hint, fn in deit_mistakes(kind, alpha, tau, eps)]
    if grads:
        mistakes.append(Mistake("the loss has no gradient: return a tensor computed from the logits, not a float or "
                                "a result under torch.no_grad()", {"output": value, "grads": None}))
    mistakes.append(Mistake("return a tensor (the loss to call .backward() on), not a float",
                            {"output": value.item(), "grads": None} if grads else value.item()))
    return example("deit_loss", want, [*args, kind, alpha, tau, eps], atol=1e-5, rtol=0,
                   what=f"deit_loss(B = {b}, K = {k}, kind={kind!r}, alpha={alpha}, tau={tau}, smoothing={eps})",
                   shape_hint=": the loss is one number, a 0-d tensor averaged over the batch",
                   adapter={"backward": [0, 1, 3]} if grads else None, mistakes=mistakes)


# ---------------------------------------------------------------- chapter 16: masking


def masking_inputs(b: int, n: int, d: int, prefix: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded tokens ``(B, prefix + N, D)`` and uniform noise ``(B, N)`` (no ties)."""
    return seeded(b, prefix + n, d, seed=seed), torch.rand(b, n, generator=torch.Generator().manual_seed(seed + 1))


def masking(tokens: torch.Tensor, noise: torch.Tensor, keep: int, prefix: int,
            descending: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(visible, mask, ids_restore)`` keeping ``keep`` patches (the book's ``restore_order`` puts the mask back)."""
    b, n = noise.shape
    d = tokens.shape[-1]
    ids_shuffle = noise.argsort(dim=1, descending=descending)  # (B, N)
    ids_restore = ids_shuffle.argsort(dim=1)
    kept = torch.gather(tokens[:, prefix:], 1, ids_shuffle[:, :keep, None].expand(-1, -1, d))  # (B, K, D)
    hidden = torch.cat([torch.zeros(b, keep), torch.ones(b, n - keep)], dim=1)  # (B, N), shuffled order
    mask = restore_order(hidden[:, :, None], ids_restore)[..., 0]  # (B, N), image order
    return torch.cat([tokens[:, :prefix], kept], dim=1), mask, ids_restore


def masking_example(b: int, n: int, d: int, prefix: int, seed: int, ratio: float) -> Example:
    """``mask_tokens(tokens, noise, mask_ratio, prefix)``."""
    tokens, noise = masking_inputs(b, n, d, prefix, seed)
    keep = int(n * (1 - ratio))
    visible, mask, ids_restore = want = masking(tokens, noise, keep, prefix)
    patches = tokens[:, prefix:]
    in_image_order = torch.gather(patches, 1, noise.argsort(dim=1)[:, :keep].sort(dim=1).values[:, :, None]
                                  .expand(-1, -1, d))
    hidden_shuffled = torch.cat([torch.zeros(b, keep), torch.ones(b, n - keep)], dim=1)
    rounded = {round(n * (1 - ratio)), math.ceil(n * (1 - ratio))} - {keep}
    mistakes = [Mistake(f"K = int(N · (1 − mask_ratio)) rounds down, as MAE's code does ({n} · {1 - ratio:g} → "
                        f"{keep})", masking(tokens, noise, k, prefix)) for k in sorted(rounded)]
    mistakes += [
        Mistake("mask_ratio is the share of patches HIDDEN; the encoder sees the other 1 − mask_ratio",
                masking(tokens, noise, n - keep, prefix)),
        Mistake(f"the {prefix} prefix token(s) stay visible, in front of the kept patches",
                (visible[:, prefix:], mask, ids_restore)),
        Mistake("the right patches in image order; keep them in the order of increasing noise (the shuffled order "
                "that ids_restore undoes)", (torch.cat([tokens[:, :prefix], in_image_order], 1), mask, ids_restore)),
        Mistake("keep the patches with the SMALLEST noise", masking(tokens, noise, keep, prefix, descending=True)),
        Mistake("that mask is in the shuffled order; put it back in image order (entry i is patch i)",
                (visible, hidden_shuffled, ids_restore)),
        Mistake("1.0 marks a HIDDEN patch, 0.0 a visible one", (visible, 1 - mask, ids_restore)),
        Mistake("that is the shuffle itself (patch ids by increasing noise); ids_restore is its inverse: entry i is "
                "patch i's position in the shuffled order", (visible, mask, noise.argsort(dim=1)))]
    if prefix == 0:
        mistakes = [m for m in mistakes if "prefix token(s)" not in m.hint]
    return example("mask_tokens", want, [tokens, noise, ratio, prefix],
                   what=f"mask_tokens(tokens of shape {tuple(tokens.shape)}, noise, mask_ratio={ratio}, "
                        f"prefix={prefix})",
                   shape_hint=f" (visible (B, prefix + K, D) with K = {keep}; mask and ids_restore (B, N))",
                   mistakes=mistakes)


def masking_specs(r: random.Random, kind: str) -> list[tuple[int, int, int, int, int, float]]:
    """Drawn ``(B, N, D, prefix, seed offset, mask_ratio)`` for one hidden check."""
    if kind == "no prefix":
        return [(3, 4 * r.randint(3, 6), r.randint(3, 6), 0, 0, 0.75), (2, 4 * r.randint(2, 5), r.randint(3, 6), 0,
                                                                         10, 0.25)]
    if kind == "prefix":
        return [(2, 4 * r.randint(3, 5), r.randint(2, 5), 1, 0, 0.75), (3, 2 * r.randint(4, 7), r.randint(2, 5), 2,
                                                                         10, 0.5)]
    specs = []  # N · (1 − mask_ratio) with a fractional part above ½: rounding or ceil gives one more patch
    for prefix, offset in ((1, 0), (0, 10)):
        while True:
            n, ratio = r.randint(9, 20), r.choice((0.75, 0.65, 0.6, 0.7))
            if 0.5 < n * (1 - ratio) % 1 < 0.999:
                break
        specs.append((2, n, r.randint(3, 5), prefix, offset, ratio))
    return specs


def unshuffle_inputs(b: int, k: int, n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded visible tokens ``(B, K, D)``, a random shuffle ``(B, N)`` per image, a mask token ``(1, 1, D)``."""
    g = torch.Generator().manual_seed(seed)
    ids_shuffle = torch.stack([torch.randperm(n, generator=g) for _ in range(b)])
    return seeded(b, k, d, seed=seed + 1), ids_shuffle, seeded(1, 1, d, seed=seed + 2)


def unshuffle_example(visible: torch.Tensor, ids_shuffle: torch.Tensor, mask_token: torch.Tensor) -> Example:
    """``unshuffle(visible, ids_shuffle, mask_token)``: every patch back in image order, mask tokens in the gaps."""
    b, k, d = visible.shape
    n = ids_shuffle.shape[1]
    filler = mask_token.reshape(1, 1, d).expand(b, n - k, d)
    back = ids_shuffle.argsort(dim=1)
    filled = torch.cat([visible, filler], dim=1)  # (B, N, D), shuffled order
    return example("unshuffle", restore_order(filled, back), [visible, ids_shuffle, mask_token],
                   what=f"unshuffle(visible of shape {(b, k, d)}, ids_shuffle of shape {(b, n)}, mask_token)",
                   shape_hint=" (B, N, D): every patch, in image order", mistakes=[
                       Mistake("gathering with ids_shuffle applies the shuffle once more instead of undoing it: patch "
                               "ids_shuffle[b, j] is the one at shuffled position j, so it goes back to place "
                               "ids_shuffle[b, j]", torch.gather(filled, 1, ids_shuffle[:, :, None].expand(-1, -1, d))),
                       Mistake("the K visible tokens come first in the shuffled order, the N − K mask tokens after "
                               "them", restore_order(torch.cat([filler, visible], 1), back)),
                       Mistake("a hidden patch gets a copy of mask_token, not zeros",
                               restore_order(torch.cat([visible, torch.zeros_like(filler)], 1), back))])


# ---------------------------------------------------------------- chapter 17: the contrastive loss


def clip_inputs(b: int, e: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded image and text embeddings ``(B, E)``, not normalised; text i a noisy copy of image i."""
    images = 3 * seeded(b, e, seed=seed)
    return images, 0.7 * images + 2 * seeded(b, e, seed=seed + 1)


def group_loss(image_emb: torch.Tensor, text_emb: torch.Tensor, scale, groups: torch.Tensor,
               normalise: bool = True, spread: bool = True) -> torch.Tensor:
    """CLIP's symmetric loss with every pair of the same group positive (the book's ``contrastive_loss`` when all
    groups differ); ``normalise`` and ``spread`` off give two classic mistakes."""
    if normalise and spread and len(set(groups.tolist())) == len(groups):
        return contrastive_loss(image_emb, text_emb, scale)
    a, t = (F.normalize(image_emb, dim=-1), F.normalize(text_emb, dim=-1)) if normalise else (image_emb, text_emb)
    logits = scale * a @ t.T  # (B, B)
    match = (groups[:, None] == groups[None, :]).float()
    target = match / match.sum(-1, keepdim=True) if spread else match
    rows = -(target * logits.log_softmax(-1)).sum(-1).mean()
    cols = -(target.T * logits.T.log_softmax(-1)).sum(-1).mean()
    return (rows + cols) / 2


def contrastive_example(image_emb: torch.Tensor, text_emb: torch.Tensor, scale, groups: torch.Tensor) -> Example:
    """``group_contrastive_loss(image_emb, text_emb, scale, groups)``."""
    want = group_loss(image_emb, text_emb, scale, groups)
    logits = scale * F.normalize(image_emb, dim=-1) @ F.normalize(text_emb, dim=-1).T  # (B, B)
    match = (groups[:, None] == groups[None, :]).float()
    one_way = -(match / match.sum(-1, keepdim=True) * logits.log_softmax(-1)).sum(-1).mean()
    symmetric = "the loss is symmetric: average the image→text and the text→image directions"
    return example("group_contrastive_loss", want, [image_emb, text_emb, scale, groups], atol=1e-5, rtol=0,
                   what=f"group_contrastive_loss(B = {len(groups)}, groups {groups.tolist()})",
                   shape_hint=": the loss is one number, a 0-d tensor", mistakes=[
                       Mistake("normalise each embedding to unit length first: the logits are scaled cosine "
                               "similarities", group_loss(image_emb, text_emb, scale, groups, normalise=False)),
                       Mistake("that is CLIP's loss with only the diagonal as positives; images with the same group "
                               "also match each other's captions", contrastive_loss(image_emb, text_emb, scale)),
                       Mistake("the target of a row is a distribution: share its weight equally among the matching "
                               "texts", group_loss(image_emb, text_emb, scale, groups, spread=False)),
                       Mistake(symmetric, one_way),
                       Mistake(symmetric, F.cross_entropy(logits, torch.arange(len(groups)))),
                       Mistake("average the two directions, don't add them", 2 * want),
                       Mistake("multiply the cosine similarities by scale before the softmax",
                               group_loss(image_emb, text_emb, 1.0, groups))])


def drawn_groups(r: random.Random, b: int) -> torch.Tensor:
    """``(B,)`` caption groups with at least one caption repeated."""
    while True:
        groups = [r.randint(0, b // 2 + 1) for _ in range(b)]
        if len(set(groups)) < b:
            return torch.tensor(groups)


# ---------------------------------------------------------------- the assignment


def make(draw):
    """Homework 4's questions, public examples and hidden checks (``draw(label)``: a seed from the secret)."""
    a = Assignment("hw4_beyond")

    q = a.question("ch14_window_partition", ("partition_windows",), references=WINDOW_REFS)
    q.public = [partition_example(1, 4, 6, 2, 4, 2, 3)]
    r = random.Random(draw("partition"))
    h, w = (6 * k for k in r.sample((1, 2), 2))  # a non-square grid that 2×3 windows would cut too
    q.check("rectangular windows on a batch of images", [
        partition_example(2, h, w, 3, draw("partition/1"), 3, 2),
        partition_example(3, 2 * r.randint(2, 4), 3 * r.randint(2, 4), 2, draw("partition/2"), 2, 3)])
    m = r.randint(3, 5)
    q.check("square windows, a non-square grid, more channels", [
        partition_example(2, m * 2, m * 3, 5, draw("partition/3"), m, m),
        partition_example(1, 10, 5, 4, draw("partition/4"), 5, 5)])

    q = a.question("ch14_window_reverse", ("merge_windows",), references=WINDOW_REFS,
                   depends=("ch14_window_partition",))  # the question's demo cell cuts with partition_windows
    q.public = [merge_example(1, 4, 6, 2, 5, 2, 3)]
    r = random.Random(draw("merge"))
    m = r.randint(3, 4)
    q.check("square windows, several images", [merge_example(3, 2 * m, 2 * m, 2, draw("merge/1"), m, m),
                                                merge_example(2, 6, 9, 3, draw("merge/2"), 3, 3)])
    q.check("rectangular windows", [
        merge_example(2, 2 * r.randint(2, 4), 5 * r.randint(1, 3), 3, draw("merge/3"), 2, 5),
        merge_example(1, 3 * r.randint(2, 3), 4, 2, draw("merge/4"), 3, 4)])

    q = a.question("ch14_shift_mask", ("shifted_mask",), references=MASK_REFS, depends=("ch14_window_partition",))
    q.public = [mask_example(4, 6, 2, 3, 1, 1)]
    r = random.Random(draw("mask"))
    q.check("Swin's square windows shifted by half, on non-square grids",
            [mask_example(*s) for s in mask_specs(r, "square")])
    q.check("rectangular windows with different shifts", [mask_example(*s) for s in mask_specs(r, "rectangular")],
            points=2)
    q.check("a shift along one axis only, and no shift", [mask_example(*s) for s in mask_specs(r, "one axis")])

    # Counted, not built from 14.3's mask: graded on its own, so 14.3 is neither charged nor paid twice.
    q = a.question("ch14_pairs_kept", ("pairs_kept",), references=MASK_REFS)
    q.public = [Example("pairs_kept", {s: 0.5 for s in PAIR_GRIDS}, form_only=True, what="pairs_kept")]
    q.check("the share of pairs the shifted mask keeps on Swin-T's three grids", [pairs_example()], points=2)

    q = a.question("ch15_deit_loss", ("deit_loss",), references=DEIT_REFS)
    q.public = [deit_example(4, 3, 15, "hard", 0.5, 1.0, 0.1, grads=True),
                deit_example(4, 3, 15, "soft", 0.5, 2.0, 0.1, grads=True)]
    q.check("hard distillation, other weights", [deit_example(6, 5, draw("deit/1"), "hard", 0.5, 1.0, 0.0),
                                                 deit_example(5, 7, draw("deit/2"), "hard", 0.3, 4.0, 0.0)])
    q.check("soft distillation at other temperatures", [deit_example(6, 5, draw("deit/3"), "soft", 0.5, 3.0, 0.0),
                                                        deit_example(4, 8, draw("deit/4"), "soft", 0.7, 0.5, 0.0)])
    q.check("true labels smoothed, the teacher's pseudo-labels not", [
        deit_example(6, 5, draw("deit/5"), "hard", 0.5, 1.0, 0.1),
        deit_example(5, 4, draw("deit/6"), "hard", 0.4, 1.0, 0.2),
        deit_example(5, 6, draw("deit/7"), "soft", 0.4, 2.0, 0.2)])
    q.check("gradients reach both heads and not the teacher", [
        deit_example(4, 5, draw("deit/8"), "soft", 0.5, 2.0, 0.1, grads=True),
        deit_example(4, 5, draw("deit/9"), "hard", 0.6, 1.0, 0.1, grads=True)])

    q = a.question("ch16_masking", ("mask_tokens",), references=MAE_REFS)
    q.public = [masking_example(2, 8, 3, 1, 16, 0.5)]
    r = random.Random(draw("masking"))
    for name, kind in (("no prefix token, 75% hidden", "no prefix"),
                       ("a CLS token, or two prefix tokens, in front", "prefix"),
                       ("N · (1 − mask_ratio) not a whole number", "fraction")):
        seed = draw(f"masking/{kind}")
        q.check(name, [masking_example(b, n, d, prefix, seed + offset, ratio)
                       for b, n, d, prefix, offset, ratio in masking_specs(r, kind)])

    q = a.question("ch16_unshuffle", ("unshuffle",), references=MAE_REFS)
    ids_shuffle = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(18 + i)) for i in range(2)])
    q.public = [unshuffle_example(seeded(2, 2, 3, seed=17), ids_shuffle, seeded(1, 1, 3, seed=19))]
    r = random.Random(draw("unshuffle"))
    n1, n2 = 4 * r.randint(3, 5), 4 * r.randint(2, 4)
    q.check("a quarter of the patches visible", [unshuffle_example(*unshuffle_inputs(3, n1 // 4, n1, 5, draw("u/1"))),
                                                 unshuffle_example(*unshuffle_inputs(2, n2 // 4, n2, 4, draw("u/2")))])
    n3, n4 = r.randint(8, 12), r.randint(9, 14)
    q.check("most patches visible, one image", [unshuffle_example(*unshuffle_inputs(1, n3 - 2, n3, 3, draw("u/3"))),
                                                unshuffle_example(*unshuffle_inputs(2, n4 - 1, n4, 2, draw("u/4")))])

    q = a.question("ch17_contrastive", ("group_contrastive_loss",), references=CLIP_REFS)
    q.public = [contrastive_example(*clip_inputs(b, 6, 20 + b), 10.0, groups)
                for b, groups in ((4, torch.arange(4)), (5, torch.tensor([0, 1, 2, 1, 4])))]
    r = random.Random(draw("contrastive"))
    q.check("every pair different (CLIP's loss)", [
        contrastive_example(*clip_inputs(6, 8, draw("clip/1")), 14.3, torch.arange(6)),
        contrastive_example(*clip_inputs(3, 5, draw("clip/2")), torch.tensor(1.0),
                            torch.tensor(r.sample(range(9), 3)))])
    b1, b2 = r.randint(5, 8), r.randint(5, 8)
    q.check("several images share a caption", [
        contrastive_example(*clip_inputs(b1, 8, draw("clip/3")), 14.3, drawn_groups(r, b1)),
        contrastive_example(*clip_inputs(b2, 4, draw("clip/4")), torch.tensor(30.0), drawn_groups(r, b2)),
        contrastive_example(*clip_inputs(4, 6, draw("clip/5")), 5.0, torch.full((4,), r.randint(0, 9)))], points=2)
    return a
