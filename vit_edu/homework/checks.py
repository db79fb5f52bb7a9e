"""Homework checks as data: inputs, the expected output, and the classic mistakes' outputs with their hints.

A check knows no solution. The instructor's build computes, with the book's references, what a right answer
returns on each input and what each classic mistake returns (``book/homework/hidden/``); this module only runs
the student's answer on the inputs (:func:`run_example`) and compares (:func:`judge`). The public checks a
student runs are :func:`check` on the stored public examples in ``vit_edu/homework/public/``; the hidden checks
are the same data drawn from the instructor's secret, judged by the grader outside the submission's sandbox.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch

from vit_edu.homework.plain import decode, encode

PUBLIC = Path(__file__).with_name("public")


@dataclass
class Mistake:
    """A classic mistake: what it returns on the example's inputs (or just its shape), and the hint it earns."""

    hint: str
    output: Any = None
    shape: tuple[int, ...] | None = None  # recognised by its shape alone
    sort_dim: int | None = None  # recognised after sorting both along this dim (right values, wrong order)


@dataclass
class Example:
    """One call of the student's answer (or one read of a value) and what it should give."""

    answer: str  # the name the student defines
    expect: Any  # the right output, as data
    args: list[Any] | None = None  # None: the answer is a value, not called
    kwargs: dict[str, Any] = field(default_factory=dict)
    what: str = ""  # how messages name the call, e.g. "my_patchify(images of shape (1, 1, 4, 6), 2)"
    atol: float = 1e-5
    rtol: float = 1e-4
    shape_hint: str = ""  # said when the shape is wrong, e.g. " (B, N, C·P·P)"
    mistakes: list[Mistake] = field(default_factory=list)
    keys: list[Any] | None = None  # judge only these entries of a dict answer (one check per part of one value)
    form_only: bool = False  # compare types, shapes and keys, not values (a public check of a by-hand answer)
    sorted_values: bool = False  # compare the sorted numbers only (every pixel once, in any order)
    # How the returned object becomes data: {"apply": [inputs], "attrs": [names]} calls a returned module on
    # inputs and reads attributes; {"backward": [argument indices]} returns the loss and those arguments' grads.
    adapter: dict[str, Any] | None = None

    def to_data(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("expect", "args", "kwargs", "adapter", "keys"):
            data[key] = encode(getattr(self, key))
        data["mistakes"] = [{**asdict(m), "output": encode(m.output)} for m in self.mistakes]
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Example:
        """An example from its data; a call sent to the grading sandbox has no ``expect`` and no mistakes."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["expect"] = decode(data.get("expect"))
        fields["kwargs"] = decode(data.get("kwargs", {"dict": []}), objects=True)
        fields["args"] = decode(data.get("args"), objects=True)
        fields["keys"] = decode(data.get("keys"))
        fields["adapter"] = decode(data.get("adapter"), objects=True)
        fields["mistakes"] = [Mistake(**{**m, "output": decode(m["output"]),
                                         "shape": tuple(m["shape"]) if m.get("shape") else None})
                              for m in data.get("mistakes", [])]
        return cls(**fields)


# ---------------------------------------------------------------- running an answer


def run_example(answer: Any, example: Example) -> Any:
    """What the student's ``answer`` gives on ``example`` (before encoding): its value, or its call's output."""
    if answer is Ellipsis:
        raise AssertionError(f"`{example.answer}` is still `...`: replace the placeholder with your answer")
    if example.args is None:
        return answer
    if not callable(answer):
        raise AssertionError(f"`{example.answer}` should be a function, got {type(answer).__name__}")
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in example.args]
    adapter = example.adapter or {}
    for i in adapter.get("backward", []):
        args[i] = args[i].detach().clone().requires_grad_(True)
    try:
        out = answer(*args, **example.kwargs)
    except Exception as e:
        raise AssertionError(f"{example.what or example.answer}(...) raised {type(e).__name__}: {e}") from e
    if out is None or out is Ellipsis:
        raise AssertionError(f"{example.answer}(...) returned {out!r}: replace `...` with code that returns the result")
    if "backward" in adapter:
        grads = None
        if isinstance(out, torch.Tensor) and out.requires_grad and out.numel() == 1:
            out.reshape(()).backward()
            grads = [args[i].grad for i in adapter["backward"]]
        out = {"output": out.detach() if isinstance(out, torch.Tensor) else out, "grads": grads}
    elif "apply" in adapter:
        applied = None
        if callable(out):
            with torch.no_grad():
                applied = out(*adapter["apply"])
        out = {"class": type(out).__name__, "output": applied,
               **{name: _attribute(out, name) for name in adapter.get("attrs", [])}}
    return out


def _attribute(obj: Any, name: str) -> Any:
    """An attribute as data (``None`` when missing); tuples and tensors as they are."""
    value = getattr(obj, name, None)
    return value.detach() if isinstance(value, torch.Tensor) else value


# ---------------------------------------------------------------- judging


def fmt(value: Any, digits: int = 4) -> str:
    """A short, readable form of a value: a tensor's first numbers, a number, a short repr."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().flatten()[:8].double().tolist()
        text = ", ".join(f"{v:.{digits}g}" for v in flat)
        return f"[{text}{', …' if value.numel() > 8 else ''}]"
    if isinstance(value, float):
        return f"{value:.{digits + 1}g}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _as_tensor(value: Any) -> torch.Tensor | None:
    """A tensor from a tensor or nested numbers (a by-hand answer typed as lists), else None."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        try:
            return torch.tensor(value, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            return None
    return None


def difference(got: Any, want: Any, ex: Example, path: str = "") -> str | None:
    """Where and how ``got`` differs from ``want`` (None when it matches), in words."""
    if isinstance(want, torch.Tensor):
        t = _as_tensor(got)
        if t is None:
            return f"{path} should be a tensor of shape {tuple(want.shape)}, got {type(got).__name__}"
        if ex.sorted_values:
            t, want = t.flatten().sort().values, want.flatten().sort().values
            if t.shape != want.shape or not torch.equal(t.double(), want.double()):
                return f"{path} should hold the numbers {fmt(want)} in some order, got {fmt(t)}"
            return None
        if tuple(t.shape) != tuple(want.shape):
            return f"{path} should have shape {tuple(want.shape)}, got {tuple(t.shape)}{ex.shape_hint}"
        if ex.form_only:
            return None
        if want.dtype == torch.bool:
            if t.dtype != torch.bool:
                return f"{path} should hold booleans, got {t.dtype}"
            return None if torch.equal(t, want) else f"{path} should be {fmt(want.int())}, got {fmt(t.int())}"
        if not want.is_floating_point():
            ok = not t.is_floating_point() and torch.equal(t.long(), want.long())
        else:
            ok = bool(torch.isfinite(t.double()).all()) and torch.allclose(t.double(), want.double(), atol=ex.atol,
                                                                           rtol=ex.rtol)
        return None if ok else f"{path} should be {fmt(want)}, got {fmt(t)}"
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            size = len(got) if isinstance(got, (tuple, list)) else type(got).__name__
            return f"{path} should be a tuple of {len(want)}, got {size}"
        for i, (g, w) in enumerate(zip(got, want)):
            if (d := difference(g, w, ex, f"{path}[{i}]")) is not None:
                return d
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            keys = sorted(got, key=str) if isinstance(got, dict) else type(got).__name__
            return f"{path} should be a dict with the keys {sorted(want, key=str)}, got {keys}"
        for key in want:
            if (d := difference(got[key], want[key], ex, f"{path}[{key!r}]")) is not None:
                return d
        return None
    if ex.form_only:
        kind = float if isinstance(want, float) else type(want)
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) if kind is float else isinstance(got, kind)
        return None if ok else f"{path} should be a {kind.__name__}, got {fmt(got)}"
    if isinstance(want, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
            return f"{path} should be a number, got {fmt(got)}"
        return None if abs(got - want) <= ex.atol + ex.rtol * abs(want) else f"{path} should be {fmt(want)}, got " \
                                                                             f"{fmt(got)}"
    if isinstance(want, bool) or want is None:
        return None if got is want else f"{path} should be {want!r}, got {fmt(got)}"
    if isinstance(want, int) and (isinstance(got, bool) or not isinstance(got, int)):
        return f"{path} should be the int {want}, got {fmt(got)}"
    return None if got == want else f"{path} should be {want!r}, got {fmt(got)}"


def _sorted(value: Any, dim: int) -> Any:
    t = _as_tensor(value)
    return None if t is None or t.dim() <= dim else t.sort(dim=dim).values


def hint(got: Any, ex: Example) -> str:
    """The hint of the first classic mistake ``got`` matches ("" when none does)."""
    t = _as_tensor(got)
    for m in ex.mistakes:
        if m.shape is not None:
            if t is not None and tuple(t.shape) == tuple(m.shape):
                return m.hint
        elif m.sort_dim is not None:
            g, w = _sorted(got, m.sort_dim), _sorted(m.output, m.sort_dim)
            if g is not None and w is not None and difference(g, w, ex) is None:
                return m.hint
        elif difference(got, m.output, ex) is None:
            return m.hint
    return ""


def judge(got: Any, ex: Example) -> tuple[str, str] | None:
    """None when ``got`` is right; else (what differs, the classic mistake's hint or "")."""
    if ex.keys is not None and isinstance(got, dict):
        got = {k: got[k] for k in ex.keys if k in got}
    d = difference(got, ex.expect, ex)
    return None if d is None else (d, hint(got, ex))


# ---------------------------------------------------------------- the public checks


@cache
def public_examples() -> dict[str, list[Example]]:
    """Question -> its public examples, from every ``public/*.json`` shipped with the package."""
    out: dict[str, list[Example]] = {}
    for path in sorted(PUBLIC.glob("*.json")):
        for question, spec in json.loads(path.read_text())["questions"].items():
            out[question] = [Example.from_data(e) for e in spec["public"]]
    return out


def _run_and_judge(examples: list[Example], answers: dict[str, Any]) -> None:
    """Run each example on the answer it names and raise ``AssertionError`` at the first that differs."""
    for ex in examples:
        answer = answers.get(ex.answer)
        if answer is None:
            raise AssertionError(f"`{ex.answer}` is not defined: run the cell that defines it, and the cells above it")
        verdict = judge(run_example(answer, ex), ex)
        if verdict is not None:
            where, why = verdict
            raise AssertionError(f"{ex.what or ex.answer}{where}{': ' + why if why else ''}")


def check(question: str, **answers: Any) -> None:
    """The public check of ``question`` on the student's answers, by name: ``AssertionError`` saying what differs,
    with a hint for a classic mistake (``check("ch01_patchify", my_patchify=my_patchify)``)."""
    examples = public_examples().get(question)
    if examples is None:
        raise KeyError(f"no public check named {question!r}; have {sorted(public_examples())}")
    _run_and_judge(examples, answers)
