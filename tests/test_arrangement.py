"""vit_edu.data.arrangement: a task whose answer is where a thing is, and the script that trains it."""

import pytest
import torch

from vit_edu.data import make_shapes
from vit_edu.data.arrangement import ARRANGEMENT_TASKS, arrangement_split, make_quadrant


def test_quadrant_labels_follow_the_mask_centre():
    images, labels = make_quadrant(200, seed=3)
    same, _, masks = make_shapes(200, seed=3)
    assert torch.equal(images, same)  # the shapes task's own images, relabelled
    for i in range(200):
        ys, xs = torch.nonzero(masks[i], as_tuple=True)
        expected = 2 * int(ys.float().mean() + 0.5 >= 16) + int(xs.float().mean() + 0.5 >= 16)
        assert labels[i] == expected
    assert torch.bincount(labels, minlength=4).min() > 30  # every quarter occurs


def test_same_arguments_same_tensors_and_splits_differ():
    a, b = make_quadrant(16, seed=2), make_quadrant(16, seed=2)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    train = arrangement_split("quadrant", "train", 16, seed=2)
    test = arrangement_split("quadrant", "test", 16, seed=2)
    assert not torch.equal(train.images, test.images) and train.classes == ARRANGEMENT_TASKS["quadrant"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: arrangement_split("colour", "train", 8), "got 'colour'"),
    (lambda: make_quadrant(0), "got 0"),
    (lambda: arrangement_split("quadrant", "dev", 8), "got 'dev'"),
])
def test_bad_arguments_name_the_offending_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_script_trains_every_arm_and_writes_its_rows(tmp_path):
    from vit_edu.training.positions_matter import main

    out = tmp_path / "pm.json"
    main(["--tasks", "quadrant", "--seeds", "0", "--steps", "61", "--train-size", "32", "--out", str(out)])
    import json

    data = json.loads(out.read_text())
    rows = data["results"]["quadrant"]
    assert set(rows) == {"learned", "none", "sincos", "relative"}
    assert all(r[0]["steps"] == 61 and r[0]["train_size"] == 32 and 0 <= r[0]["test_accuracy"] <= 1 for r in rows.values())
