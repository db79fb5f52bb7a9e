"""Plain data across the sandbox's wall: round trips, and forged messages refused before anything is allocated."""

from __future__ import annotations

import base64
import json
import resource

import pytest
import torch
from torch import nn

from vit_edu.homework.plain import PlainError, decode, dumps, encode, loads, recipe


def test_round_trip_keeps_values_types_and_structure():
    value = {"t": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([True, False]), "i": torch.arange(3),
             "n": (1, 2.5, float("nan"), None, "s", [True]), 4: torch.zeros(0, 2, dtype=torch.float64)}
    back = loads(dumps(value))
    assert set(back) == set(value)
    assert torch.equal(back["t"], value["t"]) and back["t"].dtype == torch.float32
    assert torch.equal(back["b"], value["b"]) and torch.equal(back["i"], value["i"])
    assert back["n"][:2] == (1, 2.5) and back["n"][2] != back["n"][2] and back["n"][3:] == (None, "s", [True])
    assert back[4].shape == (0, 2) and back[4].dtype == torch.float64


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused_before_allocation():
    # One number that claims to be 270 million: refused from the lengths alone.
    forged = {"tensor": base64.b64encode(b"\0" * 4).decode(), "dtype": "float32", "shape": [270_000_000]}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PlainError, match="numbers|bytes"):
        decode(forged)
    forged_small = {"tensor": base64.b64encode(b"\0" * 4).decode(), "dtype": "float32", "shape": [3]}
    with pytest.raises(PlainError, match="should hold 12 bytes"):
        decode(forged_small)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # kB: nothing near 1 GB was touched


def test_budgets_and_unknown_forms_are_refused():
    with pytest.raises(PlainError, match="more than"):
        decode([0] * 9_000_000)
    for bad in ({"tensor": "AAAA", "dtype": "complex64", "shape": [1]}, {"weird": 1}, {"dict": [[1]]},
                {"tensor": "AAAA", "dtype": "float32", "shape": [-1]}, {"dict": [[[1, 2], 3]]}):
        with pytest.raises(PlainError):
            decode(bad)
    with pytest.raises(PlainError, match="bytes, over"):
        loads("1" * 100, max_bytes=10)
    with pytest.raises(PlainError, match="not JSON"):
        loads("{")


def test_objects_are_built_only_for_inputs_and_only_from_the_allow_list():
    linear = nn.Linear(3, 2)
    data = encode([recipe("torch.nn.Linear", 3, 2, state=linear.state_dict())])
    with pytest.raises(PlainError, match="not plain data"):
        decode(data)  # an answer's data never builds an object
    built = decode(json.loads(json.dumps(data)), objects=True)[0]
    assert isinstance(built, nn.Linear) and torch.equal(built.weight, linear.weight)
    with pytest.raises(PlainError, match="only vit_edu and torch.nn"):
        decode({"object": "os.system", "args": ["echo hi"]}, objects=True)
    with pytest.raises(PlainError):
        recipe("subprocess.Popen")


def test_an_answer_that_is_not_plain_data_says_what_it_is():
    with pytest.raises(PlainError, match="still `...`"):
        encode(...)
    with pytest.raises(PlainError, match="is a function"):
        encode(lambda: 0)
