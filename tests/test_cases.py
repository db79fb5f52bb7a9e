"""Probes and judges: plain data only crosses, the reference is caught however it is reached, scores add up."""

from __future__ import annotations

import functools

import pytest
import torch

import vit_edu
from vit_edu.homework.cases import Cases, ProbeError, call, to_plain, value


def assignment() -> Cases:
    cases = Cases("demo")
    cases.question("cut", answers=("my_patchify",), references=("vit_edu.patches.patchify",))

    @cases.add("cut", "shape")
    def shape(ns):
        return call(ns, "my_patchify", torch.zeros(1, 1, 4, 4), 2)

    @shape.judge
    def _(got, key):
        assert tuple(got.shape) == (1, 4, 4), f"shape {tuple(got.shape)}"

    @cases.add("cut", "values", points=2)
    def values(ns):
        return call(ns, "my_patchify", torch.arange(16.0).reshape(1, 1, 4, 4), 2)

    @values.judge
    def _(got, key):
        assert torch.equal(got, vit_edu.patchify(torch.arange(16.0).reshape(1, 1, 4, 4), 2)), "values"

    cases.question("answer", answers=("answer",))

    @cases.add("answer", "the key")
    def answer(ns):
        return value(ns, "answer")

    @answer.judge
    def _(got, key):
        assert got == key["answer"], "not the key's answer"

    return cases


def own_patchify(images, p):
    b, c, h, w = images.shape
    return images.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, -1, c * p * p)


def grade(ns: dict, key=None, disqualified=None):
    cases = assignment()
    verdicts = cases.judge_all(cases.probe_all(ns, 5.0), key or {"answer": 42}, disqualified)
    return {q: (v.score, v.possible) for q, v in verdicts.items()}, verdicts


def test_own_code_scores_full_marks():
    scores, _ = grade({"my_patchify": own_patchify, "answer": 42})
    assert scores == {"cut": (3, 3), "answer": (1, 1)}


_cut = vit_edu.patchify


@pytest.mark.parametrize("fn", [
    vit_edu.patchify,  # the reference itself
    lambda x, p: vit_edu.patches.patchify(x, p),  # a wrapper
    functools.partial(vit_edu.patchify),  # a partial
    lambda x, p, f=vit_edu.patchify: f(x, p),  # a default argument
    lambda x, p: _cut(x, p),  # an alias in another global
], ids=["itself", "wrapper", "partial", "default", "alias"])
def test_the_reference_is_caught_however_it_is_reached(fn):
    scores, verdicts = grade({"my_patchify": fn, "answer": 42})
    assert scores["cut"] == (0, 3) and scores["answer"] == (1, 1)
    assert all("called the book's reference (vit_edu.patches.patchify)" in d for d in verdicts["cut"].detail)


def test_missing_placeholder_raising_and_looping_answers_fail_with_a_reason():
    def loops(x, p):
        while True:
            pass

    for fn, words in [(None, "not defined"), (..., "still `...`"), (lambda x, p: 1 / 0, "ZeroDivisionError"),
                      (lambda x, p: None, "returned None"), (loops, "longer than")]:
        cases = assignment()
        result = cases.probe_one(cases.cases[0], {"my_patchify": fn}, 0.5)
        assert words in result["error"], (words, result)


def test_only_plain_data_crosses():
    class Fake:
        def __eq__(self, other):
            return True

    assert to_plain({"a": (1, 2.5, "x", [torch.ones(2)])})["a"][3][0].tolist() == [1.0, 1.0]
    assert type(to_plain(torch.ones(1).as_subclass(type("T", (torch.Tensor,), {})))) is torch.Tensor
    with pytest.raises(ProbeError, match="a Fake, not a tensor"):
        to_plain(Fake())
    with pytest.raises(ProbeError, match="more than"):
        to_plain(torch.zeros(5_000_000))


def test_a_fake_answer_object_scores_nothing():
    class Fake:
        def __eq__(self, other):
            return True

    scores, verdicts = grade({"my_patchify": lambda x, p: Fake(), "answer": Fake()})
    assert scores == {"cut": (0, 3), "answer": (0, 1)}
    assert "a Fake, not a tensor" in verdicts["answer"].detail[0]


def test_disqualified_questions_score_zero_with_the_reason():
    scores, verdicts = grade({"my_patchify": own_patchify, "answer": 42}, disqualified={"cut": "flagged for review"})
    assert scores["cut"] == (0, 3) and verdicts["cut"].detail == ["shape: flagged for review",
                                                                  "values: flagged for review"]
    assert verdicts["cut"].failed == ["shape", "values"]


def test_the_in_kernel_check_raises_on_failure():
    cases = assignment()
    cases.check("cut", "values", {"my_patchify": own_patchify})
    with pytest.raises(AssertionError, match="called the book's reference"):
        cases.check("cut", "values", {"my_patchify": vit_edu.patchify})


def test_checks_need_their_question_declared():
    with pytest.raises(ValueError, match="declare question 'nope'"):
        Cases("demo").add("nope", "x")
