"""Tests for vit_edu/data/shapes.py: the procedural shapes dataset."""

from __future__ import annotations

import time

import pytest
import torch

from vit_edu.data import CLASS_NAMES, DEFAULT_SIZES, SPLITS, ShapesDataset, make_shapes, split_seed


@pytest.fixture(scope="module")
def batch():
    return make_shapes(400, image_size=32, seed=0)


def test_shapes_dtypes_ranges(batch):
    images, labels, masks = batch
    assert images.shape == (400, 3, 32, 32) and images.dtype == torch.float32
    assert labels.shape == (400,) and labels.dtype == torch.int64
    assert masks.shape == (400, 32, 32) and masks.dtype == torch.bool
    assert images.min() >= 0 and images.max() <= 1
    assert labels.min() >= 0 and labels.max() < len(CLASS_NAMES)


@pytest.mark.parametrize("image_size", [16, 24, 48])
def test_other_image_sizes(image_size):
    images, labels, masks = make_shapes(40, image_size=image_size, seed=1, distractor=True)
    assert images.shape == (40, 3, image_size, image_size)
    assert masks.shape == (40, image_size, image_size)
    assert masks.flatten(1).any(1).all()


def test_deterministic():
    a = make_shapes(50, seed=7, distractor=True)
    b = make_shapes(50, seed=7, distractor=True)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    c = make_shapes(50, seed=8, distractor=True)
    assert not torch.equal(a[0], c[0])
    assert not torch.equal(a[2], c[2])


def test_generation_does_not_touch_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    make_shapes(10, seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_distractor_only_adds_pixels_outside_the_object():
    plain, labels, masks = make_shapes(200, seed=2)
    busy, labels_d, masks_d = make_shapes(200, seed=2, distractor=True)
    assert torch.equal(labels, labels_d) and torch.equal(masks, masks_d)
    changed = (plain != busy).any(1)  # (n, H, W)
    assert not (changed & masks).any(), "the distractor must never cover the object"
    assert changed.flatten(1).any(1).float().mean() > 0.9, "most images should show a distractor"


def test_classes_balanced(batch):
    _, labels, _ = batch
    counts = torch.bincount(labels, minlength=len(CLASS_NAMES))
    assert counts.min() > 0
    assert counts.max() - counts.min() <= 1
    assert len(set(CLASS_NAMES)) == len(CLASS_NAMES) == 4


def test_masks_non_empty_and_inside(batch):
    _, _, masks = batch
    areas = masks.flatten(1).sum(1)
    assert (areas >= 20).all()
    # The object never touches the border row/column, so it lies fully inside the image.
    border = masks[:, 0].any(1) | masks[:, -1].any(1) | masks[:, :, 0].any(1) | masks[:, :, -1].any(1)
    assert not border.any()


def test_object_differs_from_background(batch):
    images, _, masks = batch
    m = masks[:, None].float()  # (n, 1, H, W)
    obj_mean = (images * m).sum((2, 3)) / m.sum((2, 3))
    bg_mean = (images * (1 - m)).sum((2, 3)) / (1 - m).sum((2, 3))
    gap = (obj_mean - bg_mean).abs()  # (n, 3)
    assert (gap.min(1).values > 0.15).all(), "every channel should separate object and background"
    # Inside the object the colour is flat (noise only); the background varies more.
    obj_std = ((images - obj_mean[:, :, None, None]) ** 2 * m).sum((2, 3)) / m.sum((2, 3))
    assert obj_std.sqrt().max() < 0.06


def test_classes_differ_in_shape(batch):
    """The four classes are not all the same blob: their mean masks (centred areas) differ."""
    _, labels, masks = batch
    areas = masks.flatten(1).float().sum(1) / masks[0].numel()
    fill = [areas[labels == k].mean().item() for k in range(len(CLASS_NAMES))]
    assert max(fill) - min(fill) > 0.02


def test_dataset_splits():
    sets = {split: ShapesDataset(split, size=60, seed=0) for split in SPLITS}
    for split, ds in sets.items():
        assert len(ds) == 60 and ds.split == split
        image, label, mask = ds[5]
        assert image.shape == (3, 32, 32) and mask.shape == (32, 32) and label.dtype == torch.int64
        assert torch.equal(image, ds.images[5])
    flat = {split: ds.images.flatten(1) for split, ds in sets.items()}
    for a in SPLITS:
        for b in SPLITS:
            if a < b:
                distances = torch.cdist(flat[a], flat[b])
                assert distances.min() > 1.0, f"{a} and {b} share an image"
    seeds = {split_seed(s, split) for s in range(20) for split in SPLITS}
    assert len(seeds) == 20 * len(SPLITS)


def test_dataset_same_seed_same_data_and_default_sizes():
    a = ShapesDataset("val", size=30, seed=4)
    b = ShapesDataset("val", size=30, seed=4)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, ShapesDataset("val", size=30, seed=5).images)
    assert DEFAULT_SIZES == {"train": 5000, "val": 1000, "test": 1000}
    assert len(ShapesDataset("test")) == 1000
    assert "test" in repr(ShapesDataset("test", size=4))


def test_works_with_dataloader():
    ds = ShapesDataset("train", size=32)
    images, labels, masks = next(iter(torch.utils.data.DataLoader(ds, batch_size=8)))
    assert images.shape == (8, 3, 32, 32) and labels.shape == (8,) and masks.shape == (8, 32, 32)


def test_fast():
    start = time.perf_counter()
    make_shapes(5000, seed=0)
    assert time.perf_counter() - start < 15.0  # about 0.4 s on two quiet cores; generous for a busy machine


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"n": 0}, "n must be a positive integer, got 0"),
        ({"n": -3}, "got -3"),
        ({"n": 2.5}, "got 2.5"),
        ({"n": 4, "image_size": 15}, "got 15"),
        ({"n": 4, "image_size": 8}, "image_size"),
        ({"n": 4, "seed": -1}, "got -1"),
    ],
)
def test_make_shapes_bad_arguments(kwargs, needle):
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=needle):
        make_shapes(n, **kwargs)


def test_dataset_bad_arguments():
    with pytest.raises(ValueError, match="'validation'"):
        ShapesDataset("validation")
    with pytest.raises(ValueError, match="got 0"):
        ShapesDataset("train", size=0)
    with pytest.raises(ValueError, match="got 12"):
        ShapesDataset("train", size=4, image_size=12)
    with pytest.raises(ValueError, match="'x'"):
        split_seed(0, "x")
