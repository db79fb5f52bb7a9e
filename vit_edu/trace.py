"""Record the shape of every stage of a forward pass, so shape tables come from the code itself.

The model calls :func:`record` at each stage; it costs one context-variable lookup when nothing listens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

Shape = tuple[int, ...]
_active: ContextVar[list[tuple[str, Shape]] | None] = ContextVar("vit_edu_trace", default=None)
_prefix: ContextVar[str] = ContextVar("vit_edu_trace_prefix", default="")


def record(stage: str, tensor: torch.Tensor) -> None:
    """Note ``tensor``'s shape under ``stage`` if a :func:`recording` is active."""
    log = _active.get()
    if log is not None:
        log.append((_prefix.get() + stage, tuple(tensor.shape)))


@contextmanager
def scope(name: str) -> Iterator[None]:
    """Prefix the stages recorded inside the block with ``"name: "`` (e.g. ``"block 3: MLP hidden"``)."""
    if _active.get() is None:
        yield
        return
    token = _prefix.set(f"{name}: ")
    try:
        yield
    finally:
        _prefix.reset(token)


@contextmanager
def recording() -> Iterator[list[tuple[str, Shape]]]:
    """Collect ``(stage, shape)`` pairs from every :func:`record` call inside the ``with`` block."""
    log: list[tuple[str, Shape]] = []
    token = _active.set(log)
    try:
        yield log
    finally:
        _active.reset(token)


def trace_shapes(model: nn.Module, x: torch.Tensor, *, all_blocks: bool = False) -> list[tuple[str, Shape]]:
    """Run ``model(x)`` once and return ``[(stage name, shape), ...]`` in the order the stages ran.

    Every encoder block has the same shapes, so by default only block 1's stages are kept;
    ``all_blocks=True`` keeps every block's.
    """
    with torch.no_grad(), recording() as log:
        model(x, return_attention=True)
    if all_blocks:
        return log
    return [(stage, shape) for stage, shape in log if not stage.startswith("block ") or stage.startswith("block 1:")]


def count_parameters(model: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of scalar parameters (buffers such as a fixed sin-cos table are not parameters)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def format_shape(shape: Shape, *, batch: str | None = None) -> str:
    """``(2, 197, 768)`` -> ``"2 × 197 × 768"``; with ``batch="B"`` the first size is written ``B``."""
    sizes = [str(s) for s in shape]
    if batch is not None and sizes:
        sizes[0] = batch
    return " × ".join(sizes)


def shape_table(trace: list[tuple[str, Shape]], *, batch: str | None = "B") -> str:
    """A Markdown table of a :func:`trace_shapes` result, ready for ``IPython.display.Markdown``."""
    lines = ["| stage | shape |", "|---|---|"]
    lines += [f"| {stage} | {format_shape(shape, batch=batch)} |" for stage, shape in trace]
    return "\n".join(lines)
