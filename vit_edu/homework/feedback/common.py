"""What every check uses: calling the student's code, reading tensors, comparing them, saying what differs."""

from __future__ import annotations

import math
from typing import Any

import torch


def require(obj: Any, name: str) -> Any:
    """Fail if the answer ``name`` is missing (``None``) or still the ``...`` placeholder."""
    if obj is None:
        raise AssertionError(f"`{name}` is not defined: run the cell that defines it, and the cells above it")
    if obj is Ellipsis:
        raise AssertionError(f"`{name}` is still `...`: replace the placeholder with your answer")
    return obj


def call(fn: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's function; an exception it raises becomes a failed check that names it."""
    require(fn, name)
    if not callable(fn):
        raise AssertionError(f"`{name}` should be a function, got {type(fn).__name__}")
    try:
        out = fn(*args, **kwargs)
    except Exception as e:
        raise AssertionError(f"{name}(...) raised {type(e).__name__}: {e}") from e
    if out is None or out is Ellipsis:
        raise AssertionError(f"{name}(...) returned {out!r}: replace `...` with code that returns the result")
    return out


def as_tensor(value: Any, name: str) -> torch.Tensor:
    """A float64 tensor from a tensor or a (nested) list of numbers, or a failed check saying what it got."""
    require(value, name)
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64)
    try:
        return torch.tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as e:
        raise AssertionError(f"`{name}` should be a tensor or a list of numbers, got {type(value).__name__}") from e


def expect_shape(t: Any, shape: tuple[int, ...], what: str, hint: str = "") -> torch.Tensor:
    """Fail unless ``t`` is a tensor of exactly ``shape``."""
    if not isinstance(t, torch.Tensor):
        raise AssertionError(f"{what} should be a torch.Tensor of shape {tuple(shape)}, got {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise AssertionError(f"{what} should have shape {tuple(shape)}, got {tuple(t.shape)}{hint}")
    return t


def close(a: Any, b: torch.Tensor, atol: float = 1e-5) -> bool:
    """True when ``a`` (a tensor or nested numbers) has ``b``'s shape and agrees to ``atol`` (relative 1e-4)."""
    try:
        a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return False
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=atol, rtol=1e-4)


def fmt(t: Any, digits: int = 4) -> str:
    """A short, readable list of a tensor's first values."""
    t = torch.as_tensor(t)
    flat = t.detach().flatten()[:8].double().tolist()
    text = ", ".join(f"{v:.{digits}g}" for v in flat)
    return f"[{text}{', …' if t.numel() > 8 else ''}]"


def seeded(*shape: int, seed: int) -> torch.Tensor:
    """Standard normal numbers of ``shape`` from their own generator: the same wherever they are drawn."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def as_tuple(got: Any, what: str) -> tuple:
    """``got`` as a tuple (a list or tuple of any depth; ``torch.Size`` too), or a failed check."""
    if not isinstance(got, (tuple, list, torch.Size)):
        raise AssertionError(f"{what} should be a tuple, got {type(got).__name__}")
    return tuple(tuple(x) if isinstance(x, (list, tuple, torch.Size)) else x for x in got)


def within(got: Any, want: float, tolerance: float, what: str) -> None:
    """Fail unless ``got`` is a finite number within ``tolerance`` of ``want``."""
    if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
        raise AssertionError(f"{what} should be a number, got {got!r}")
    if abs(got - want) > tolerance:
        raise AssertionError(f"{what} is {got:.4g}: not within {tolerance:g} of the reference run's value")
