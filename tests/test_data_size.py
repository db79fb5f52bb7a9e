"""vit_edu.training.data_size: the ViT against the CNN as the training set grows."""

import json

import pytest

from vit_edu.training.data_size import MODELS, main, run_one
from vit_edu.training.priors import cnn_steps


def test_an_unknown_model_names_itself():
    with pytest.raises(ValueError, match="got 'MLP'"):
        run_one("MLP", 500, 0)


def test_the_script_trains_both_models_at_every_size(tmp_path):
    out = tmp_path / "ds.json"
    main(["--seeds", "0", "--steps", "50", "--sizes", "40", "80", "--out", str(out)])
    results = json.loads(out.read_text())["results"]
    assert set(results) == set(MODELS)
    for name in MODELS:
        assert list(results[name]) == ["40", "80"]
        for size, rows in results[name].items():
            row = rows[0]
            assert row["train_size"] == int(size) and 0 <= row["test_accuracy"] <= 1
            assert round(int(size) * row["train_accuracy"], 6).is_integer()  # a share of its own images
    assert results["ViT"]["40"][0]["steps"] == 50
    assert results["CNN"]["40"][0]["steps"] == round(50 * cnn_steps(0) / 1000)  # the bench's share of the steps
    assert abs(results["CNN"]["40"][0]["parameters"] - results["ViT"]["40"][0]["parameters"]) < 5000
