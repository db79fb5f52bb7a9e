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
    a: tuple[float, ...] = ()
    b: tuple[float, ...] = ()
    bounds: tuple[float, float] | None = None  # the smallest and largest difference possible, when the caller knows them

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0: the data support a difference in that direction."""
        return self.low > 0 or self.high < 0

    @property
    def outside_bounds(self) -> dict[str, float]:
        """The possible extremes the interval runs past ({"smallest": …, "largest": …}): a symmetric t interval from
        a few values can leave the range the measure allows."""
        if self.bounds is None:
            return {}
        lo, hi = self.bounds
        return {name: v for name, v, out in (("smallest", lo, self.low < lo), ("largest", hi, self.high > hi)) if out}

    def format(self, scale: float = 1.0, digits: int = 1, unit: str = "", level_unit: str = "") -> str:
        """E.g. ``+1.2 points (95% CI −0.3 to +2.7, 5 seeds)`` with ``scale=100, unit=" points"``.

        Two arms at the same value on every seed (both at 100%, say) have no spread to make an interval from: that is
        written as such (with ``level_unit="%"``: ``both arms 100.0% on every seed (3 seeds)``), not as a zero-width
        interval that would read as certainty. An interval that runs past ``bounds`` says so.
        """
        sign = lambda v: f"{v * scale:+.{digits}f}".replace("-", "−")  # noqa: E731
        levels = set(self.a) | set(self.b)
        if self.a and len(levels) == 1:
            return f"both arms {next(iter(levels)) * scale:.{digits}f}{level_unit} on every seed ({self.n} seeds)"
        past = "".join(f"; past {sign(v)}, the {name} possible" for name, v in self.outside_bounds.items())
        return f"{sign(self.mean)}{unit} ({self.confidence:.0%} CI {sign(self.low)} to {sign(self.high)}, {self.n} seeds{past})"


def paired_difference(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> PairedDifference:
    """Mean of ``b[i] - a[i]`` and its t interval; ``a[i]`` and ``b[i]`` must come from the same seed.

    ``bounds``: the smallest and largest difference the measure allows (for a gain over chance 1/16 in accuracy,
    ``(-1/16, 15/16)``), so that an interval leaving that range is flagged when printed.
    """
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
    if bounds is not None and not bounds[0] < bounds[1]:
        raise ValueError(f"bounds must be (smallest, largest) with smallest < largest, got {bounds}")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, df=n - 1)) * sd / math.sqrt(n)
    return PairedDifference(mean, mean - half, mean + half, n, confidence, tuple(diffs), tuple(a), tuple(b), bounds)


def mean_range(values: Sequence[float], scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    """E.g. ``82.1% (72.3–92.0)`` with ``scale=100, unit="%"``: one arm's mean over seeds, then its lowest and highest."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_range needs at least one value, got none")
    mean, low, high = (f"{scale * v:.{digits}f}" for v in (sum(values) / len(values), min(values), max(values)))
    return f"{mean}{unit} ({low}–{high})"
