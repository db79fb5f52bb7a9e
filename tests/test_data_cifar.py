"""The local CIFAR-10 loader, on small fake batch files in torchvision's format written by the test."""

import pickle

import numpy as np
import pytest
import torch
import torchvision.datasets.cifar as tv_cifar

from vit_edu.data import load_cifar10

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _write_fake_cifar(root, per_batch=3):
    folder = root / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for k, name in enumerate(names):
        data = rng.integers(0, 256, size=(per_batch, 3 * 32 * 32), dtype=np.uint8)
        labels = [(k + j) % 10 for j in range(per_batch)]
        with open(folder / name, "wb") as f:
            pickle.dump({"data": data, "labels": labels}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": CLASSES}, f)
    return folder


def test_loads_fake_batches_as_float_images(tmp_path, monkeypatch):
    folder = _write_fake_cifar(tmp_path)
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)  # fake files, real checksums
    train = load_cifar10(tmp_path, "train")
    test = load_cifar10(tmp_path, "test")
    assert train.images.shape == (15, 3, 32, 32) and len(test) == 3
    assert train.images.dtype == torch.float32 and 0 <= train.images.min() and train.images.max() <= 1
    assert train.classes == tuple(CLASSES)
    assert test.labels.tolist() == [5, 6, 7]  # test_batch is file number 5 in _write_fake_cifar
    raw = pickle.load(open(folder / "data_batch_1", "rb"))["data"][0]
    torch.testing.assert_close(train.images[0], torch.from_numpy(raw).float().reshape(3, 32, 32) / 255)


def test_missing_folder_and_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="no CIFAR-10 at .*cifar-10-batches-py: extract cifar-10-python.tar.gz"):
        load_cifar10(tmp_path)
    _write_fake_cifar(tmp_path)
    with pytest.raises(ValueError, match="missing or fail their checksum"):
        load_cifar10(tmp_path)  # the fake files do not match torchvision's checksums
    with pytest.raises(ValueError, match="split must be 'train' or 'test', got 'val'"):
        load_cifar10(tmp_path, "val")


def test_channel_stats_pools_pixels_or_averages_images(tmp_path, monkeypatch, capsys):
    from vit_edu.data.channel_stats import channel_stats, main

    torch.manual_seed(0)
    # Images that differ in brightness: the pooled std includes that, each image's own std does not.
    images = torch.rand(40, 3, 8, 8) * 0.2 + torch.linspace(0, 0.8, 40)[:, None, None, None]
    stats = channel_stats(images)
    pooled = images.transpose(0, 1).reshape(3, -1).std(1)
    torch.testing.assert_close(stats["pixel_std"], pooled)
    torch.testing.assert_close(stats["per_image_std"], images.flatten(2).std(2).mean(0))
    assert (stats["per_image_std"] < stats["pixel_std"] / 3).all()
    with pytest.raises(ValueError, match="at least 2 images.*got 1"):
        channel_stats(images[:1])
    _write_fake_cifar(tmp_path)
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)
    main(["--root", str(tmp_path)])
    printed = capsys.readouterr().out
    expected = channel_stats(load_cifar10(tmp_path, "train").images)["pixel_std"]
    assert "15 images" in printed and ", ".join(f"{v:.4f}" for v in expected.tolist()) in printed
