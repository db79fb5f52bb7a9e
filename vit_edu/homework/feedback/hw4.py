"""Homework 4 (chapters 14–17): each ``expect_*`` judges an answer on given inputs, each ``check_*`` is public.

``expect_*(got, *inputs)`` computes what the book's reference in :mod:`vit_edu.variants` gives on the inputs (or,
where the exercise asks for more than the reference does, what the exercise defines) and raises
``AssertionError`` with a hint for the classic mistakes; the public ``check_*(answer)`` runs it on the public
example only. The hidden checks (other inputs, in the instructor's build) call the same ``expect_*``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from vit_edu.homework.feedback.common import call, close, expect_shape, fmt, require, seeded
from vit_edu.variants.clip import contrastive_loss
from vit_edu.variants.distill import distillation_loss, soft_distillation_term
from vit_edu.variants.mae import restore_order
from vit_edu.variants.windows import shifted_window_mask, window_partition, window_reverse

__all__ = [
    "window_order", "index_tokens", "expect_partition", "check_partition",
    "expect_merge_windows", "check_merge_windows",
    "wrap_mask", "expect_shifted_mask", "check_shifted_mask",
    "PAIR_GRIDS", "PAIR_WINDOW", "PAIR_SHIFT", "kept_shares", "expect_pairs_kept", "check_pairs_kept",
    "deit_inputs", "deit_reference", "expect_deit_loss", "expect_deit_grads", "check_deit_loss",
    "masking_inputs", "expect_masking", "check_masking", "expect_unshuffle", "check_unshuffle",
    "clip_inputs", "expect_group_loss", "check_group_loss",
]

# ---------------------------------------------------------------- chapter 14: windows


def _pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


def window_order(height: int, width: int, window: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column of every token of every window, windows row by row and tokens row by row: ``(N,)`` each."""
    mh, mw = _pair(window)
    rows = torch.arange(height).reshape(height // mh, 1, mh, 1)  # (nh, 1, mh, 1)
    cols = torch.arange(width).reshape(1, width // mw, 1, mw)  # (1, nw, 1, mw)
    shape = (height // mh, width // mw, mh, mw)
    return rows.expand(shape).flatten(), cols.expand(shape).flatten()


def _partition(x: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    mh, mw = _pair(window)
    b, h, w, c = x.shape
    if mh == mw:
        return window_partition(x, mh)
    rows, cols = window_order(h, w, (mh, mw))
    return x[:, rows, cols].reshape(-1, mh * mw, c)


def _reverse(windows: torch.Tensor, window: tuple[int, int], height: int, width: int) -> torch.Tensor:
    mh, mw = _pair(window)
    if mh == mw:
        return window_reverse(windows, mh, height, width)
    c = windows.shape[-1]
    b = windows.shape[0] // ((height // mh) * (width // mw))
    rows, cols = window_order(height, width, (mh, mw))
    out = windows.new_zeros(b, height, width, c)
    out[:, rows, cols] = windows.reshape(b, -1, c)
    return out


def expect_partition(got: Any, tokens: torch.Tensor, grid: tuple[int, int], window: tuple[int, int]) -> None:
    """``partition_windows(tokens (B, H·W, C), (H, W), (mh, mw))`` -> ``(B·nW, mh·mw, C)``, windows row by row."""
    h, w = grid
    mh, mw = _pair(window)
    b, _, c = tokens.shape
    nw = (h // mh) * (w // mw)
    what = f"partition_windows(tokens of shape {tuple(tokens.shape)}, grid {(h, w)}, window {(mh, mw)})"
    expect_shape(got, (b * nw, mh * mw, c), what, " (B·nW, mh·mw, C): one sequence of mh·mw tokens per window")
    x = tokens.reshape(b, h, w, c)
    want = _partition(x, (mh, mw))
    if close(got, want):
        return
    hint = ""
    if close(got, tokens.reshape(b * nw, mh * mw, c)):
        hint = (": a plain reshape cuts the sequence into runs of consecutive tokens of a row, not into windows: "
                "split the rows and the columns, bring the two window indices together, then flatten")
    elif h != w and close(got, _partition(tokens.reshape(b, w, h, c).transpose(1, 2), (mh, mw))):
        hint = ": the tokens run row by row: token i sits in row i // W, column i % W (grid = (H, W))"
    elif h % mw == 0 and w % mh == 0 and close(got, _partition(x, (mw, mh)).reshape(got.shape)):
        hint = ": the window is (rows, columns) = (mh, mw): mh rows high and mw columns wide"
    elif close(got.sort(dim=1).values, want.sort(dim=1).values):
        hint = ": each window holds the right tokens, in the wrong order: inside a window, tokens go row by row"
    elif close(got.sort(dim=0).values, want.sort(dim=0).values):
        hint = ": the right windows in the wrong order: image by image, and in each image windows row by row"
    raise AssertionError(f"{what}: window 1 should hold {fmt(want[1, :, 0])} (channel 0), got {fmt(got[1, :, 0])}"
                         f"{hint}")


def index_tokens(b: int, h: int, w: int, c: int, seed: int) -> torch.Tensor:
    """``(B, H·W, C)`` whose channel 0 is the token's index, the others seeded noise: a misplaced token shows."""
    x = seeded(b, h * w, c, seed=seed)
    x[..., 0] = torch.arange(b * h * w, dtype=torch.float32).reshape(b, h * w)
    return x


def check_partition(fn: Any) -> None:
    """Public: one image of 4×6 tokens, windows 2 rows high and 3 columns wide."""
    tokens = index_tokens(1, 4, 6, 2, seed=4)
    expect_partition(call(fn, "partition_windows", tokens.clone(), (4, 6), (2, 3)), tokens, (4, 6), (2, 3))


def expect_merge_windows(got: Any, windows: torch.Tensor, grid: tuple[int, int], window: tuple[int, int]) -> None:
    """``merge_windows(windows, (H, W), (mh, mw))``: the inverse of ``partition_windows``, ``(B, H·W, C)``."""
    h, w = grid
    mh, mw = _pair(window)
    c = windows.shape[-1]
    b = windows.shape[0] // ((h // mh) * (w // mw))
    what = f"merge_windows(windows of shape {tuple(windows.shape)}, grid {(h, w)}, window {(mh, mw)})"
    expect_shape(got, (b, h * w, c), what, " (B, H·W, C): B = the number of windows / windows per image")
    want = _reverse(windows, (mh, mw), h, w).reshape(b, h * w, c)
    if close(got, want):
        return
    hint = ""
    if close(got, windows.reshape(b, h * w, c)):
        hint = (": a plain reshape does not undo the window cut: split the window indices and the rows and columns "
                "inside a window, put each row index next to its window-row index, then merge")
    elif close(got.sort(dim=1).values, want.sort(dim=1).values):
        hint = (": every token is there, some in the wrong place: merge_windows(partition_windows(t, grid, window), "
                "grid, window) gives t back")
    raise AssertionError(f"{what}: the first tokens of image 0 should be {fmt(want[0, :, 0])} (channel 0), got "
                         f"{fmt(got[0, :, 0])}{hint}")


def check_merge_windows(fn: Any) -> None:
    """Public: the windows of one 4×6 image cut 2×3 go back into one sequence."""
    windows = _partition(index_tokens(1, 4, 6, 2, seed=5).reshape(1, 4, 6, 2), (2, 3))
    expect_merge_windows(call(fn, "merge_windows", windows.clone(), (4, 6), (2, 3)), windows, (4, 6), (2, 3))


def wrap_mask(height: int, width: int, window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """``(nW, mh·mw, mh·mw)``: in the windows of the grid rolled up by ``sh`` and left by ``sw``, True where query
    and key are on the same side of every wrap: both came around an edge with the roll, or neither did."""
    mh, mw = _pair(window)
    sh, sw = _pair(shift)
    if mh == mw and sh == sw:
        return shifted_window_mask(height, width, mh, sh)
    wrapped = 2 * (torch.arange(height) >= height - sh)[:, None] + (torch.arange(width) >= width - sw)[None, :]
    return _same_label(wrapped, (mh, mw))


def _same_label(labels: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    """``(H, W)`` region labels -> ``(nW, mh·mw, mh·mw)``: True where query and key of a window share a label."""
    per_window = _partition(labels[None, :, :, None].float(), window)[..., 0]  # (nW, mh·mw)
    return per_window[:, :, None] == per_window[:, None, :]


def expect_shifted_mask(got: Any, grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> None:
    """``shifted_mask((H, W), (mh, mw), (sh, sw))``: which pairs of a rolled window may attend, ``(nW, M, M)``."""
    height, width = grid
    mh, mw = _pair(window)
    sh, sw = _pair(shift)
    n = mh * mw
    nw = (height // mh) * (width // mw)
    what = f"shifted_mask(grid {(height, width)}, window {(mh, mw)}, shift {(sh, sw)})"
    expect_shape(got, (nw, n, n), what, " (nW, mh·mw, mh·mw): one query × key table per window")
    if got.dtype != torch.bool:
        raise AssertionError(f"{what} should hold booleans (True: may attend), got {got.dtype}")
    want = wrap_mask(height, width, (mh, mw), (sh, sw))
    if torch.equal(got, want):
        return
    hint = ""
    if bool(got.all()):
        hint = (": every pair is allowed, but the roll put tokens from opposite edges of the grid into the same "
                "window: they were not neighbours and must not attend to each other")
    elif (sh, sw) != (0, 0) and torch.equal(got, wrap_mask(height, width, (mh, mw), (0, 0))):
        hint = ": that is the mask of regular windows (shift 0)"
    elif sh != sw and torch.equal(got, wrap_mask(height, width, (mh, mw), (sw, sh))):
        hint = ": the first shift is along the rows (the grid moves up by sh), the second along the columns"
    elif torch.equal(got, _flipped_wrap(height, width, (mh, mw), (sh, sw))):
        hint = (": the roll moves the grid up and left, so the tokens that wrapped around are in the last rows and "
                "columns of the rolled grid, not the first")
    w = next(i for i in range(nw) if not torch.equal(got[i], want[i]))
    raise AssertionError(f"{what}: window {w} should allow {int(want[w].sum())} of its {n * n} pairs, got "
                         f"{int(got[w].sum())}; its first row should be {want[w, 0].int().tolist()}, got "
                         f"{got[w, 0].int().tolist()}{hint}")


def _flipped_wrap(height: int, width: int, window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """The classic mistake: taking the first ``sh`` rows and ``sw`` columns as the wrapped ones."""
    sh, sw = shift
    wrapped = 2 * (torch.arange(height) < sh)[:, None] + (torch.arange(width) < sw)[None, :]
    return _same_label(wrapped, window)


def check_shifted_mask(fn: Any) -> None:
    """Public: a 4×6 grid, windows 2×3, shifted by 1 row and 1 column."""
    expect_shifted_mask(call(fn, "shifted_mask", (4, 6), (2, 3), (1, 1)), (4, 6), (2, 3), (1, 1))


PAIR_GRIDS = (56, 28, 14)  # Swin-T's first three stages at 224×224 (stage 4, 7×7, has one window and no shift)
PAIR_WINDOW, PAIR_SHIFT = 7, 3


def kept_shares() -> dict[int, float]:
    """Per grid side, the share of a window layer's pairs (nW·M⁴) that the shifted layer's mask keeps."""
    m = PAIR_WINDOW
    out = {}
    for side in PAIR_GRIDS:
        mask = wrap_mask(side, side, (m, m), (PAIR_SHIFT, PAIR_SHIFT))
        out[side] = mask.sum().item() / mask.numel()
    return out


def _pairs_form(answer: Any) -> dict[int, float]:
    require(answer, "pairs_kept")
    if not isinstance(answer, dict) or set(answer) != set(PAIR_GRIDS):
        raise AssertionError(f"pairs_kept should be a dict with the keys {list(PAIR_GRIDS)} (the grid sides), got "
                             f"{answer!r}")
    for side, v in answer.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v <= 1:
            raise AssertionError(f"pairs_kept[{side}] should be a share between 0 and 1, got {v!r}")
    return {side: float(v) for side, v in answer.items()}


def expect_pairs_kept(answer: Any, tolerance: float = 1e-4) -> None:
    """Each share within ``tolerance`` of the reference mask's."""
    got = _pairs_form(answer)
    for side, want in kept_shares().items():
        if abs(got[side] - want) > tolerance:
            raise AssertionError(f"pairs_kept[{side}] is {got[side]:.4g}: not the share the shifted mask keeps")


def check_pairs_kept(answer: Any, fn: Any = None) -> None:
    """Public: the form of the answer, and (given your ``shifted_mask``) that it is what your mask gives."""
    got = _pairs_form(answer)
    if len(set(got.values())) == 1:
        raise AssertionError("pairs_kept gives all three grids the same share: did every grid use its own side?")
    if fn is not None:
        m, s = PAIR_WINDOW, PAIR_SHIFT
        for side in PAIR_GRIDS:
            mask = call(fn, "shifted_mask", (side, side), (m, m), (s, s))
            mine = torch.as_tensor(mask).double().mean().item()
            if abs(mine - got[side]) > 1e-4:
                raise AssertionError(f"pairs_kept[{side}] is {got[side]:.4g}, but your shifted_mask gives "
                                     f"{mine:.4g}: report what your mask gives")


# ---------------------------------------------------------------- chapter 15: distillation


def deit_inputs(b: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``cls_logits, dist_logits, teacher_logits (B, K)`` and ``labels (B,)``; the teacher disagrees with
    the labels on some images, as a real teacher does."""
    cls_logits, dist_logits = 2 * seeded(b, k, seed=seed), 2 * seeded(b, k, seed=seed + 1)
    teacher = 3 * seeded(b, k, seed=seed + 2)
    labels = torch.randint(0, k, (b,), generator=torch.Generator().manual_seed(seed + 3))
    return cls_logits, dist_logits, labels, teacher


def _smoothed_ce(logits: torch.Tensor, labels: torch.Tensor, eps: float) -> torch.Tensor:
    """Cross-entropy against 1 − ε on the label and ε/(K − 1) on each other class (DeiT's smoothing)."""
    k = logits.shape[-1]
    target = torch.full_like(logits, eps / (k - 1)).scatter(1, labels[:, None], 1 - eps)
    return -(target * logits.log_softmax(-1)).sum(-1).mean()


def deit_reference(cls_logits: torch.Tensor, dist_logits: torch.Tensor, labels: torch.Tensor,
                   teacher_logits: torch.Tensor, kind: str, alpha: float, tau: float, smoothing: float) -> torch.Tensor:
    """The exercise's loss: :func:`vit_edu.variants.distill.distillation_loss` with DeiT's smoothing of hard targets."""
    if smoothing == 0:
        return distillation_loss(cls_logits, dist_logits, labels, teacher_logits, kind=kind, alpha=alpha, tau=tau)
    teacher_logits = teacher_logits.detach()
    label_term = _smoothed_ce(cls_logits, labels, smoothing)
    if kind == "hard":
        teacher_term = _smoothed_ce(dist_logits, teacher_logits.argmax(-1), smoothing)
    else:
        teacher_term = soft_distillation_term(dist_logits, teacher_logits, tau)
    return (1 - alpha) * label_term + alpha * teacher_term


def _kl(student: torch.Tensor, teacher: torch.Tensor, tau: float, reduction: str = "batchmean") -> torch.Tensor:
    return F.kl_div((student / tau).log_softmax(-1), (teacher / tau).log_softmax(-1), reduction=reduction,
                    log_target=True)


def expect_deit_loss(got: Any, cls_logits: torch.Tensor, dist_logits: torch.Tensor, labels: torch.Tensor,
                     teacher_logits: torch.Tensor, kind: str, alpha: float, tau: float, smoothing: float) -> None:
    """``deit_loss(...)``: a scalar equal to the exercise's loss, with hints for the classic mistakes."""
    what = f"deit_loss(kind={kind!r}, alpha={alpha}, tau={tau}, smoothing={smoothing})"
    if isinstance(got, torch.Tensor) and got.numel() != 1:
        raise AssertionError(f"{what} should be one number (a 0-d tensor), got shape {tuple(got.shape)}: average "
                             f"over the batch")
    if not isinstance(got, torch.Tensor):
        raise AssertionError(f"{what} should return a tensor (the loss to call .backward() on), got "
                             f"{type(got).__name__}")
    got = got.reshape(())
    args = (cls_logits, dist_logits, labels, teacher_logits)
    with torch.no_grad():
        want = deit_reference(*args, kind, alpha, tau, smoothing)
        if close(got, want, atol=1e-5):
            return
        c, d, y, t = args
        e = smoothing
        label_term = _smoothed_ce(c, y, e)
        hint = ""
        if e > 0 and close(got, deit_reference(*args, kind, alpha, tau, 0.0), atol=1e-5):
            hint = ": the smoothing is not applied"
        elif e > 0 and close(got, _torch_smoothed(*args, kind, alpha, tau, e), atol=1e-5):
            hint = (": torch's label_smoothing spreads ε over all K classes (the true class gets 1 − ε + ε/K); "
                    "DeiT's target gives the true class 1 − ε and shares ε among the other K − 1")
        elif kind == "hard" and e > 0 and close(got, (1 - alpha) * label_term + alpha * _smoothed_ce(
                d, t.argmax(-1), 0.0), atol=1e-5):
            hint = ": smooth the teacher's hard label too, the same way as the true label"
        elif close(got, deit_reference(*args, kind, 1 - alpha, tau, e), atol=1e-5):
            hint = ": α weighs the teacher's term, 1 − α the true labels' term"
        elif kind == "hard" and close(got, (1 - alpha) * label_term + alpha * _kl(d, t, 1.0), atol=1e-5):
            hint = ": hard distillation uses the teacher's top class (argmax) as the target, not its probabilities"
        elif kind == "soft":
            soft = {"no τ²": _kl(d, t, tau),
                    "batchmean": tau**2 * _kl(d, t, tau, "mean"),
                    "direction": tau**2 * _kl(t, d, tau),
                    "student": tau**2 * _kl(c, t, tau)}
            hints = {"no τ²": ": multiply the KL term by τ²: without it its gradient shrinks like 1/τ²",
                     "batchmean": ": sum the KL over the classes and average over the images (F.kl_div's "
                                  "reduction='batchmean'), not a mean over all B·K entries",
                     "direction": ": KL(teacher ‖ student): the teacher's distribution comes first (it weighs the "
                                  "log-ratio), the student's second",
                     "student": ": the teacher's term trains the distillation head (dist_logits), not the CLS head"}
            for name, term in soft.items():
                if close(got, (1 - alpha) * label_term + alpha * term, atol=1e-5):
                    hint = hints[name]
                    break
    raise AssertionError(f"{what} should be {want.item():.5f}, got {got.item():.5f}{hint}")


def _torch_smoothed(c, d, y, t, kind, alpha, tau, e):
    label_term = F.cross_entropy(c, y, label_smoothing=e)
    if kind == "hard":
        return (1 - alpha) * label_term + alpha * F.cross_entropy(d, t.argmax(-1), label_smoothing=e)
    return (1 - alpha) * label_term + alpha * soft_distillation_term(d, t, tau)


def expect_deit_grads(grads: Any, what: str) -> None:
    """After ``loss.backward()``: gradients reach both heads' logits and none reaches the teacher's."""
    if grads is None:
        raise AssertionError(f"{what}: the loss has no gradient (return a tensor computed from the logits, not "
                             f"a float or a result under torch.no_grad())")
    g_cls, g_dist, g_teacher = grads
    if g_cls is None or g_dist is None or not g_cls.abs().sum() > 0 or not g_dist.abs().sum() > 0:
        raise AssertionError(f"{what}: the gradient should reach both heads' logits (cls_logits and dist_logits)")
    if g_teacher is not None and g_teacher.abs().sum() > 0:
        raise AssertionError(f"{what}: a gradient reaches teacher_logits: the teacher is a fixed target, detach it")


def _deit_run(fn: Any, args: tuple, kind: str, alpha: float, tau: float, smoothing: float) -> tuple[Any, Any]:
    """Run ``deit_loss`` on fresh copies that require gradients; the loss and the three gradients."""
    c, d, y, t = (a.clone() for a in args)
    for a in (c, d, t):
        a.requires_grad_(True)
    out = call(fn, "deit_loss", c, d, y, t, kind, alpha, tau, smoothing)
    grads = None
    if isinstance(out, torch.Tensor) and out.requires_grad and out.numel() == 1:
        out.reshape(()).backward()
        grads = (c.grad, d.grad, t.grad)
    return (out.detach() if isinstance(out, torch.Tensor) else out), grads


def check_deit_loss(fn: Any) -> None:
    """Public: a batch of 4 over 3 classes, hard without smoothing, then soft at τ = 2 with smoothing 0.1."""
    args = deit_inputs(4, 3, seed=15)
    for kind, alpha, tau, smoothing in (("hard", 0.5, 1.0, 0.0), ("soft", 0.5, 2.0, 0.1)):
        out, grads = _deit_run(fn, args, kind, alpha, tau, smoothing)
        expect_deit_loss(out, *args, kind, alpha, tau, smoothing)
        expect_deit_grads(grads, f"deit_loss(kind={kind!r}, ...)")


# ---------------------------------------------------------------- chapter 16: masking


def masking_inputs(b: int, n: int, d: int, prefix: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded tokens ``(B, prefix + N, D)`` and uniform noise ``(B, N)`` (no ties)."""
    return seeded(b, prefix + n, d, seed=seed), torch.rand(b, n, generator=torch.Generator().manual_seed(seed + 1))


def _masking_reference(tokens: torch.Tensor, noise: torch.Tensor, mask_ratio: float,
                       prefix: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, n = noise.shape
    d = tokens.shape[-1]
    keep = int(n * (1 - mask_ratio))
    ids_shuffle = noise.argsort(dim=1)
    ids_restore = ids_shuffle.argsort(dim=1)
    patches = tokens[:, prefix:]
    kept = torch.gather(patches, 1, ids_shuffle[:, :keep, None].expand(-1, -1, d))
    hidden = torch.cat([torch.zeros(b, keep), torch.ones(b, n - keep)], dim=1)  # shuffled order
    mask = restore_order(hidden[:, :, None], ids_restore)[..., 0]  # (B, N), image order
    return torch.cat([tokens[:, :prefix], kept], dim=1), mask, ids_restore


def expect_masking(got: Any, tokens: torch.Tensor, noise: torch.Tensor, mask_ratio: float, prefix: int) -> None:
    """``mask_tokens(tokens, noise, mask_ratio, prefix)`` = ``(visible, mask, ids_restore)`` as the exercise defines."""
    b, n = noise.shape
    d = tokens.shape[-1]
    what = f"mask_tokens(tokens of shape {tuple(tokens.shape)}, noise, mask_ratio={mask_ratio}, prefix={prefix})"
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise AssertionError(f"{what} should return three things: (visible, mask, ids_restore)")
    visible, mask, ids_restore = got
    want_v, want_m, want_r = _masking_reference(tokens, noise, mask_ratio, prefix)
    keep = want_v.shape[1] - prefix
    if isinstance(visible, torch.Tensor) and visible.ndim == 3 and visible.shape[1] != prefix + keep:
        k = visible.shape[1] - prefix
        hint = ""
        if k == round(n * (1 - mask_ratio)) or k == math.ceil(n * (1 - mask_ratio)):
            hint = (f": K = int(N · (1 − mask_ratio)) rounds down, as MAE's code does "
                    f"({n} · {1 - mask_ratio:g} → {keep})")
        elif k == n - keep:
            hint = ": mask_ratio is the share of patches HIDDEN; the encoder sees the other 1 − mask_ratio"
        elif visible.shape[1] == keep:
            hint = f": the {prefix} prefix token(s) stay visible, in front of the kept patches"
        raise AssertionError(f"{what}: visible should have {prefix + keep} tokens ({prefix} prefix + {keep} patches), "
                             f"got {visible.shape[1]}{hint}")
    expect_shape(visible, (b, prefix + keep, d), f"{what}: visible", " (B, prefix + K, D)")
    expect_shape(mask, (b, n), f"{what}: mask", " (B, N): one entry per patch, prefix tokens are never masked")
    expect_shape(ids_restore, (b, n), f"{what}: ids_restore", " (B, N)")
    if prefix and not close(visible[:, :prefix], tokens[:, :prefix]):
        raise AssertionError(f"{what}: the first {prefix} visible token(s) should be the prefix token(s), unchanged")
    if not close(visible, want_v):
        ids_keep = noise.argsort(dim=1)[:, :keep]
        patches = tokens[:, prefix:]
        hint = ""
        in_image_order = torch.gather(patches, 1, ids_keep.sort(dim=1).values[:, :, None].expand(-1, -1, d))
        largest = torch.gather(patches, 1, noise.argsort(dim=1, descending=True)[:, :keep, None].expand(-1, -1, d))
        if close(visible[:, prefix:], in_image_order):
            hint = (": the right patches in image order; keep them in the order of increasing noise (the shuffled "
                    "order that ids_restore undoes)")
        elif close(visible[:, prefix:], largest):
            hint = ": keep the patches with the SMALLEST noise"
        raise AssertionError(f"{what}: visible token {prefix} of image 0 should be {fmt(want_v[0, prefix])}, got "
                             f"{fmt(visible[0, prefix])}{hint}")
    if not close(mask, want_m):
        hint = ""
        hidden_shuffled = torch.cat([torch.zeros(b, keep), torch.ones(b, n - keep)], dim=1)
        if close(mask, hidden_shuffled):
            hint = ": that mask is in the shuffled order; put it back in image order (entry i is patch i)"
        elif close(mask, 1 - want_m):
            hint = ": 1.0 marks a HIDDEN patch, 0.0 a visible one"
        raise AssertionError(f"{what}: mask of image 0 should be {fmt(want_m[0])}, got {fmt(mask[0])}{hint}")
    if not close(ids_restore, want_r):
        hint = ""
        if close(ids_restore, noise.argsort(dim=1)):
            hint = (": that is the shuffle itself (patch ids by increasing noise); ids_restore is its inverse: "
                    "entry i is patch i's position in the shuffled order")
        raise AssertionError(f"{what}: ids_restore of image 0 should be {fmt(want_r[0])}, got "
                             f"{fmt(ids_restore[0])}{hint}")


def check_masking(fn: Any) -> None:
    """Public: 2 images of 8 patches behind one CLS token, half of them hidden."""
    tokens, noise = masking_inputs(2, 8, 3, 1, seed=16)
    got = call(fn, "mask_tokens", tokens.clone(), noise.clone(), 0.5, 1)
    expect_masking(got, tokens, noise, 0.5, 1)


def expect_unshuffle(got: Any, visible: torch.Tensor, ids_shuffle: torch.Tensor, mask_token: torch.Tensor) -> None:
    """``unshuffle(visible, ids_shuffle, mask_token)``: every patch back in image order, mask tokens in the gaps."""
    b, k, d = visible.shape
    n = ids_shuffle.shape[1]
    what = f"unshuffle(visible of shape {(b, k, d)}, ids_shuffle of shape {(b, n)}, mask_token)"
    expect_shape(got, (b, n, d), what, " (B, N, D): every patch, in image order")
    filled = torch.cat([visible, mask_token.reshape(1, 1, d).expand(b, n - k, d)], dim=1)  # shuffled order
    want = restore_order(filled, ids_shuffle.argsort(dim=1))
    if close(got, want):
        return
    hint = ""
    if close(got, torch.gather(filled, 1, ids_shuffle[:, :, None].expand(-1, -1, d))):
        hint = (": gathering with ids_shuffle applies the shuffle once more instead of undoing it: patch "
                "ids_shuffle[b, j] is the one at shuffled position j, so it goes back to place ids_shuffle[b, j]")
    elif close(got, restore_order(torch.cat([mask_token.reshape(1, 1, d).expand(b, n - k, d), visible], 1),
                                  ids_shuffle.argsort(dim=1))):
        hint = ": the K visible tokens come first in the shuffled order, the N − K mask tokens after them"
    elif close(got, restore_order(torch.cat([visible, visible.new_zeros(b, n - k, d)], 1),
                                  ids_shuffle.argsort(dim=1))):
        hint = ": a hidden patch gets a copy of mask_token, not zeros"
    raise AssertionError(f"{what}: patch 0 of image 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def check_unshuffle(fn: Any) -> None:
    """Public: 2 images of 6 patches, 2 of them visible."""
    visible = seeded(2, 2, 3, seed=17)
    ids_shuffle = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(18 + i)) for i in range(2)])
    mask_token = seeded(1, 1, 3, seed=19)
    got = call(fn, "unshuffle", visible.clone(), ids_shuffle.clone(), mask_token.clone())
    expect_unshuffle(got, visible, ids_shuffle, mask_token)


# ---------------------------------------------------------------- chapter 17: the contrastive loss


def clip_inputs(b: int, e: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded image and text embeddings ``(B, E)``, not normalised; text i a noisy copy of image i."""
    images = 3 * seeded(b, e, seed=seed)
    return images, 0.7 * images + 2 * seeded(b, e, seed=seed + 1)


def _group_reference(image_emb: torch.Tensor, text_emb: torch.Tensor, scale: Any, groups: torch.Tensor,
                     normalise: bool = True, spread: bool = True) -> torch.Tensor:
    if normalise and len(set(groups.tolist())) == len(groups):
        return contrastive_loss(image_emb, text_emb, scale)
    a, t = (F.normalize(image_emb, dim=-1), F.normalize(text_emb, dim=-1)) if normalise else (image_emb, text_emb)
    logits = scale * a @ t.T  # (B, B)
    match = (groups[:, None] == groups[None, :]).float()
    target = match / match.sum(-1, keepdim=True) if spread else match
    rows = -(target * logits.log_softmax(-1)).sum(-1).mean()
    cols = -(target.T * logits.T.log_softmax(-1)).sum(-1).mean()
    return (rows + cols) / 2


def expect_group_loss(got: Any, image_emb: torch.Tensor, text_emb: torch.Tensor, scale: Any,
                      groups: torch.Tensor) -> None:
    """``group_contrastive_loss(image_emb, text_emb, scale, groups)``: CLIP's loss with every matching pair positive."""
    what = f"group_contrastive_loss(B = {len(groups)}, groups {groups.tolist()})"
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        raise AssertionError(f"{what} should return one number as a tensor, got "
                             f"{type(got).__name__ if not isinstance(got, torch.Tensor) else tuple(got.shape)}")
    got = got.reshape(())
    want = _group_reference(image_emb, text_emb, scale, groups)
    if close(got, want, atol=1e-5):
        return
    hint = ""
    b = len(groups)
    diagonal = torch.arange(b)
    logits = scale * F.normalize(image_emb, dim=-1) @ F.normalize(text_emb, dim=-1).T
    if close(got, _group_reference(image_emb, text_emb, scale, groups, normalise=False), atol=1e-5):
        hint = ": normalise each embedding to unit length first: the logits are scaled cosine similarities"
    elif close(got, contrastive_loss(image_emb, text_emb, scale), atol=1e-5):
        hint = (": that is CLIP's loss with only the diagonal as positives; images with the same group also match "
                "each other's captions")
    elif close(got, _group_reference(image_emb, text_emb, scale, groups, spread=False), atol=1e-5):
        hint = ": the target of a row is a distribution: share its weight equally among the matching texts"
    elif close(got, F.cross_entropy(logits, diagonal), atol=1e-5) or close(
            got, _one_way(logits, groups), atol=1e-5):
        hint = ": the loss is symmetric: average the image→text and the text→image directions"
    elif close(got, 2 * want, atol=1e-5):
        hint = ": average the two directions, don't add them"
    elif close(got, _group_reference(image_emb, text_emb, 1.0, groups), atol=1e-5):
        hint = ": multiply the cosine similarities by scale before the softmax"
    raise AssertionError(f"{what} should be {want.item():.5f}, got {got.item():.5f}{hint}")


def _one_way(logits: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    match = (groups[:, None] == groups[None, :]).float()
    return -(match / match.sum(-1, keepdim=True) * logits.log_softmax(-1)).sum(-1).mean()


def check_group_loss(fn: Any) -> None:
    """Public: 4 pairs, all different; then 5 pairs where images 1 and 3 share a caption."""
    for b, groups in ((4, torch.arange(4)), (5, torch.tensor([0, 1, 2, 1, 4]))):
        image_emb, text_emb = clip_inputs(b, 6, seed=20 + b)
        got = call(fn, "group_contrastive_loss", image_emb.clone(), text_emb.clone(), 10.0, groups.clone())
        expect_group_loss(got.detach() if isinstance(got, torch.Tensor) else got, image_emb, text_emb, 10.0, groups)
