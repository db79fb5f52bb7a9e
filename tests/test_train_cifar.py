"""Training on a local CIFAR-10 through the CLI, on fake batch files (nothing is downloaded)."""

import dataclasses

import pytest
import torch
import torchvision.datasets.cifar as tv_cifar

from test_data_cifar import _write_fake_cifar
from vit_edu.training import PRESETS, TrainConfig, cifar10_splits, fit_preset, load_checkpoint
from vit_edu.training.__main__ import main


@pytest.fixture
def fake_cifar(tmp_path, monkeypatch):
    _write_fake_cifar(tmp_path, per_batch=4)  # 20 training images, 4 test images
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)  # fake files, real checksums
    return tmp_path


def test_the_cli_trains_the_cifar_preset_on_a_local_copy(fake_cifar, tmp_path, monkeypatch):
    model_cfg, train_cfg = PRESETS["cifar10-vit"]
    monkeypatch.setitem(PRESETS, "cifar10-vit", (model_cfg, dataclasses.replace(train_cfg, train_size=16)))
    out = tmp_path / "cifar.pt"
    main(["--config", "cifar10-vit", "--data", "cifar10", "--root", str(fake_cifar), "--steps", "3",
          "--warmup-steps", "1", "--batch-size", "4", "--out", str(out)])
    model, rest = load_checkpoint(out)
    assert model.config.num_classes == 10 and model.config.patch_size == 4
    assert rest["train_config"]["mix"] == "cutmix" and rest["train_config"]["augment"] == "crop-flip"
    assert rest["history"][-1]["step"] == 3 and 0 <= rest["metrics"]["test_accuracy"] <= 1


def test_splits_hold_out_validation_from_the_training_files(fake_cifar):
    cfg = TrainConfig(train_size=15)
    train, val, test = cifar10_splits(cfg, fake_cifar)
    assert (len(train), len(val), len(test)) == (15, 5, 4)
    assert not torch.equal(train.images[-1], val.images[0])
    with pytest.raises(ValueError, match="train_size 20 leaves no validation images out of 20"):
        cifar10_splits(TrainConfig(train_size=20), fake_cifar)


def test_missing_data_and_wrong_presets_give_clear_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="no CIFAR-10 at .*extract cifar-10-python.tar.gz"):
        fit_preset("cifar10-vit", data="cifar10", root=tmp_path, steps=2, warmup_steps=1)
    with pytest.raises(ValueError, match="needs root"):
        fit_preset("cifar10-vit", data="cifar10")
    with pytest.raises(SystemExit):
        main(["--data", "cifar10", "--out", str(tmp_path / "x.pt")])
    assert "--data cifar10 needs --root DIR" in capsys.readouterr().err


def test_shapes_preset_refuses_cifar_classes(fake_cifar):
    with pytest.raises(ValueError, match="has 4 classes but the cifar10 data has 10: use --config cifar10-vit"):
        fit_preset("shapes-vit", data="cifar10", root=fake_cifar, steps=2, warmup_steps=1, train_size=16)
