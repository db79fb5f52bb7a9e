"""vit_edu.training.token_count: the same scenes at 32 and 64 pixels, cut into 16 or 64 patches."""

import json

import pytest

from vit_edu.training.token_count import ARMS, main, run_one


def test_an_unknown_arm_names_itself():
    with pytest.raises(ValueError, match="unknown arm '64 px, P = 4'"):
        run_one("64 px, P = 4", 0)


def test_the_script_trains_each_arm_with_its_token_count(tmp_path):
    out = tmp_path / "tc.json"
    main(["--seeds", "0", "--steps", "20", "--train-size", "48", "--out", str(out)])
    data = json.loads(out.read_text())
    assert list(data["results"]) == list(ARMS)
    tokens = {arm: rows[0]["tokens"] for arm, rows in data["results"].items()}
    assert tokens == {"32 px, P = 8": 16, "64 px, P = 16": 16, "64 px, P = 8": 64}
    for rows in data["results"].values():
        row = rows[0]
        assert row["steps"] == 20 and row["train_size"] == 48 and 0 <= row["test_accuracy"] <= 1
        assert round(48 * row["train_accuracy"], 6).is_integer()
