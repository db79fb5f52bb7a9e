"""Homework 4's checks: the public checks pass the master's answers and name the classic mistakes, the hidden judges
pass the master's solutions and fail the mistakes with the intended partial marks, and calling the book's
reference in ``vit_edu.variants`` scores nothing.

Fast: the answers (the master's solution cells, and mistakes written here) run in this process, as they would in
the student's kernel; ``tests/test_homework.py`` grades the master notebook end to end.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F

import vit_edu
from vit_edu import variants
from vit_edu.homework.feedback import hw4
from vit_edu.homework.grade import load_module

import homework_helpers
from homework_helpers import master_solutions

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw4_beyond"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
HIDDEN = ROOT / "book" / "homework" / "hidden"
CASES = load_module(f"hidden_{NAME}", (HIDDEN / f"{NAME}.py").read_text()).cases
GLOBALS = {"torch": torch, "F": F, "vit_edu": vit_edu, "variants": variants}


SOLUTIONS = master_solutions(MASTER)


def define(*sources: str, ns: dict | None = None) -> dict:
    """The names the cells define, in order (their trailing demo expressions run too, harmlessly)."""
    ns = dict(GLOBALS) if ns is None else ns
    for source in sources:
        exec(compile(source, "<answer>", "exec"), ns)
    return ns


MASTER_NS = define(*SOLUTIONS.values())


def with_answer(source: str) -> dict:
    """The master's answers with one replaced by ``source``."""
    return define(source, ns={**MASTER_NS})


def score(question: str, ns: dict) -> float:
    return homework_helpers.score(CASES, question, ns)


def possible(question: str) -> float:
    return sum(CASES.points(question))


def public(question: str, ns: dict) -> None:
    check, answer = CASES.public[question]
    getattr(hw4, check)(ns.get(answer))


# ---------------------------------------------------------------- the layout


def test_points_and_questions():
    assert set(CASES.answers) == set(SOLUTIONS) and len(SOLUTIONS) == 8
    assert sum(c.points for c in CASES.cases) == 22
    assert possible("ch14_pairs_kept") == 2  # the one number; the other 20 points are for code
    assert possible("ch14_shift_mask") == possible("ch15_deit_loss") == 4


def test_every_question_names_its_reference_and_every_reference_resolves():
    from vit_edu.homework.cases import reference_codes

    for question, refs in CASES.references.items():
        if question != "ch14_pairs_kept":
            assert refs, question
        assert len(reference_codes(refs)) >= len(refs)


@pytest.mark.parametrize("question", sorted(SOLUTIONS))
def test_master_solutions_pass_public_and_hidden_checks(question):
    public(question, MASTER_NS)
    assert score(question, MASTER_NS) == possible(question)


def test_the_notebook_s_own_public_check_of_the_number_uses_the_student_s_mask():
    hw4.check_pairs_kept(MASTER_NS["pairs_kept"], MASTER_NS["shifted_mask"])
    off = {**MASTER_NS["pairs_kept"], 28: MASTER_NS["pairs_kept"][28] + 0.01}
    with pytest.raises(AssertionError, match="your shifted_mask gives"):
        hw4.check_pairs_kept(off, MASTER_NS["shifted_mask"])


def test_the_references_agree_with_the_package():
    """Where the exercises reduce to the package (square windows, no smoothing), the judges' reference is it."""
    x = hw4.index_tokens(2, 8, 12, 3, seed=1).reshape(2, 8, 12, 3)
    rows, cols = hw4.window_order(8, 12, (4, 4))
    torch.testing.assert_close(x[:, rows, cols].reshape(-1, 16, 3), variants.window_partition(x, 4))
    for h, w, m, s in ((8, 12, 4, 2), (14, 7, 7, 3), (6, 6, 3, 1)):
        generic = hw4.wrap_mask(h, w, (m, m + 0), (s, s + 0))
        labels = 2 * (torch.arange(h) >= h - s)[:, None] + (torch.arange(w) >= w - s)[None, :]
        per = hw4._partition(labels[None, :, :, None].float(), (m, m))[..., 0]
        assert torch.equal(per[:, :, None] == per[:, None, :], generic)
        assert torch.equal(generic, variants.shifted_window_mask(h, w, m, s))
    c, d, y, t = hw4.deit_inputs(5, 4, seed=3)
    for kind in ("hard", "soft"):
        smoothed_by_hand = hw4.deit_reference(c, d, y, t, kind, 0.3, 2.0, 1e-12)
        torch.testing.assert_close(smoothed_by_hand, hw4.deit_reference(c, d, y, t, kind, 0.3, 2.0, 0.0))
    a, b = hw4.clip_inputs(5, 6, seed=4)
    torch.testing.assert_close(hw4._group_reference(a, b, 3.0, torch.arange(5), normalise=True, spread=True),
                               variants.clip.contrastive_loss(a, b, 3.0))
    shares = hw4.kept_shares()
    for side, share in shares.items():  # per axis: the last window of each row splits 4 + 3
        n = side // 7
        assert abs(share - (((n - 1) * 49 + 16 + 9) / (n * 49)) ** 2) < 1e-9


# ---------------------------------------------------------------- classic mistakes, per question

PARTITION = '''def partition_windows(tokens, grid, window):
    (h, w), (mh, mw) = grid, window
    b, _, c = tokens.shape
    {body}'''
PLAIN = PARTITION.format(body="return tokens.reshape(-1, mh * mw, c)")
NO_PERMUTE = PARTITION.format(body="return tokens.reshape(b, h // mh, mh, w // mw, mw, c).reshape(-1, mh * mw, c)")
COLUMNS_IN_WINDOW = PARTITION.format(
    body="return tokens.reshape(b, h // mh, mh, w // mw, mw, c).permute(0, 1, 3, 4, 2, 5).reshape(-1, mh * mw, c)")
SQUARE_ONLY = PARTITION.format(
    body="return tokens.reshape(b, h // mh, mh, w // mh, mh, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, mh * mh, c)")
REFERENCE_PARTITION = PARTITION.format(
    body="return variants.window_partition(tokens.reshape(b, h, w, c), mh)")
MERGE = '''def merge_windows(windows, grid, window):
    (h, w), (mh, mw) = grid, window
    c = windows.shape[-1]
    {body}'''
MERGE_PLAIN = MERGE.format(body="return windows.reshape(-1, h * w, c)")
MERGE_SQUARE = MERGE.format(body="return variants.window_reverse(windows, mh, h, w).flatten(1, 2)")
MASK = '''def shifted_mask(grid, window, shift):
    (h, w), (sh, sw) = grid, shift
    {rows}
    {cols}
    side = 2 * r[:, None].long() + k[None, :].long()
    per_window = partition_windows(side.reshape(1, h * w, 1), grid, window)[..., 0]
    return per_window[:, :, None] == per_window[:, None, :]'''
ROWS, COLS = "r = torch.arange(h) >= h - sh", "k = torch.arange(w) >= w - sw"
FIRST_ROWS = MASK.format(rows="r = torch.arange(h) < sh", cols="k = torch.arange(w) < sw")
SWAPPED = MASK.format(rows="r = torch.arange(h) >= h - sw", cols="k = torch.arange(w) >= w - sh")
ROWS_ONLY = MASK.format(rows=ROWS, cols="k = torch.zeros(w, dtype=torch.bool)")
ALL_TRUE = '''def shifted_mask(grid, window, shift):
    (h, w), (mh, mw) = grid, window
    return torch.ones((h // mh) * (w // mw), mh * mw, mh * mw, dtype=torch.bool)'''
FLOAT_MASK = MASK.format(rows=ROWS, cols=COLS).replace("return per_window[:, :, None] == per_window[:, None, :]",
                                                       "return (per_window[:, :, None] == per_window[:, None]).float()")
SQUARE_MASK = ("def shifted_mask(grid, window, shift):\n"
               "    return variants.shifted_window_mask(*grid, window[0], shift[0])")

DEIT = '''def deit_loss(cls_logits, dist_logits, labels, teacher_logits, kind, alpha, tau, smoothing):
    {teacher}
    def ce(logits, targets):
        {ce}
    label_term = ce(cls_logits, labels)
    if kind == "hard":
        teacher_term = ce(dist_logits, {hard_target})
    else:
        teacher_term = {soft}
    return {mix}'''
RIGHT = {
    "teacher": "teacher_logits = teacher_logits.detach()",
    "ce": ("k = logits.shape[-1]\n"
           "        q = torch.full_like(logits, smoothing / (k - 1)).scatter(1, targets[:, None], 1 - smoothing)\n"
           "        return -(q * logits.log_softmax(-1)).sum(-1).mean()"),
    "hard_target": "teacher_logits.argmax(-1)",
    "soft": ("tau**2 * F.kl_div((dist_logits / tau).log_softmax(-1), (teacher_logits / tau).log_softmax(-1), "
             "reduction='batchmean', log_target=True)"),
    "mix": "(1 - alpha) * label_term + alpha * teacher_term",
}


def deit(**change: str) -> str:
    return DEIT.format(**{**RIGHT, **change})


TORCH_SMOOTHING = deit(ce="return F.cross_entropy(logits, targets, label_smoothing=smoothing)")
NO_SMOOTHING = deit(ce="return F.cross_entropy(logits, targets)")
NO_TAU2 = deit(soft=RIGHT["soft"].replace("tau**2 * ", ""))
MEAN_KL = deit(soft=RIGHT["soft"].replace("batchmean", "mean"))
REVERSED_KL = deit(soft=("tau**2 * F.kl_div((teacher_logits / tau).log_softmax(-1), "
                         "(dist_logits / tau).log_softmax(-1), reduction='batchmean', log_target=True)"))
ALPHA_SWAPPED = deit(mix="alpha * label_term + (1 - alpha) * teacher_term")
NOT_DETACHED = deit(teacher="pass")
FLOAT_LOSS = deit(mix="float((1 - alpha) * label_term + alpha * teacher_term)")
REFERENCE_DEIT = ("def deit_loss(cls_logits, dist_logits, labels, teacher_logits, kind, alpha, tau, smoothing):\n"
                  "    return variants.distill.distillation_loss(cls_logits, dist_logits, labels, teacher_logits, "
                  "kind=kind, alpha=alpha, tau=tau)")

MASKING = '''def mask_tokens(tokens, noise, mask_ratio, prefix):
    b, n = noise.shape
    d = tokens.shape[-1]
    keep = {keep}
    order = noise.argsort(dim=1{descending})
    ids_restore = order.argsort(dim=1)
    ids_keep = {ids_keep}
    kept = torch.gather(tokens[:, prefix:], 1, ids_keep[:, :, None].expand(-1, -1, d))
    mask = (ids_restore >= keep).float()
    return torch.cat([tokens[:, :{prefix}], kept], dim=1), {mask}, {restore}'''
MASKING_RIGHT = {"keep": "int(n * (1 - mask_ratio))", "descending": "", "ids_keep": "order[:, :keep]",
                 "prefix": "prefix", "mask": "mask", "restore": "ids_restore"}


def masking(**change: str) -> str:
    return MASKING.format(**{**MASKING_RIGHT, **change})


IMAGE_ORDER = masking(ids_keep="order[:, :keep].sort(dim=1).values")
LARGEST = masking(descending=", descending=True")
SHUFFLE_NOT_INVERSE = masking(restore="order")
ROUNDED = masking(keep="round(n * (1 - mask_ratio))")
NO_PREFIX = masking(prefix="0")
SHUFFLED_MASK = masking(mask="mask.sort(dim=1).values")
REFERENCE_MASKING = '''def mask_tokens(tokens, noise, mask_ratio, prefix):
    out = variants.mae.random_masking(tokens[:, prefix:], mask_ratio)
    return out.visible, out.mask, out.ids_restore'''

UNSHUFFLE = '''def unshuffle(visible, ids_shuffle, mask_token):
    b, k, d = visible.shape
    n = ids_shuffle.shape[1]
    shuffled = torch.cat([{first}, {second}], dim=1)
    {body}'''
SCATTER = "return torch.zeros_like(shuffled).scatter(1, ids_shuffle[:, :, None].expand(-1, -1, d), shuffled)"
GATHER = UNSHUFFLE.format(first="visible", second="mask_token.expand(b, n - k, d)",
                          body="return torch.gather(shuffled, 1, ids_shuffle[:, :, None].expand(-1, -1, d))")
MASK_FIRST = UNSHUFFLE.format(first="mask_token.expand(b, n - k, d)", second="visible", body=SCATTER)
ZEROS = UNSHUFFLE.format(first="visible", second="visible.new_zeros(b, n - k, d)", body=SCATTER)
REFERENCE_UNSHUFFLE = UNSHUFFLE.format(first="visible", second="mask_token.expand(b, n - k, d)",
                                       body="return variants.mae.restore_order(shuffled, ids_shuffle.argsort(1))")

CONTRASTIVE = '''def group_contrastive_loss(image_emb, text_emb, scale, groups):
    {norm}
    logits = scale * image_emb @ text_emb.T
    same = (groups[:, None] == groups[None, :]).float()
    target = {target}
    rows = -(target * logits.log_softmax(dim=1)).sum(dim=1).mean()
    cols = -(target * logits.log_softmax(dim=0)).sum(dim=0).mean()
    return {out}'''
CONTRASTIVE_RIGHT = {"norm": "image_emb, text_emb = F.normalize(image_emb, dim=-1), F.normalize(text_emb, dim=-1)",
                     "target": "same / same.sum(dim=1, keepdim=True)", "out": "(rows + cols) / 2"}


def contrastive(**change: str) -> str:
    return CONTRASTIVE.format(**{**CONTRASTIVE_RIGHT, **change})


DIAGONAL = contrastive(target="torch.eye(len(groups))")
NOT_NORMALISED = contrastive(norm="pass")
MULTI_HOT = contrastive(target="same")
ONE_WAY = contrastive(out="rows")
ADDED = contrastive(out="rows + cols")
REFERENCE_CONTRASTIVE = ("def group_contrastive_loss(image_emb, text_emb, scale, groups):\n"
                         "    return variants.clip.contrastive_loss(image_emb, text_emb, scale)")

# question, mistake, the public check's hint (None: the public example cannot show it), hidden points
MISTAKES = [
    ("ch14_window_partition", PLAIN, "a plain reshape", 0),
    ("ch14_window_partition", NO_PERMUTE, "bring the two window indices together", 0),
    ("ch14_window_partition", COLUMNS_IN_WINDOW, "inside a window, tokens go row by row", 0),
    ("ch14_window_partition", SQUARE_ONLY, "should have shape", 1),
    ("ch14_window_reverse", MERGE_PLAIN, "a plain reshape does not undo", 0),
    ("ch14_shift_mask", FIRST_ROWS, "in the last rows and columns of the rolled grid", 0),
    ("ch14_shift_mask", ALL_TRUE, "every pair is allowed", 0),
    ("ch14_shift_mask", FLOAT_MASK, "should hold booleans", 0),
    ("ch14_shift_mask", SWAPPED, None, 1),  # the public shift is (1, 1): swapping cannot show
    ("ch14_shift_mask", ROWS_ONLY, "window 1 should allow", 0),
    ("ch15_deit_loss", TORCH_SMOOTHING, "torch's label_smoothing spreads ε over all K classes", 2),
    ("ch15_deit_loss", NO_SMOOTHING, "the smoothing is not applied", 2),
    ("ch15_deit_loss", NO_TAU2, "multiply the KL term by τ²", 1),
    ("ch15_deit_loss", MEAN_KL, "reduction='batchmean'", 1),
    ("ch15_deit_loss", REVERSED_KL, "KL(teacher ‖ student)", 1),
    ("ch15_deit_loss", ALPHA_SWAPPED, None, 0),  # the public α is ½: swapping cannot show
    ("ch15_deit_loss", NOT_DETACHED, "a gradient reaches teacher_logits", 3),
    ("ch15_deit_loss", FLOAT_LOSS, "should return a tensor", 0),
    ("ch16_masking", IMAGE_ORDER, "in the order of increasing noise", 0),
    ("ch16_masking", LARGEST, "SMALLEST noise", 0),
    ("ch16_masking", SHUFFLE_NOT_INVERSE, "ids_restore is its inverse", 0),
    ("ch16_masking", ROUNDED, None, 2),  # the public K is a whole number
    ("ch16_masking", NO_PREFIX, "prefix token(s) stay visible", 1),
    ("ch16_masking", SHUFFLED_MASK, "that mask is in the shuffled order", 0),
    ("ch16_unshuffle", GATHER, "applies the shuffle once more", 0),
    ("ch16_unshuffle", MASK_FIRST, "the K visible tokens come first", 0),
    ("ch16_unshuffle", ZEROS, "a copy of mask_token, not zeros", 0),
    ("ch17_contrastive", DIAGONAL, "only the diagonal as positives", 1),
    ("ch17_contrastive", NOT_NORMALISED, "normalise each embedding", 0),
    ("ch17_contrastive", MULTI_HOT, "share its weight equally", 1),
    ("ch17_contrastive", ONE_WAY, "average the image→text and the text→image", 0),
    ("ch17_contrastive", ADDED, "don't add them", 0),
]


@pytest.mark.parametrize("question, source, hint, points", MISTAKES,
                         ids=[f"{q}-{i}" for i, (q, *_) in enumerate(MISTAKES)])
def test_classic_mistakes_are_named_and_get_their_partial_marks(question, source, hint, points):
    ns = with_answer(source)
    if hint is None:
        public(question, ns)  # the public example cannot show this one: the hidden checks must
    else:
        with pytest.raises(AssertionError, match=re.escape(hint)):
            public(question, ns)
    assert score(question, ns) == points


REFERENCE_CALLS = {"ch14_window_partition": REFERENCE_PARTITION, "ch14_window_reverse": MERGE_SQUARE,
                   "ch14_shift_mask": SQUARE_MASK, "ch15_deit_loss": REFERENCE_DEIT,
                   "ch16_masking": REFERENCE_MASKING, "ch16_unshuffle": REFERENCE_UNSHUFFLE,
                   "ch17_contrastive": REFERENCE_CONTRASTIVE}


@pytest.mark.parametrize("question", sorted(REFERENCE_CALLS))
def test_calling_the_book_s_reference_scores_zero_and_says_why(question):
    ns = with_answer(REFERENCE_CALLS[question])
    assert score(question, ns) == 0
    case = next(c for c in CASES.cases if c.question == question)
    assert "called the book's reference" in CASES.judge_one(case, CASES.probe_one(case, ns, 20.0), None)[1]


def test_the_scan_sees_a_reference_named_in_an_answer():
    from vit_edu.homework import scan

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(REFERENCE_CALLS[q]) for q in sorted(REFERENCE_CALLS)]
    found = scan.reference_uses(nb, CASES.answers, CASES.references)
    assert set(found) == set(REFERENCE_CALLS)
    clean = nbformat.v4.new_notebook()
    clean.cells = [nbformat.v4.new_code_cell(s) for s in SOLUTIONS.values()]
    assert scan.reference_uses(clean, CASES.answers, CASES.references) == {}
    assert scan.tampering(clean) == []


# ---------------------------------------------------------------- the number


@pytest.mark.parametrize("wrong, message, points", [
    ({56: 0.5, 28: 0.5, 14: 0.5}, "the same share", 0),
    ({56: 88.13, 28: 77.01, 14: 57.02}, "between 0 and 1", 0),
    ({"56": 0.8813, "28": 0.7701, "14": 0.5702}, "the keys [56, 28, 14]", 0),
    ({56: 1 / 64, 28: 1 / 16, 14: 1 / 4}, None, 0),  # the share of global attention's N² pairs, not of the window's
])
def test_wrong_numbers_fail(wrong, message, points):
    ns = {**MASTER_NS, "pairs_kept": wrong}
    if message is None:
        public("ch14_pairs_kept", ns)
    else:
        with pytest.raises(AssertionError, match=re.escape(message)):
            public("ch14_pairs_kept", ns)
    assert score("ch14_pairs_kept", ns) == points


def test_rounded_to_four_decimals_still_passes():
    ns = {**MASTER_NS, "pairs_kept": {k: round(v, 4) for k, v in MASTER_NS["pairs_kept"].items()}}
    assert score("ch14_pairs_kept", ns) == 2


# ---------------------------------------------------------------- what the public side may show


def test_the_public_checks_never_use_a_hidden_input():
    source = Path(hw4.__file__).read_text()
    for name in ("PARTITIONS", "REVERSES", "MASKS", "DEIT", "MASKINGS", "UNSHUFFLES", "CONTRASTIVE"):
        assert f"{name} =" not in source
    hidden = (HIDDEN / f"{NAME}.py").read_text()
    for seed in re.findall(r"\b4[0-5]\d\b", hidden):  # the hidden inputs' seeds
        assert not re.search(rf"\b{seed}\b", source), seed
    student = MASTER.read_text()
    for seed in re.findall(r"\b4[0-5]\d\b", hidden):
        assert not re.search(rf"seed\W+{seed}\b", student), seed


def test_the_public_checks_are_reachable_where_grading_looks_for_them():
    """The notebook's test cells and the grader's probe find each public check on ``vit_edu.homework.feedback``
    (which needs ``from vit_edu.homework.feedback.hw4 import *`` in the package's ``__init__``)."""
    from vit_edu.homework import feedback

    for check, _ in CASES.public.values():
        assert getattr(feedback, check) is getattr(hw4, check), check
