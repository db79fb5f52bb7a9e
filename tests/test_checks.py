"""The generic judge: what differs, in words, and the hint of the classic mistake an answer matches."""

from __future__ import annotations

import pytest
import torch

from vit_edu.homework.checks import Example, Mistake, check, judge, public_examples, run_example


def roundtrip(ex: Example) -> Example:
    return Example.from_data(ex.to_data())


def test_right_and_wrong_values_of_every_kind():
    ex = roundtrip(Example("f", {"t": torch.arange(4.0), "n": (3, 0.5), "b": torch.tensor([True, False]), "s": "c"}))
    assert judge({"t": torch.arange(4.0) + 1e-7, "n": (3, 0.5 + 1e-7), "b": torch.tensor([True, False]), "s": "c"},
                 ex) is None
    assert "shape" in judge({**ex.expect, "t": torch.arange(5.0)}, ex)[0]
    assert "['t']" in judge({**ex.expect, "t": torch.arange(4.0) * 2}, ex)[0]
    assert "booleans" in judge({**ex.expect, "b": torch.tensor([1.0, 0.0])}, ex)[0]
    assert "the int 3" in judge({**ex.expect, "n": (3.0, 0.5)}, ex)[0]
    assert "keys" in judge({"t": 1}, ex)[0]
    assert judge({**ex.expect, "t": torch.tensor([0.0, 1.0, float("nan"), 3.0])}, ex) is not None


def test_the_hint_of_the_matching_mistake():
    want = torch.arange(6.0).reshape(2, 3)
    ex = roundtrip(Example("f", want, mistakes=[Mistake("transposed", want.T), Mistake("doubled", shape=(2, 6)),
                                                Mistake("wrong order", want, sort_dim=1)]))
    assert judge(want.T, ex) == (judge(want.T, ex)[0], "transposed")
    assert judge(torch.zeros(2, 6), ex)[1] == "doubled"
    assert judge(want.flip(1), ex)[1] == "wrong order"
    assert judge(want + 1, ex)[1] == ""


def test_public_examples_of_by_hand_answers_check_the_form_only():
    form = roundtrip(Example("x", {"N": 1, "S": 1}, form_only=True))
    assert judge({"N": 196, "S": 197}, form) is None and judge({"N": 196}, form) is not None
    assert judge({"N": 196, "S": "197"}, form) is not None
    numbers = roundtrip(Example("x", torch.arange(1.0, 5.0).reshape(2, 2), sorted_values=True))
    assert judge([[4, 3], [2, 1]], numbers) is None and judge([[4, 3], [2, 2]], numbers) is not None


def test_adapters_turn_modules_and_losses_into_data():
    lin = torch.nn.Linear(2, 1)
    x = torch.ones(1, 2)
    ex = Example("f", None, args=[2], adapter={"apply": [x], "attrs": ["in_features"]})
    out = run_example(lambda n: lin, ex)
    assert out["class"] == "Linear" and out["in_features"] == 2 and torch.equal(out["output"], lin(x).detach())
    w = torch.tensor([1.0, 2.0])
    grads = run_example(lambda a, b: (a * b).sum(), Example("f", None, args=[w, w], adapter={"backward": [0]}))
    assert torch.equal(grads["grads"][0], w) and grads["output"].item() == 5.0
    with pytest.raises(AssertionError, match="raised ZeroDivisionError"):
        run_example(lambda: 1 / 0, Example("f", None, args=[]))
    with pytest.raises(AssertionError, match="still `...`"):
        run_example(..., Example("f", None, args=[]))


def test_public_check_names_the_mistake_and_the_values():
    assert {"ch01_patchify", "ch04_embed_tokens"} <= set(public_examples())
    with pytest.raises(AssertionError, match="permute before the final reshape"):
        check("ch01_patchify", my_patchify=lambda images, p: images.reshape(images.shape[0], -1, p * p))
    with pytest.raises(AssertionError, match="not defined"):
        check("ch01_patchify", my_patchify=None)
    with pytest.raises(KeyError, match="no public check"):
        check("no_such_question")


def test_a_check_of_part_of_a_value_judges_only_its_keys():
    ex = roundtrip(Example("runs", {3e-4: [0.5, 0.6]}, keys=[3e-4],
                           mistakes=[Mistake("percentages", {3e-4: [50.0, 60.0]})]))
    assert judge({3e-4: [0.5, 0.6], 3e-3: [0.0, 0.0]}, ex) is None
    assert judge({3e-4: [50.0, 60.0], 3e-3: [0.9, 0.9]}, ex)[1] == "percentages"
    assert "keys" in judge({3e-3: [0.5, 0.6]}, ex)[0]
