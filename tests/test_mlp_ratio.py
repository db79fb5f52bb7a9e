"""vit_edu.training.mlp_ratio: the MLP-width experiment of chapter 7, and its shipped result."""

import json

import pytest

from vit_edu.training import CHECKPOINTS
from vit_edu.training.mlp_ratio import RATIOS, main, run_one


def test_a_ratio_outside_the_experiment_names_itself():
    with pytest.raises(ValueError, match="got 3"):
        run_one(3, seed=0)


def test_the_script_trains_every_width_and_the_widths_grow(tmp_path):
    out = tmp_path / "mr.json"
    main(["--seeds", "0", "--steps", "61", "--train-size", "32", "--out", str(out)])
    rows = json.loads(out.read_text())["results"]
    assert [int(k) for k in rows] == list(RATIOS)
    assert [rows[k][0]["mlp_dim"] for k in rows] == [128 * r for r in RATIOS]
    params = [rows[k][0]["parameters"] for k in rows]
    assert params == sorted(params) and len(set(params)) == len(RATIOS)


def test_the_shipped_result_pairs_every_width_by_seed():
    data = json.loads((CHECKPOINTS / "mlp_ratio.json").read_text())
    seeds = [[r["seed"] for r in rows] for rows in data["results"].values()]
    assert all(s == seeds[0] for s in seeds) and len(seeds[0]) >= 3
    assert all(r["steps"] == 1000 for rows in data["results"].values() for r in rows)
