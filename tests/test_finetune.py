"""Pre-train, then fine-tune (vit_edu.training.finetune): the derived size labels, the arms and the result file."""

import dataclasses
import json

import pytest
import torch

from vit_edu.data import make_shapes
from vit_edu.training import CHECKPOINTS, TrainConfig, finetune, load_checkpoint, train
from vit_edu.training.finetune import (ARMS, SIZE_CLASSES, SIZE_EDGES, FinetuneSettings, balanced_subset,
                                       make_arm, size_labels, size_split)

TINY = FinetuneSettings(steps=2, warmup_steps=0, labels=(6, 9), sizes=(32,), pool=40, test=30)


@pytest.fixture(scope="module")
def pretrained():
    return load_checkpoint(CHECKPOINTS / "shapes_vit.pt")[0]


def test_size_labels_follow_the_mask_area():
    masks = torch.zeros(4, 10, 10, dtype=torch.bool)
    masks[0, :3, :3] = True  # 9 of 100 pixels: below 0.10
    masks[1, :2, :5] = True  # exactly 0.10: medium (the edge belongs to the class above)
    masks[2, :4, :4] = True  # 0.16: large
    masks[3, :2, :7] = True  # 0.14: medium
    assert size_labels(masks).tolist() == [0, 1, 2, 1]
    assert len(SIZE_EDGES) == len(SIZE_CLASSES) - 1


def test_size_labels_match_area_on_shapes():
    _, _, masks = make_shapes(200, seed=5)
    labels = size_labels(masks)
    area = masks.flatten(1).float().mean(1)
    assert (area[labels == 0] < SIZE_EDGES[0]).all() and (area[labels == 2] >= SIZE_EDGES[1]).all()
    assert torch.bincount(labels, minlength=3).min() > 30  # every class is common in a pool


def test_balanced_subset_is_balanced_and_seeded():
    labels = size_split(120, 32, 7).labels
    index = balanced_subset(labels, 50, torch.Generator().manual_seed(0))
    counts = torch.bincount(labels[index], minlength=3)
    assert counts.sum() == 50 and counts.max() - counts.min() <= 1
    assert len(set(index.tolist())) == 50
    again = balanced_subset(labels, 50, torch.Generator().manual_seed(0))
    other = balanced_subset(labels, 50, torch.Generator().manual_seed(1))
    assert torch.equal(index, again) and not torch.equal(index, other)


def test_bad_arguments_raise_value_errors_naming_them(pretrained):
    with pytest.raises(ValueError, match="2, 3"):
        FinetuneSettings(labels=(2, 3))
    with pytest.raises(ValueError, match="1001"):
        FinetuneSettings(test=1001)
    with pytest.raises(ValueError, match="'warm start'"):
        FinetuneSettings(arms=("fine-tune", "warm start"))
    with pytest.raises(ValueError, match=r"arms must be distinct.*\[\]"):
        FinetuneSettings(arms=())
    with pytest.raises(ValueError, match="'warm start'"):
        make_arm("warm start", 32, 0, pretrained)
    with pytest.raises(ValueError, match=r"\[0, 0\]"):
        finetune.run([0, 0], TINY)
    with pytest.raises(ValueError, match="float32"):
        size_labels(torch.zeros(2, 8, 8))
    with pytest.raises(ValueError, match="fewer than"):
        balanced_subset(torch.tensor([0, 0, 0, 1, 2]), 9, torch.Generator())


def _changed(model, before):
    return {name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])}


@pytest.mark.parametrize("size", [32, 48])
def test_arms_start_where_they_should(pretrained, size):
    for arm in ARMS:
        model = make_arm(arm, size, 0, pretrained)
        assert model.config.num_classes == 3 and model.config.image_size == (size, size)
        assert not model.head.weight.any() and not model.head.bias.any()  # a fresh zero head
    tuned, scratch = make_arm("fine-tune", size, 0, pretrained), make_arm("scratch", size, 0, pretrained)
    assert torch.equal(tuned.blocks[0].mlp.fc1.weight, pretrained.blocks[0].mlp.fc1.weight)
    gentle = make_arm("fine-tune, small lr", size, 0, pretrained)  # the same start; only its rate differs
    assert all(torch.equal(a, b) for a, b in zip(gentle.state_dict().values(), tuned.state_dict().values()))
    assert not torch.equal(scratch.blocks[0].mlp.fc1.weight, pretrained.blocks[0].mlp.fc1.weight)


@pytest.mark.parametrize("arm", ["linear probe", "fine-tune"])
def test_probe_trains_only_the_head_and_fine_tune_the_encoder(pretrained, arm):
    kept = {name: p.detach().clone() for name, p in pretrained.named_parameters()}
    model = make_arm(arm, 32, 0, pretrained)
    data = size_split(40, 32, 3)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    train(model, data, data, TrainConfig(steps=3, batch_size=8, warmup_steps=0, train_size=40, eval_every=3),
          progress=False)
    changed = _changed(model, before)
    if arm == "linear probe":
        assert changed == {"head.weight", "head.bias"}
    else:
        assert {"head.weight", "head.bias"} < changed and any(n.startswith("blocks.0.") for n in changed)
    assert not _changed(pretrained, kept)  # the arm trained a copy


def test_tiny_run_has_the_fields_the_chapter_reads(tmp_path):
    data = finetune.run([0, 1], TINY)
    data = json.loads(json.dumps(data))  # what the shipped file holds
    for key in ("task", "classes", "size_edges", "pretrained", "data_seeds", "settings", "seeds", "torch",
                "threads", "cpu_seconds", "parts", "rows"):
        assert key in data
    assert len(data["rows"]) == len(ARMS) * 2 * 2  # arms × label counts × seeds, one size
    assert {r["arm"] for r in data["rows"]} == set(ARMS)
    summary = finetune.summarise(data)
    assert set(summary) == {(32, 6), (32, 9)}
    cell = summary[(32, 6)]
    assert set(cell["arms"]) == set(ARMS) and cell["fine-tune − scratch"].n == 2
    assert 0 <= cell["arms"]["scratch"]["min"] <= cell["arms"]["scratch"]["mean"] <= 1


def test_shipped_result_covers_the_chapter():
    path = CHECKPOINTS / "finetune.json"
    data = json.loads(path.read_text())
    settings = data["settings"]
    assert settings["labels"] == [50, 200, 1000] and settings["sizes"] == [32, 48] and settings["test"] >= 1000
    assert len(data["seeds"]) >= 3
    summary = finetune.summarise(data)
    assert len(summary) == 6 and all(cell["fine-tune − scratch"].n == len(data["seeds"]) for cell in summary.values())
    assert all(cell["small lr − scratch"].n == len(data["seeds"]) for cell in summary.values())
    assert sorted(arm for part in data["parts"] for arm in part["arms"]) == sorted(ARMS)


def test_merge_adds_an_arm_and_its_rows_match_a_run_of_every_arm():
    first = finetune.run([0, 1], dataclasses.replace(TINY, arms=("fine-tune", "linear probe", "scratch")))
    added = finetune.run([0, 1], dataclasses.replace(TINY, arms=("fine-tune, small lr",)))
    merged = finetune.merge(json.loads(json.dumps(first)), added)  # a stored file and a fresh run, as --merge does
    assert merged["rows"][: len(first["rows"])] == first["rows"]  # the earlier rows, untouched and first
    assert merged["settings"]["arms"] == list(ARMS)
    assert merged["settings"]["lr"] == dict(TINY.lr) and merged["settings"]["labels"] == list(TINY.labels)
    assert merged["cpu_seconds"] == pytest.approx(first["cpu_seconds"] + added["cpu_seconds"], abs=0.11)
    assert [part["arms"] for part in merged["parts"]] == [["fine-tune", "linear probe", "scratch"],
                                                          ["fine-tune, small lr"]]
    # every run depends only on its arm, labels, size and seed: the same rows as one run of all four arms
    whole = finetune.run([0, 1], TINY)
    key = lambda r: (r["arm"], r["labels"], r["image_size"], r["seed"])  # noqa: E731
    strip = lambda r: {k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
    assert sorted(map(strip, merged["rows"]), key=key) == sorted(map(strip, whole["rows"]), key=key)
    cell = finetune.summarise(merged)[(32, 6)]
    assert cell["small lr − fine-tune"].n == 2 and cell["small lr − scratch"].n == 2
    assert "small lr − fine-tune" not in finetune.summarise(first)[(32, 6)]  # a file without the arm still reads


def test_merge_refuses_files_that_are_not_one_experiment():
    first = finetune.run([0, 1], dataclasses.replace(TINY, arms=("scratch",)))
    with pytest.raises(ValueError, match=r"\['scratch'\]"):
        finetune.merge(first, first)
    other = finetune.run([0, 1], dataclasses.replace(TINY, arms=("linear probe",), steps=3))
    with pytest.raises(ValueError, match="settings.steps"):
        finetune.merge(first, other)


def test_command_line_adds_an_arm_to_a_stored_file(tmp_path, monkeypatch):
    monkeypatch.setattr(finetune, "FinetuneSettings", lambda: TINY)  # the tiny grid behind the real command line
    out = tmp_path / "finetune.json"
    finetune.main(["--seeds", "0", "1", "--arms", "scratch", "--out", str(out)])
    finetune.main(["--seeds", "0", "1", "--arms", "linear probe", "--merge", str(out), "--out", str(out)])
    data = json.loads(out.read_text())
    assert [r["arm"] for r in data["rows"]] == ["scratch"] * 4 + ["linear probe"] * 4
    assert [part["arms"] for part in data["parts"]] == [["scratch"], ["linear probe"]]
