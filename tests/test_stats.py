"""vit_edu.stats: the paired difference and its t interval."""

import pytest
from scipy import stats

from vit_edu.stats import mean_range, paired_difference


def test_interval_matches_scipy_one_sample_t_on_the_differences():
    a = [0.80, 0.91, 0.85, 0.88, 0.79]
    b = [0.83, 0.92, 0.90, 0.89, 0.84]
    result = paired_difference(a, b)
    diffs = [y - x for x, y in zip(a, b)]
    low, high = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    assert result.low == pytest.approx(low) and result.high == pytest.approx(high)
    assert result.mean == pytest.approx(sum(diffs) / 5) and result.n == 5
    assert result.excludes_zero


def test_pairing_removes_the_seed_to_seed_spread():
    # Each arm varies a lot from seed to seed, but b is always a little above a: only pairing sees it.
    a = [0.60, 0.90, 0.75]
    b = [0.62, 0.92, 0.77]
    assert paired_difference(a, b).excludes_zero
    noisy = paired_difference(a, [0.62, 0.88, 0.79])
    assert not noisy.excludes_zero and noisy.low < 0 < noisy.high


def test_identical_differences_give_a_point_interval():
    result = paired_difference([0.1, 0.2], [0.3, 0.4])
    assert result.low == pytest.approx(0.2) == result.high


def test_format_uses_scale_unit_and_minus_sign():
    text = paired_difference([0.5, 0.5, 0.5], [0.49, 0.50, 0.48]).format(scale=100, unit=" points")
    assert text.startswith("−1.0 points (95% CI") and text.endswith("3 seeds)")


def test_mean_range_gives_the_mean_then_the_lowest_and_highest():
    assert mean_range([0.723, 0.92, 0.82], scale=100, unit="%") == "82.1% (72.3–92.0)"
    assert mean_range([0.49, 0.53], digits=2) == "0.51 (0.49–0.53)"
    with pytest.raises(ValueError, match="got none"):
        mean_range([])


@pytest.mark.parametrize(
    ("a", "b", "confidence", "message"),
    [
        ([1.0, 2.0], [1.0], 0.95, "got 2 and 1"),
        ([1.0], [2.0], 0.95, "at least 2 paired seeds, got 1"),
        ([1.0, 2.0], [1.0, 2.0], 1.5, "got 1.5"),
        ([1.0, float("nan")], [1.0, 2.0], 0.95, "finite, got [nan]"),
    ],
)
def test_bad_input_names_the_offending_values(a, b, confidence, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        paired_difference(a, b, confidence)


def test_arms_at_the_same_value_on_every_seed_are_not_a_zero_width_interval():
    text = paired_difference([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]).format(scale=100, unit=" points", level_unit="%")
    assert text == "both arms 100.0% on every seed (3 seeds)"
    # Equal differences with different levels still give the (point) interval.
    assert "CI +10.0 to +10.0" in paired_difference([0.5, 0.6], [0.6, 0.7]).format(scale=100)


def test_an_interval_past_the_possible_range_says_so():
    chance = 1 / 16
    gain = paired_difference([chance] * 3, [0.85, 0.95, 0.9], bounds=(-chance, 1 - chance))
    assert gain.high > 1 - chance and list(gain.outside_bounds) == ["largest"]
    assert gain.format(scale=100, unit=" points").endswith("3 seeds; past +93.8, the largest possible)")
    inside = paired_difference([0.5, 0.5, 0.5], [0.52, 0.55, 0.51], bounds=(-1, 1))
    assert inside.outside_bounds == {} and inside.format(scale=100).endswith("3 seeds)")
    with pytest.raises(ValueError, match=r"got \(1, 0\)"):
        paired_difference([0.1, 0.2], [0.2, 0.3], bounds=(1, 0))
