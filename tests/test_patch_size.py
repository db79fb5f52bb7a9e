"""Chapter 8's patch-size experiment: the equal-seconds step counts, the checks, and the fields the chapter reads."""

import json
import re

import pytest

from vit_edu.training import CHECKPOINTS
from vit_edu.training import patch_size as ps

SECONDS = {4: 0.08, 8: 0.02, 16: 0.01}  # CPU seconds per step, as the equal-steps runs might measure them


def test_equal_seconds_steps_follow_from_the_seconds_per_step():
    steps = ps.equal_seconds_steps(SECONDS, 100, reference=8)
    assert steps == {4: 25, 8: 100, 16: 200}  # budget 100 × 0.02 s = 2 s
    for p, n in steps.items():
        assert n * SECONDS[p] == pytest.approx(100 * SECONDS[8])
    assert ps.equal_seconds_steps(SECONDS, 100, reference=4) == {4: 100, 8: 400, 16: 800}


@pytest.mark.parametrize("sizes, named", [([4, 5, 16], "[5]"), ([0, 8], "[0]"), ([4, 64, 12], "[64, 12]")])
def test_bad_patch_sizes_raise_naming_them(sizes, named):
    with pytest.raises(ValueError, match=re.escape(f"patch sizes {named} do not tile a 32×32 image")):
        ps.check_patch_sizes(sizes, 32)


def test_other_bad_settings_raise_naming_values():
    with pytest.raises(ValueError, match="at least two different patch sizes, got \\[8, 8\\]"):
        ps.check_patch_sizes([8, 8], 32)
    with pytest.raises(ValueError, match="reference patch size 2"):
        ps.equal_seconds_steps(SECONDS, 100, reference=2)
    with pytest.raises(ValueError, match="non-positive seconds \\{16: 0.0\\}"):
        ps.equal_seconds_steps({**SECONDS, 16: 0.0}, 100, reference=8)
    with pytest.raises(ValueError, match="reference patch size 2 is not among"):
        ps.run([0, 1], patch_sizes=(4, 8), reference=2, seconds=SECONDS)
    with pytest.raises(ValueError, match="at least 2 seeds, got \\[0\\]"):
        ps.run([0], seconds=SECONDS)
    with pytest.raises(ValueError, match="'4:0.1'"):
        ps.parse_seconds(["4:0.1"])
    assert ps.parse_seconds(["4=0.09", "16=0.01"]) == {4: 0.09, 16: 0.01}
    with pytest.raises(ValueError, match="given for patch sizes \\[4, 8\\], need \\[4, 8, 16\\]"):
        ps.run([0, 1], seconds={4: 0.1, 8: 0.02})


def test_cpu_seconds_per_step_pool_every_seed():
    runs = [{"patch": 4, "steps": 100, "cpu_seconds": 9.0}, {"patch": 4, "steps": 100, "cpu_seconds": 11.0},
            {"patch": 8, "steps": 100, "cpu_seconds": 2.0}, {"patch": 8, "steps": 300, "cpu_seconds": 6.0}]
    assert ps.cpu_seconds_per_step(runs) == pytest.approx({4: 0.1, 8: 0.02})
    with pytest.raises(ValueError, match="run of patch 8 has steps=100, cpu_seconds=0.0"):
        ps.cpu_seconds_per_step([{"patch": 8, "steps": 100, "cpu_seconds": 0.0}])
    with pytest.raises(ValueError, match="no runs"):
        ps.cpu_seconds_per_step([])


def test_two_step_run_through_the_command_line_gives_what_the_chapter_reads(tmp_path):
    out = tmp_path / "patch_size.json"
    ps.main(["--seeds", "0", "1", "--steps", "2", "--train-size", "64", "--out", str(out),
             "--seconds-per-step", "4=0.08", "8=0.02", "16=0.01"])
    data = json.loads(out.read_text())
    assert data["step_counts"] == {"equal steps": {"4": 2, "8": 2, "16": 2},
                                   "equal seconds": {"4": 1, "8": 2, "16": 4}}  # round(0.5) = 0, raised to 1
    assert data["tokens"] == {"4": 64, "8": 16, "16": 4} and data["seconds_measured"] is False
    assert len(data["runs"]) == 2 * 3 * 2  # budgets × patch sizes × seeds
    for r in data["runs"]:
        assert r["steps"] == data["step_counts"][r["budget"]][str(r["patch"])]
        assert 0 <= r["test_accuracy"] <= 1 and r["cpu_seconds"] > 0 and r["wall_seconds"] >= 0
    # the reference patch size has the same steps in both budgets: one run, reported twice
    ref = [r for r in data["runs"] if r["patch"] == 8 and r["seed"] == 0]
    assert len(ref) == 2 and ref[0]["test_accuracy"] == ref[1]["test_accuracy"]


def test_without_given_seconds_the_equal_steps_runs_set_the_budget():
    data = ps.run([0, 1], patch_sizes=(8, 16), steps=4, train_size=64)
    assert data["seconds_measured"] is True and data["cpu_seconds"] > 0
    equal_steps = [r for r in data["runs"] if r["budget"] == "equal steps"]
    per_step = ps.cpu_seconds_per_step(equal_steps)
    assert data["cpu_seconds_per_step"] == {str(p): round(s, 6) for p, s in per_step.items()}
    assert data["step_counts"]["equal seconds"] == {str(p): n for p, n in ps.equal_seconds_steps(per_step, 4, 8).items()}
    assert data["budget_cpu_seconds"] == pytest.approx(4 * per_step[8], abs=0.01)


def test_shipped_result_is_what_the_chapter_reads():
    data = json.loads((CHECKPOINTS / "patch_size.json").read_text())
    assert data["patch_sizes"] == [4, 8, 16] and data["seeds"] == [0, 1, 2] and data["threads"] == 1
    seconds = {int(p): s for p, s in data["cpu_seconds_per_step"].items()}
    expected = ps.equal_seconds_steps(seconds, data["steps"], data["reference_patch"])
    assert data["seconds_measured"] is True  # the CPU seconds per step come from the equal-steps runs themselves
    measured = ps.cpu_seconds_per_step([r for r in data["runs"] if r["budget"] == "equal steps"])
    assert all(abs(measured[p] - s) < 1e-5 for p, s in seconds.items())
    assert data["step_counts"]["equal seconds"] == {str(p): n for p, n in expected.items()}
    for budget in ps.BUDGETS:
        for p in data["patch_sizes"]:
            rows = [r for r in data["runs"] if r["budget"] == budget and r["patch"] == p]
            assert sorted(r["seed"] for r in rows) == data["seeds"]
            assert {r["steps"] for r in rows} == {data["step_counts"][budget][str(p)]}
