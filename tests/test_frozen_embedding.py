"""Chapter 3's frozen-embedding runs: the frozen arm really stays at its start, the arms pair by seed."""

import json

import pytest

from vit_edu.training import CHECKPOINTS
from vit_edu.training import frozen_embedding as fe


def test_two_step_run_freezes_only_the_frozen_arm(tmp_path):
    out = tmp_path / "frozen.json"
    fe.main(["--seeds", "0", "1", "--steps", "2", "--train-size", "64", "--out", str(out)])
    data = json.loads(out.read_text())
    assert [(r["seed"], r["arm"]) for r in data["runs"]] == [(0, "trained"), (0, "frozen"), (1, "trained"), (1, "frozen")]
    for r in data["runs"]:
        assert (r["embedding_moved"] == 0) == (r["arm"] == "frozen")  # the frozen weight is exactly its start
        assert 0 <= r["test_accuracy"] <= 1 and r["steps"] == 2


def test_bad_settings_raise_naming_them():
    with pytest.raises(ValueError, match="arm must be one of .* got 'half'"):
        fe.train_arm("half", 0, 2, splits=())
    with pytest.raises(ValueError, match=r"at least 2 different seeds, got \[0, 0\]"):
        fe.run([0, 0])


def test_shipped_result_is_what_the_chapter_reads():
    path = CHECKPOINTS / "frozen_embedding.json"
    data = json.loads(path.read_text())
    assert data["seeds"] == [0, 1, 2] and data["threads"] == 1 and data["arms"] == list(fe.ARMS)
    for arm in fe.ARMS:
        assert sorted(r["seed"] for r in data["runs"] if r["arm"] == arm) == data["seeds"]
    assert all((r["embedding_moved"] == 0) == (r["arm"] == "frozen") for r in data["runs"])
