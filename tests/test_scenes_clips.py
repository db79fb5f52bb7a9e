"""Tests for vit_edu/data/scenes.py and clips.py: Part V's generated scenes (boxes, masks) and motion clips."""

from __future__ import annotations

import pytest
import torch

from vit_edu.data.clips import DIRECTIONS, clip_split, make_clips
from vit_edu.data.scenes import MAX_OBJECTS, MIN_VISIBLE, make_scenes, scene_split
from vit_edu.data.shapes import CLASS_NAMES


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(300, seed=0)


def test_scene_shapes_and_ranges(scenes):
    assert scenes.images.shape == (300, 3, 32, 32) and scenes.images.dtype == torch.float32
    assert scenes.images.min() >= 0 and scenes.images.max() <= 1
    assert scenes.semantic.shape == scenes.instances.shape == (300, 32, 32)
    assert scenes.semantic.max() <= len(CLASS_NAMES) and scenes.semantic.min() == 0
    counts = torch.tensor([len(c) for c in scenes.labels])
    assert counts.min() == 0 and counts.max() == MAX_OBJECTS, "scenes should hold from 0 to 4 shapes"
    assert len(set(counts.tolist())) == MAX_OBJECTS + 1


def test_masks_boxes_and_labels_agree(scenes):
    """Every listed shape is visible, its box is the tightest box around its pixels, its class fills them."""
    for i in range(len(scenes)):
        boxes, labels, inst = scenes.boxes[i], scenes.labels[i], scenes.instances[i]
        assert boxes.shape == (len(labels), 4) and inst.max() == len(labels)
        for j, (box, label) in enumerate(zip(boxes.long().tolist(), labels.tolist()), start=1):
            pixels = inst == j
            rows, cols = pixels.any(1).nonzero().flatten(), pixels.any(0).nonzero().flatten()
            assert box == [cols[0].item(), rows[0].item(), cols[-1].item() + 1, rows[-1].item() + 1]
            assert (scenes.semantic[i][pixels] == label + 1).all()
        assert torch.equal(scenes.semantic[i] == 0, inst == 0)


def test_hidden_shapes_are_left_out():
    """A shape behind others keeps at least MIN_VISIBLE of its own pixels (checked against a lone redraw)."""
    from vit_edu.data.scenes import _visible

    full = torch.zeros((1, 2, 8, 8), dtype=torch.bool)
    full[0, 0, 0:4, 0:4] = True  # 16 pixels, behind
    full[0, 1, 0:4, 1:4] = True  # covers 12 of them: only 4/16 stay visible
    assert _visible(full, torch.ones((1, 2), dtype=torch.bool)).tolist() == [[False, True]]
    full[0, 1] = False
    full[0, 1, 0:4, 3:4] = True  # covers 4: 12/16 stay visible
    assert _visible(full, torch.ones((1, 2), dtype=torch.bool)).tolist() == [[True, True]]
    assert MIN_VISIBLE == 0.5


def test_scenes_deterministic_and_seeded():
    a, b, c = make_scenes(40, seed=3), make_scenes(40, seed=3), make_scenes(40, seed=4)
    assert torch.equal(a.images, b.images) and torch.equal(a.instances, b.instances)
    assert all(torch.equal(x, y) for x, y in zip(a.boxes, b.boxes))
    assert not torch.equal(a.images, c.images)


def test_scene_slices_and_targets(scenes):
    part = scenes[10:20]
    assert len(part) == 10 and torch.equal(part.images, scenes.images[10:20])
    targets = part.targets()
    assert len(targets) == 10 and torch.equal(targets[3]["boxes"], scenes.boxes[13])
    with pytest.raises(TypeError, match="slice"):
        scenes[3]


def test_scene_splits_differ():
    train, test = scene_split("train", size=20), scene_split("test", size=20)
    assert not torch.equal(train.images, test.images)
    with pytest.raises(ValueError, match="split must be one of"):
        scene_split("dev")


@pytest.mark.parametrize(
    "kwargs, message",
    [({"n": 0}, "n must be a positive integer, got 0"),
     ({"n": 4, "image_size": 8}, "image_size must be an integer ≥ 16, got 8"),
     ({"n": 4, "seed": -1}, "seed must be a non-negative integer, got -1"),
     ({"n": 4, "max_objects": 5}, "max_objects must be an integer from 1 to 4, got 5")],
)
def test_scene_errors_name_the_value(kwargs, message):
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=message):
        make_scenes(n, **kwargs)


@pytest.fixture(scope="module")
def clips():
    return make_clips(400, seed=0)


def test_clip_shapes_and_balance(clips):
    x, y = clips
    assert x.shape == (400, 8, 3, 32, 32) and x.min() >= 0 and x.max() <= 1
    assert torch.bincount(y).tolist() == [200, 200] and DIRECTIONS == ("left", "right")


def _mover_x(x: torch.Tensor) -> torch.Tensor:
    """(n, T) horizontal centre of what changes between frames: the moving shape."""
    changed = (x - x.median(1, keepdim=True).values).abs().amax(2) > 0.2  # (n, T, H, W)
    cols = torch.arange(x.shape[-1], dtype=torch.float32)
    weight = changed.float().sum(2)  # (n, T, W)
    return (weight * cols).sum(-1) / weight.sum(-1).clamp_min(1)


def test_the_label_is_the_direction_of_motion(clips):
    x, y = clips
    drift = _mover_x(x)[:, -1] - _mover_x(x)[:, 0]
    right = drift > 0
    assert (right == (y == 1)).float().mean() > 0.95


def test_the_frames_as_a_set_carry_no_label():
    """A clip played backwards is a clip of the other label: any order-free summary is blind to the label."""
    x, y = make_clips(2000, seed=1)
    still = x.mean(1)  # (n, 3, H, W): the frames averaged
    # The frame average's horizontal centre of brightness: what an order-free model could read from positions.
    cols = torch.arange(32, dtype=torch.float32)
    centre = (still.mean(1).sum(1) * cols).sum(-1) / still.mean(1).sum((1, 2))
    gap = centre[y == 1].mean() - centre[y == 0].mean()
    assert gap.abs() < 0.15, f"frame averages differ by label ({gap:.3f} px): the set leaks the answer"


@pytest.mark.parametrize("frames", [2, 4, 16])
def test_any_number_of_frames_fits(frames):
    x, y = make_clips(50, frames=frames, seed=2)
    assert x.shape[1] == frames
    first, last = x[:, 0], x[:, -1]
    assert (first != last).flatten(1).any(1).all(), "the shape moves between the first and the last frame"


@pytest.mark.parametrize(
    "kwargs, message",
    [({"frames": 1}, "frames must be an integer ≥ 2, got 1"),
     ({"image_size": 10}, "image_size must be an integer ≥ 16, got 10"),
     ({"seed": 1.5}, "seed must be a non-negative integer, got 1.5")],
)
def test_clip_errors_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_clips(4, **kwargs)


def test_clip_splits_differ_and_repeat():
    a, _ = clip_split("val", size=10)
    b, _ = clip_split("val", size=10)
    c, _ = clip_split("test", size=10)
    assert torch.equal(a, b) and not torch.equal(a, c)
