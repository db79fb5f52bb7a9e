"""Plain data across the sandbox's wall: tensors, numbers, strings, lists, tuples and dicts as JSON, and back.

What a submission's process returns is read by the grader as untrusted bytes. :func:`decode` builds nothing it
has not checked: a tensor's bytes must match its shape and dtype before any storage is allocated, and the whole
message has a budget of numbers. The same encoding carries the checks' inputs, expected values and the classic
mistakes' outputs (:mod:`vit_edu.homework.checks`), so a public check's data file is plain JSON too.

Arguments that are objects (an ``nn.Linear``, a ``ViTConfig``, an encoder block with its weights) travel as a
recipe: the dotted name of a class of ``vit_edu`` or ``torch.nn``, its arguments and its state; :func:`decode`
builds them only from that allow-list.
"""

from __future__ import annotations

import base64
import importlib
import json
import math
from typing import Any

import torch

MAX_NUMBERS = 8_000_000  # numbers one message may hold in all (32 MB of float32)
DTYPES = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "int64", "int32", "int16",
                                                  "int8", "uint8", "bool")}
ALLOWED_PREFIXES = ("vit_edu.", "torch.nn.")


class PlainError(ValueError):
    """Data that is not what the encoding allows (a forged tensor, an unknown type, too many numbers)."""


class Recipe(dict):
    """An object argument as data (made by :func:`recipe`): it encodes as itself."""


def encode(obj: Any) -> Any:
    """``obj`` as JSON-ready data; a tensor's values travel as base64 bytes with its dtype and shape."""
    if isinstance(obj, Recipe):
        return dict(obj)
    if obj is None or type(obj) in (bool, int, str):
        return obj
    if type(obj) is float:
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        if str(t.dtype).removeprefix("torch.") not in DTYPES:
            t = t.double() if t.is_floating_point() or t.is_complex() else t.long()
        return {"tensor": base64.b64encode(t.numpy().tobytes()).decode(), "dtype": str(t.dtype).removeprefix("torch."),
                "shape": list(t.shape)}
    if isinstance(obj, torch.Size):
        return {"tuple": list(obj)}
    if isinstance(obj, tuple):
        return {"tuple": [encode(x) for x in obj]}
    if isinstance(obj, list):
        return [encode(x) for x in obj]
    if isinstance(obj, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, bool):
        return bool(obj)
    if hasattr(obj, "__index__") and not hasattr(obj, "shape"):
        return int(obj)
    if isinstance(obj, (float, int)) or hasattr(obj, "__float__") and not hasattr(obj, "shape"):
        return encode(float(obj))
    if obj is Ellipsis:
        raise PlainError("the answer is still `...`: replace the placeholder with your answer")
    raise PlainError(f"the answer is a {type(obj).__name__}, not a tensor, number, string, list, tuple or dict")


def recipe(cls: str, *args: Any, state: dict[str, torch.Tensor] | None = None, **kwargs: Any) -> Recipe:
    """An object argument as data: ``cls(*args, **kwargs)`` with ``state`` loaded (``load_state_dict``)."""
    if not cls.startswith(ALLOWED_PREFIXES):
        raise PlainError(f"{cls} is not a vit_edu or torch.nn class")
    return Recipe({"object": cls, "args": encode(list(args)), "kwargs": encode(kwargs),
                   "state": encode(state) if state is not None else None})


def decode(data: Any, budget: list[int] | None = None, *, objects: bool = False) -> Any:
    """The object ``data`` encodes, checked as it is read; :class:`PlainError` for anything else. ``objects``
    allows :func:`recipe` arguments (a check's inputs), never a submission's answer."""
    budget = [MAX_NUMBERS] if budget is None else budget
    if data is None or type(data) in (bool, int, float, str):
        _spend(budget, 1)
        return data
    if isinstance(data, list):
        _spend(budget, len(data))
        return [decode(x, budget, objects=objects) for x in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise PlainError(f"not plain data: {type(data).__name__}")
    if "tensor" in data:
        return _tensor(data, budget)
    if set(data) == {"float"} and data["float"] in ("nan", "inf", "-inf"):
        return float(data["float"])
    if set(data) == {"tuple"} and isinstance(data["tuple"], list):
        _spend(budget, len(data["tuple"]))
        return tuple(decode(x, budget, objects=objects) for x in data["tuple"])
    if set(data) == {"dict"} and isinstance(data["dict"], list):
        _spend(budget, len(data["dict"]))
        out = {}
        for item in data["dict"]:
            if not isinstance(item, list) or len(item) != 2:
                raise PlainError("a dict item should be a [key, value] pair")
            key = decode(item[0], budget, objects=objects)
            if not isinstance(key, (str, int, float, bool, tuple)) and key is not None:
                raise PlainError(f"a dict key should be a string, number or tuple, got {type(key).__name__}")
            out[key] = decode(item[1], budget, objects=objects)
        return out
    if "object" in data and objects:
        return _build(data, budget)
    raise PlainError(f"not plain data: a dict with keys {sorted(data)[:5]}")


def _spend(budget: list[int], n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise PlainError(f"more than {MAX_NUMBERS:,} numbers")


def _tensor(data: dict[str, Any], budget: list[int]) -> torch.Tensor:
    """A tensor whose byte count is checked against its shape and dtype before it is built."""
    dtype, shape, raw = data.get("dtype"), data.get("shape"), data.get("tensor")
    if dtype not in DTYPES or not isinstance(raw, str) or not isinstance(shape, list) or not all(
            type(s) is int and 0 <= s for s in shape) or len(shape) > 8:
        raise PlainError("a tensor needs a known dtype, a list of sizes (at most 8) and base64 bytes")
    numel = math.prod(shape)
    _spend(budget, numel)
    itemsize = torch.empty((), dtype=DTYPES[dtype]).element_size()
    if len(raw) != 4 * math.ceil(numel * itemsize / 3):
        raise PlainError(f"a tensor of shape {tuple(shape)} and dtype {dtype} should hold {numel * itemsize} "
                         f"bytes, not {len(raw) * 3 // 4}")
    buffer = base64.b64decode(raw, validate=True)
    if len(buffer) != numel * itemsize:
        raise PlainError(f"a tensor of shape {tuple(shape)} should hold {numel * itemsize} bytes, got {len(buffer)}")
    if numel == 0:
        return torch.empty(shape, dtype=DTYPES[dtype])
    return torch.frombuffer(bytearray(buffer), dtype=DTYPES[dtype]).reshape(shape).clone()


def _build(data: dict[str, Any], budget: list[int]) -> Any:
    """An object from its :func:`recipe` (allow-listed classes only)."""
    cls = data["object"]
    if not isinstance(cls, str) or not cls.startswith(ALLOWED_PREFIXES):
        raise PlainError(f"cannot build {cls!r}: only vit_edu and torch.nn classes")
    module, _, name = cls.rpartition(".")
    args = decode(data.get("args", []), budget, objects=True)
    kwargs = decode(data.get("kwargs", {"dict": []}), budget, objects=True)
    obj = getattr(importlib.import_module(module), name)(*args, **kwargs)
    if data.get("state") is not None:
        obj.load_state_dict(decode(data["state"], budget))
    return obj


def dumps(obj: Any) -> str:
    """``obj`` encoded, as one line of JSON."""
    return json.dumps(encode(obj), separators=(",", ":"))


def loads(text: str | bytes, max_bytes: int = 256 * 1024**2, *, objects: bool = False) -> Any:
    """The object a line of JSON encodes, refusing messages over ``max_bytes``."""
    if len(text) > max_bytes:
        raise PlainError(f"the message is {len(text):,} bytes, over the {max_bytes:,} allowed")
    try:
        return decode(json.loads(text), objects=objects)
    except (json.JSONDecodeError, RecursionError, UnicodeDecodeError) as e:
        raise PlainError(f"not JSON: {type(e).__name__}") from e
