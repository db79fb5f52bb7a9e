"""Homework 4's checks as data: the public checks pass the master's answers and name each classic mistake; the
hidden checks, drawn from two secrets, give the master full marks and each mistake its hint and partial marks;
the shipped public data holds no hidden value and is what ``make()`` gives now.

The master's answers are the code cells of ``book/homework/hw4_beyond.ipynb`` (its set-up and solutions), run in
this process; the mistakes are written out below. Hidden examples are judged as the grader judges them: the
answer's output encoded and decoded, the example read back from its JSON.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F

from vit_edu import variants
from vit_edu.homework import scan
from vit_edu.homework.assignment import drawer
from vit_edu.homework.build import load_module, public_draw
from vit_edu.homework.checks import PUBLIC, check
from vit_edu.homework.plain import decode

from homework_helpers import assert_close, in_process_grade as grade, master_namespace

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw4_beyond"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
SECRETS = ("secret-one-xyz", "another-secret-42")
POINTS = {"ch14_window_partition": 2, "ch14_window_reverse": 2, "ch14_shift_mask": 4, "ch14_pairs_kept": 2,
          "ch15_deit_loss": 4, "ch16_masking": 3, "ch16_unshuffle": 2, "ch17_contrastive": 3}


# ---------------------------------------------------------------- fixtures: built once per module


@pytest.fixture(scope="module")
def hidden():
    """The instructor's module."""
    return load_module(f"hidden_{NAME}", ROOT / "book" / "homework" / "hidden" / f"{NAME}.py")


@pytest.fixture(scope="module")
def assignments(hidden):
    """The assignment built with each of two secrets."""
    return {secret: hidden.make(drawer(secret, NAME)) for secret in SECRETS}


@pytest.fixture(scope="module")
def master():
    """The master\'s answers: its set-up and solution cells run in one namespace, as in the notebook."""
    return master_namespace(MASTER)


def answers_of(assignment, question: str, ns: dict) -> dict:
    return {a: ns.get(a) for a in assignment.questions[question].answers}


# ---------------------------------------------------------------- the classic mistakes


def cut(x: torch.Tensor, grid, window) -> torch.Tensor:
    """A right ``partition_windows``, for the mistakes of the later questions."""
    (h, w), (mh, mw) = grid, window
    b, _, c = x.shape
    return x.reshape(b, h // mh, mh, w // mw, mw, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, mh * mw, c)


def partition_with(slip: str):
    """A ``partition_windows`` with one slip: a plain reshape, columns first inside a window, windows column by
    column, the tokens read column by column, the window's sides swapped, square windows."""
    def partition_windows(tokens, grid, window):
        (h, w), (mh, mw) = grid, window
        b, _, c = tokens.shape
        x = tokens.reshape(b, h // mh, mh, w // mw, mw, c)
        if slip == "plain":
            return tokens.reshape(-1, mh * mw, c)
        if slip == "columns first":
            return x.permute(0, 1, 3, 4, 2, 5).reshape(-1, mh * mw, c)
        if slip == "windows by column":
            return x.permute(0, 3, 1, 2, 4, 5).reshape(-1, mh * mw, c)
        if slip == "transposed":
            return cut(tokens.reshape(b, w, h, c).transpose(1, 2).reshape(b, h * w, c), grid, window)
        if slip == "sides swapped":
            return cut(tokens, grid, (mw, mh))
        return cut(tokens, grid, (mh, mh))  # square windows only
    return partition_windows


def merge_with(slip: str):
    """A ``merge_windows`` with one slip: a plain reshape, or the right tokens in the wrong places."""
    def merge_windows(windows, grid, window):
        (h, w), (mh, mw), c = grid, window, windows.shape[-1]
        if slip == "plain":
            return windows.reshape(-1, h * w, c)
        x = windows.reshape(-1, h // mh, w // mw, mh, mw, c)
        return x.permute(0, 2, 3, 1, 4, 5).reshape(x.shape[0], h * w, c)
    return merge_windows


def mask_with(slip: str):
    """A ``shifted_mask`` with one slip: the first rows wrapped, the shifts swapped, the columns ignored, every pair
    allowed, or a float mask."""
    def shifted_mask(grid, window, shift):
        (h, w), (sh, sw) = grid, shift
        if slip == "all true":
            return torch.ones((h // window[0]) * (w // window[1]), window[0] * window[1], window[0] * window[1],
                              dtype=torch.bool)
        if slip == "swapped":
            sh, sw = sw, sh
        rows = torch.arange(h) < sh if slip == "first rows" else torch.arange(h) >= h - sh
        cols = torch.arange(w) < sw if slip == "first rows" else torch.arange(w) >= w - sw
        if slip == "rows only":
            cols = torch.zeros(w, dtype=torch.bool)
        side = 2 * rows[:, None].long() + cols[None, :].long()
        per_window = cut(side.reshape(1, h * w, 1), grid, window)[..., 0]
        same = per_window[:, :, None] == per_window[:, None, :]
        return same.float() if slip == "float" else same
    return shifted_mask


def deit_with(label="paper", hard="plain", soft="batchmean", detach=True, swap_alpha=False, as_float=False,
              no_grad=False):
    """A ``deit_loss`` with one slip: the labels' smoothing (``label``: "paper", "torch" or "none"), the hard
    term's (``hard``: "plain", "paper" or "torch" smoothing, or "probs"), the soft term's ("batchmean", "no tau2",
    "deit code", "reversed", "cls head"), no detach, α swapped, a float returned, or no gradient."""
    def smoothed(logits, targets, eps, how):
        if how == "torch":
            return F.cross_entropy(logits, targets, label_smoothing=eps)
        if how in ("none", "plain"):
            return F.cross_entropy(logits, targets)
        k = logits.shape[-1]
        q = torch.full_like(logits, eps / (k - 1)).scatter(1, targets[:, None], 1 - eps)
        return -(q * logits.log_softmax(-1)).sum(-1).mean()

    def kl(student, teacher, tau, reduction="batchmean"):
        return F.kl_div((student / tau).log_softmax(-1), (teacher / tau).log_softmax(-1), reduction=reduction,
                        log_target=True)

    def deit_loss(cls_logits, dist_logits, labels, teacher_logits, kind, alpha, tau, smoothing):
        t = teacher_logits.detach() if detach else teacher_logits
        label_term = smoothed(cls_logits, labels, smoothing, label)
        if kind == "hard":
            if hard == "probs":
                teacher_term = F.cross_entropy(dist_logits, t.softmax(-1))
            else:
                teacher_term = smoothed(dist_logits, t.argmax(-1), smoothing, hard)
        else:
            teacher_term = tau**2 * {"batchmean": lambda: kl(dist_logits, t, tau),
                                     "no tau2": lambda: kl(dist_logits, t, tau) / tau**2,
                                     "deit code": lambda: kl(dist_logits, t, tau, "sum") / dist_logits.numel(),
                                     "reversed": lambda: kl(t, dist_logits, tau),
                                     "cls head": lambda: kl(cls_logits, t, tau)}[soft]()
        a = 1 - alpha if swap_alpha else alpha
        loss = (1 - a) * label_term + a * teacher_term
        return loss.item() if as_float else loss.detach() if no_grad else loss
    return deit_loss


def masking_with(slip: str):
    """A ``mask_tokens`` with one slip: image order, the largest noise, the shuffle for its inverse, K rounded,
    K from the ratio of visible patches, the prefix dropped, the mask in the shuffled order or flipped."""
    def mask_tokens(tokens, noise, mask_ratio, prefix):
        b, n = noise.shape
        d = tokens.shape[-1]
        keep = {"rounded": round(n * (1 - mask_ratio)), "ratio kept": int(n * mask_ratio)}.get(
            slip, int(n * (1 - mask_ratio)))
        order = noise.argsort(dim=1, descending=slip == "largest")
        ids_restore = order.argsort(dim=1)
        ids_keep = order[:, :keep].sort(dim=1).values if slip == "image order" else order[:, :keep]
        kept = torch.gather(tokens[:, prefix:], 1, ids_keep[:, :, None].expand(-1, -1, d))
        mask = (ids_restore < keep if slip == "flipped mask" else ids_restore >= keep).float()
        front = tokens[:, :0] if slip == "no prefix" else tokens[:, :prefix]
        return (torch.cat([front, kept], dim=1), mask.sort(dim=1).values if slip == "shuffled mask" else mask,
                order if slip == "shuffle" else ids_restore)
    return mask_tokens


def unshuffle_with(slip: str):
    """An ``unshuffle`` with one slip: a gather with the shuffle, the mask tokens first, zeros."""
    def unshuffle(visible, ids_shuffle, mask_token):
        b, k, d = visible.shape
        n = ids_shuffle.shape[1]
        filler = visible.new_zeros(b, n - k, d) if slip == "zeros" else mask_token.expand(b, n - k, d)
        shuffled = torch.cat([filler, visible] if slip == "mask first" else [visible, filler], dim=1)
        index = ids_shuffle[:, :, None].expand(-1, -1, d)
        if slip == "gather":
            return torch.gather(shuffled, 1, index)
        return torch.zeros_like(shuffled).scatter(1, index, shuffled)
    return unshuffle


def contrastive_with(slip: str):
    """A ``group_contrastive_loss`` with one slip: the diagonal only, no normalising, a multi-hot target, one
    direction, the two directions added, no scale."""
    def group_contrastive_loss(image_emb, text_emb, scale, groups):
        if slip != "not normalised":
            image_emb, text_emb = F.normalize(image_emb, dim=-1), F.normalize(text_emb, dim=-1)
        logits = (1.0 if slip == "no scale" else scale) * image_emb @ text_emb.T
        same = (groups[:, None] == groups[None, :]).float()
        target = {"diagonal": torch.eye(len(groups)), "multi-hot": same}.get(slip, same / same.sum(1, keepdim=True))
        rows = -(target * logits.log_softmax(dim=1)).sum(dim=1).mean()
        cols = -(target * logits.log_softmax(dim=0)).sum(dim=0).mean()
        return {"one way": rows, "added": rows + cols}.get(slip, (rows + cols) / 2)
    return group_contrastive_loss


# label: (question, answers changed, points its hidden checks then give, hint words, whether the public check names
# it: True, False (it passes) or "fails" (without the hint))
MISTAKES = {
    "partition: plain reshape": ("ch14_window_partition", {"partition_windows": partition_with("plain")}, 0,
                                 "a plain reshape", True),
    "partition: columns first": ("ch14_window_partition", {"partition_windows": partition_with("columns first")}, 0,
                                 "inside a window, tokens go row by row", True),
    "partition: windows by column": ("ch14_window_partition", {"partition_windows": partition_with(
        "windows by column")}, 0, "the right windows in the wrong order", True),
    "partition: tokens by column": ("ch14_window_partition", {"partition_windows": partition_with("transposed")}, 0,
                                    "token i sits in row i // W", True),
    "partition: sides swapped": ("ch14_window_partition", {"partition_windows": partition_with("sides swapped")}, 1,
                                 "mh rows high and mw columns wide", "fails"),  # 2×3 cannot cut 4 rows 3 high
    "partition: square windows": ("ch14_window_partition", {"partition_windows": partition_with("square")}, 1, "",
                                  True),
    "merge: plain reshape": ("ch14_window_reverse", {"merge_windows": merge_with("plain")}, 0,
                             "a plain reshape does not undo", True),
    "merge: tokens misplaced": ("ch14_window_reverse", {"merge_windows": merge_with("misplaced")}, 0,
                                "every token is there, some in the wrong place", True),
    "mask: first rows wrapped": ("ch14_shift_mask", {"shifted_mask": mask_with("first rows")}, 0,
                                 "in the last rows and columns of the rolled grid", True),
    "mask: every pair": ("ch14_shift_mask", {"shifted_mask": mask_with("all true")}, 0, "every pair is allowed",
                         True),
    "mask: shifts swapped": ("ch14_shift_mask", {"shifted_mask": mask_with("swapped")}, 1,
                             "the first shift is along the rows", False),  # the public shift is (1, 1)
    "mask: floats": ("ch14_shift_mask", {"shifted_mask": mask_with("float")}, 0, "", True),
    "mask: columns ignored": ("ch14_shift_mask", {"shifted_mask": mask_with("rows only")}, 0, "", True),
    "pairs: dropped share": ("ch14_pairs_kept", {"pairs_kept": "dropped"}, 0, "the share of the pairs the mask drops",
                             False),
    "pairs: global share": ("ch14_pairs_kept", {"pairs_kept": "global"}, 0, "global attention's N² pairs", False),
    "pairs: no shift": ("ch14_pairs_kept", {"pairs_kept": {56: 1.0, 28: 1.0, 14: 1.0}}, 0,
                        "what regular windows keep", False),
    "deit: the teacher's label smoothed": ("ch15_deit_loss", {"deit_loss": deit_with(hard="paper")}, 2,
                                           "DeiT does not smooth the teacher's pseudo-labels", True),
    "deit: torch's smoothing": ("ch15_deit_loss", {"deit_loss": deit_with(label="torch")}, 2,
                                "that is the other convention of label smoothing", True),
    "deit: torch's smoothing everywhere": ("ch15_deit_loss", {"deit_loss": deit_with(label="torch", hard="torch")},
                                           2, "torch's label_smoothing is the other convention", True),
    "deit: no smoothing": ("ch15_deit_loss", {"deit_loss": deit_with(label="none")}, 2,
                           "the true labels are not smoothed", True),
    "deit: teacher probabilities": ("ch15_deit_loss", {"deit_loss": deit_with(hard="probs")}, 1,
                                    "the teacher's top class (argmax)", True),
    "deit: no τ²": ("ch15_deit_loss", {"deit_loss": deit_with(soft="no tau2")}, 1, "multiply the KL term by τ²",
                    True),
    "deit: DeiT code's B·K": ("ch15_deit_loss", {"deit_loss": deit_with(soft="deit code")}, 1,
                              "the convention of DeiT's code", True),
    "deit: KL reversed": ("ch15_deit_loss", {"deit_loss": deit_with(soft="reversed")}, 1, "KL(teacher ‖ student)",
                          True),
    "deit: CLS head distilled": ("ch15_deit_loss", {"deit_loss": deit_with(soft="cls head")}, 1,
                                 "trains the distillation head", True),
    "deit: α swapped": ("ch15_deit_loss", {"deit_loss": deit_with(swap_alpha=True)}, 0, "α weighs the teacher's term",
                        False),  # the public α is ½
    "deit: not detached": ("ch15_deit_loss", {"deit_loss": deit_with(detach=False)}, 3,
                           "a gradient reaches teacher_logits", True),
    "deit: a float": ("ch15_deit_loss", {"deit_loss": deit_with(as_float=True)}, 0, "return a tensor", True),
    "deit: no gradient": ("ch15_deit_loss", {"deit_loss": deit_with(no_grad=True)}, 3, "the loss has no gradient",
                          True),
    "masking: image order": ("ch16_masking", {"mask_tokens": masking_with("image order")}, 0,
                             "in the order of increasing noise", True),
    "masking: largest noise": ("ch16_masking", {"mask_tokens": masking_with("largest")}, 0, "SMALLEST noise", True),
    "masking: the shuffle": ("ch16_masking", {"mask_tokens": masking_with("shuffle")}, 0,
                             "ids_restore is its inverse", True),
    "masking: K rounded": ("ch16_masking", {"mask_tokens": masking_with("rounded")}, 2, "rounds down",
                           False),  # the public K is a whole number
    "masking: prefix dropped": ("ch16_masking", {"mask_tokens": masking_with("no prefix")}, 1,
                                "prefix token(s) stay visible", True),
    "masking: mask shuffled": ("ch16_masking", {"mask_tokens": masking_with("shuffled mask")}, 0,
                               "that mask is in the shuffled order", True),
    "masking: mask flipped": ("ch16_masking", {"mask_tokens": masking_with("flipped mask")}, 0,
                              "1.0 marks a HIDDEN patch", True),
    "masking: K of the ratio": ("ch16_masking", {"mask_tokens": masking_with("ratio kept")}, 0,
                                "the share of patches HIDDEN", False),  # the public ratio is ½
    "unshuffle: gather": ("ch16_unshuffle", {"unshuffle": unshuffle_with("gather")}, 0,
                          "applies the shuffle once more", True),
    "unshuffle: mask first": ("ch16_unshuffle", {"unshuffle": unshuffle_with("mask first")}, 0,
                              "the K visible tokens come first", True),
    "unshuffle: zeros": ("ch16_unshuffle", {"unshuffle": unshuffle_with("zeros")}, 0,
                         "a copy of mask_token, not zeros", True),
    "contrastive: diagonal": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with("diagonal")}, 1,
                              "only the diagonal as positives", True),
    "contrastive: not normalised": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with(
        "not normalised")}, 0, "normalise each embedding", True),
    "contrastive: multi-hot": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with("multi-hot")}, 1,
                               "share its weight equally", True),
    "contrastive: one way": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with("one way")}, 0,
                             "average the image→text and the text→image", True),
    "contrastive: added": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with("added")}, 0,
                           "don't add them", True),
    "contrastive: no scale": ("ch17_contrastive", {"group_contrastive_loss": contrastive_with("no scale")}, 0,
                              "multiply the cosine similarities by scale", True),
}


def with_mistake(ns: dict, change: dict) -> dict:
    """The master's answers with one mistake (``"dropped"``, ``"global"``: the master's shares turned wrong)."""
    if change.get("pairs_kept") == "dropped":
        change = {"pairs_kept": {s: 1 - v for s, v in ns["pairs_kept"].items()}}
    elif change.get("pairs_kept") == "global":
        change = {"pairs_kept": {s: v * 49 / s**2 for s, v in ns["pairs_kept"].items()}}
    return {**ns, **change}


# ---------------------------------------------------------------- the layout


def test_questions_and_points(assignments):
    for assignment in assignments.values():
        assert {q: p.points for q, p in assignment.questions.items()} == POINTS
        assert sum(POINTS.values()) == 22


def test_every_reference_resolves(assignments):
    """Each reference names a definition of ``vit_edu`` (the grader strips it) that exists."""
    for q in next(iter(assignments.values())).questions.values():
        assert q.references, q.name
        for ref in q.references:
            parts = ref.split(".")
            module = importlib.import_module(".".join(parts[:3]))
            obj = module
            for name in parts[3:]:
                obj = getattr(obj, name)
            assert callable(obj), ref


def test_the_old_feedback_module_is_gone():
    assert not (ROOT / "vit_edu" / "homework" / "feedback" / "hw4.py").exists()


def test_the_references_agree_with_the_package(hidden):
    """Where the exercises reduce to the package (square windows, equal shifts, all groups different), the hidden
    module's generalisations give what the package gives; and the kept shares have a closed form."""
    x = hidden.index_tokens(2, 8, 12, 3, seed=1).reshape(2, 8, 12, 3)
    rows, cols = hidden.window_order(8, 12, (4, 4))
    torch.testing.assert_close(x[:, rows, cols].reshape(-1, 16, 3), variants.window_partition(x, 4))
    for h, w, m, s in ((8, 12, 4, 2), (14, 7, 7, 3), (6, 6, 3, 1)):
        labels = 2 * (torch.arange(h) >= h - s)[:, None] + (torch.arange(w) >= w - s)[None, :]
        assert torch.equal(hidden.same_label(labels, (m, m)), variants.shifted_window_mask(h, w, m, s))
    a, b = hidden.clip_inputs(5, 6, seed=4)
    general = hidden.group_loss(a, b, 3.0, torch.arange(5), spread=False)  # all groups different: one positive
    torch.testing.assert_close(general, variants.clip.contrastive_loss(a, b, 3.0))
    for side, share in hidden.kept_shares().items():  # per axis: the last window of each row splits 4 + 3
        n = side // 7
        assert abs(share - (((n - 1) * 49 + 16 + 9) / (n * 49)) ** 2) < 1e-9


def test_deit_reference_follows_deit(hidden):
    """DeiT smooths the true labels only (the paper's form, ε/(K − 1)); the teacher's pseudo-labels stay hard."""
    c, d, y, t = hidden.deit_inputs(5, 4, seed=3)
    for eps in (0.0, 0.1):
        k = c.shape[-1]
        target = torch.full((5, k), eps / (k - 1)).scatter(1, y[:, None], 1 - eps)
        label_term = -(target * c.log_softmax(-1)).sum(-1).mean()
        want = 0.3 * label_term + 0.7 * F.cross_entropy(d, t.argmax(-1))
        torch.testing.assert_close(hidden.deit_reference(c, d, y, t, "hard", 0.7, 1.0, eps), want)
    torch.testing.assert_close(hidden.deit_reference(c, d, y, t, "soft", 0.4, 2.0, 0.0),
                               variants.distill.distillation_loss(c, d, y, t, kind="soft", alpha=0.4, tau=2.0))


# ---------------------------------------------------------------- the public checks


def test_public_checks_pass_the_masters_answers(assignments, master):
    assignment = assignments[SECRETS[0]]
    for question in assignment.questions:
        check(question, **answers_of(assignment, question, master))


@pytest.mark.parametrize("label", MISTAKES)
def test_public_check_names_the_classic_mistake(label, assignments, master):
    question, change, _, words, shown = MISTAKES[label]
    answers = answers_of(assignments[SECRETS[0]], question, with_mistake(master, change))
    if question == "ch14_pairs_kept" or not shown:
        check(question, **answers)  # the public example cannot show it (a number's form, α = ½, a whole K)
        return
    with pytest.raises(AssertionError) as e:
        check(question, **answers)
    assert shown == "fails" or words in str(e.value), str(e.value)


def test_public_check_of_the_number_checks_its_form_only(assignments, master):
    answers = answers_of(assignments[SECRETS[0]], "ch14_pairs_kept", master)
    check("ch14_pairs_kept", **{**answers, "pairs_kept": {56: 0.1, 28: 0.2, 14: 0.3}})
    for bad, words in (({"56": 0.9, "28": 0.8, "14": 0.6}, "keys"), ({56: 0.9, 28: 0.8}, "keys"),
                       ({56: "0.9", 28: 0.8, 14: 0.6}, "float")):
        with pytest.raises(AssertionError, match=words):
            check("ch14_pairs_kept", **{**answers, "pairs_kept": bad})


def test_the_public_data_holds_no_hidden_value(hidden, assignments):
    public = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert set(public) == {"assignment", "questions"} and set(public["questions"]) == set(POINTS)
    assert all(set(spec) == {"public"} for spec in public["questions"].values())
    (number,) = public["questions"]["ch14_pairs_kept"]["public"]
    assert number["form_only"] and not number["mistakes"]
    shares = hidden.kept_shares()
    assert all(abs(v - shares[s]) > 0.01 for s, v in decode(number["expect"]).items())
    text = json.dumps(public)
    assert all(f"{v:.4f}"[2:] not in text for v in shares.values())
    for assignment in assignments.values():  # the public data does not depend on the secret
        assert assignment.public_data() == json.loads(json.dumps(hidden.make(public_draw).public_data()))


def test_the_committed_public_data_is_what_make_gives(hidden):
    committed = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert_close(committed, json.loads(json.dumps(hidden.make(public_draw).public_data())), "public")



# ---------------------------------------------------------------- the hidden checks


def test_hidden_examples_differ_between_secrets(assignments):
    one, two = (a.data()["questions"] for a in assignments.values())
    for question in POINTS:
        if question != "ch14_pairs_kept":  # one fixed number: Swin-T's grids
            assert one[question]["checks"] != two[question]["checks"], question
        assert one[question]["public"] == two[question]["public"], question


@pytest.mark.parametrize("secret", SECRETS)
def test_hidden_checks_give_the_master_full_marks(secret, assignments, master):
    assignment = assignments[secret]
    for question, q in assignment.questions.items():
        assert grade(assignment, question, master) == (q.points, []), question


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("label", MISTAKES)
def test_hidden_checks_give_the_mistake_its_hint_and_partial_marks(label, secret, assignments, master):
    question, change, points, words, _ = MISTAKES[label]
    score, hints = grade(assignments[secret], question, with_mistake(master, change))
    assert score == points, (score, hints)
    assert any(words in h for h in hints) if words else hints, hints


def test_pairs_rounded_to_four_decimals_still_pass(assignments, master):
    rounded = {**master, "pairs_kept": {s: round(v, 4) for s, v in master["pairs_kept"].items()}}
    assert grade(assignments[SECRETS[0]], "ch14_pairs_kept", rounded)[0] == 2


# ---------------------------------------------------------------- the scan of the book's references


REFERENCE_CALLS = {
    "ch14_window_partition": "def partition_windows(tokens, grid, window):\n"
                             "    return variants.window_partition(tokens, window[0])",
    "ch14_window_reverse": "def merge_windows(windows, grid, window):\n"
                           "    return variants.window_reverse(windows, window[0], *grid)",
    "ch14_shift_mask": "def shifted_mask(grid, window, shift):\n"
                       "    return variants.shifted_window_mask(*grid, window[0], shift[0])",
    "ch15_deit_loss": "def deit_loss(c, d, y, t, kind, alpha, tau, smoothing):\n"
                      "    return variants.distill.distillation_loss(c, d, y, t, kind=kind)",
    "ch16_masking": "def mask_tokens(tokens, noise, mask_ratio, prefix):\n"
                    "    return variants.mae.random_masking(tokens, mask_ratio)",
    "ch16_unshuffle": "def unshuffle(visible, ids_shuffle, mask_token):\n"
                      "    return variants.mae.restore_order(visible, ids_shuffle.argsort(1))",
    "ch17_contrastive": "def group_contrastive_loss(image_emb, text_emb, scale, groups):\n"
                        "    return variants.clip.contrastive_loss(image_emb, text_emb, scale)",
}


def test_the_scan_sees_a_reference_named_in_an_answer(assignments):
    assignment = assignments[SECRETS[0]]
    answers = {q: p.answers for q, p in assignment.questions.items()}
    references = {q: p.references for q, p in assignment.questions.items()}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(REFERENCE_CALLS[q]) for q in sorted(REFERENCE_CALLS)]
    found = scan.reference_uses(nb, answers, references)
    assert set(REFERENCE_CALLS) <= set(found)
    clean = nbformat.read(MASTER, as_version=4)
    assert scan.reference_uses(clean, answers, references) == {}
