"""Paired comparisons of two arms run on the same seeds: the mean per-seed difference and its t interval; and how
the chapters write one arm's values over seeds, mean (lowest–highest).

Two arms trained with the same seeds share their data order and initialisation, so their per-seed differences
vary far less than either arm does; overlapping ±1σ bars of the two arms say little about the difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class PairedDifference:
    """The mean of ``b - a`` over paired seeds, with a two-sided Student-t confidence interval."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float
    differences: tuple[float, ...]

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0: the data support a difference in that direction."""
        return self.low > 0 or self.high < 0

    def format(self, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
        """E.g. ``+1.2 points (95% CI −0.3 to +2.7, 5 seeds)`` with ``scale=100, unit=" points"``."""
        mean, low, high = (f"{v * scale:+.{digits}f}".replace("-", "−") for v in (self.mean, self.low, self.high))
        return f"{mean}{unit} ({self.confidence:.0%} CI {low} to {high}, {self.n} seeds)"


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedDifference:
    """Mean of ``b[i] - a[i]`` and its t interval; ``a[i]`` and ``b[i]`` must come from the same seed."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if len(a) != len(b):
        raise ValueError(f"paired arms need one value per seed each, got {len(a)} and {len(b)} values")
    if len(a) < 2:
        raise ValueError(f"an interval needs at least 2 paired seeds, got {len(a)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    bad = [v for v in a + b if not math.isfinite(v)]
    if bad:
        raise ValueError(f"paired values must be finite, got {bad}")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, df=n - 1)) * sd / math.sqrt(n)
    return PairedDifference(mean, mean - half, mean + half, n, confidence, tuple(diffs))


def mean_range(values: Sequence[float], scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    """E.g. ``82.1% (72.3–92.0)`` with ``scale=100, unit="%"``: one arm's mean over seeds, then its lowest and highest."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_range needs at least one value, got none")
    mean, low, high = (f"{scale * v:.{digits}f}" for v in (sum(values) / len(values), min(values), max(values)))
    return f"{mean}{unit} ({low}–{high})"
