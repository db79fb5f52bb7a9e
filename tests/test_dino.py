"""DINO's pieces, one at a time: centre, EMA teacher, loss, view pairs, multi-crop, gradients, errors."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from vit_edu.config import ViTConfig
from vit_edu.variants.dino import (
    DINO,
    DINOConfig,
    DINOHead,
    collapse_stats,
    colour_jitter,
    dino_loss,
    multi_crop,
    random_crops,
    teacher_momentum,
    teacher_probs,
    update_center,
    update_teacher,
    view_pairs,
)
from vit_edu.variants.dino_train import knn_accuracy

TINY = ViTConfig(image_size=16, patch_size=8, num_classes=4, embed_dim=16, depth=1, num_heads=2, mlp_dim=32)
CFG = DINOConfig(TINY, num_prototypes=8, head_hidden_dim=16, bottleneck_dim=8, num_local_crops=3)


def small_dino(seed=0):
    torch.manual_seed(seed)
    return DINO(CFG)


def test_center_update_is_the_ema_formula():
    center = torch.randn(8)
    logits = torch.randn(2, 5, 8)  # (V, B, K)
    new = update_center(center, logits, momentum=0.9)
    assert torch.allclose(new, 0.9 * center + 0.1 * logits.reshape(-1, 8).mean(0))
    assert torch.equal(update_center(center, logits, momentum=0.0), logits.mean(dim=(0, 1)))


def test_teacher_update_is_an_ema_of_the_student():
    model = small_dino()
    with torch.no_grad():
        for p in model.student.parameters():
            p.add_(torch.randn_like(p))
    before = [p.clone() for p in model.teacher.parameters()]
    update_teacher(model.teacher, model.student, momentum=0.75)
    for old, new, s in zip(before, model.teacher.parameters(), model.student.parameters()):
        assert torch.allclose(new, 0.75 * old + 0.25 * s)
    update_teacher(model.teacher, model.student, momentum=0.0)
    assert all(torch.equal(t, s) for t, s in zip(model.teacher.parameters(), model.student.parameters()))


def test_momentum_schedule_runs_from_base_to_one_as_a_cosine():
    assert teacher_momentum(0, 100) == pytest.approx(0.996)
    assert teacher_momentum(100, 100) == pytest.approx(1.0)
    assert teacher_momentum(50, 100) == pytest.approx(0.998)
    values = [teacher_momentum(t, 100) for t in range(101)]
    assert all(a <= b for a, b in zip(values, values[1:]))


def test_loss_equals_teacher_entropy_when_student_agrees_and_is_larger_otherwise():
    torch.manual_seed(0)
    center = torch.randn(8) * 0.1
    teacher = torch.randn(1, 4, 8).expand(2, 4, 8)  # both global views give the same scores
    targets = teacher_probs(teacher, center, 0.04)
    entropy = float(-(targets[0] * targets[0].log()).sum(-1).mean())
    agree = ((teacher[:1] - center) * (0.1 / 0.04)).expand(5, 4, 8)  # student softmax(s / 0.1) == the targets
    assert float(dino_loss(agree, teacher, center, 0.1, 0.04)) == pytest.approx(entropy, abs=1e-5)
    for _ in range(5):
        other = agree + torch.randn_like(agree)
        assert float(dino_loss(other, teacher, center, 0.1, 0.04)) > entropy + 1e-4


def test_no_term_pairs_a_view_with_itself():
    assert view_pairs(2, 2) == [(0, 1), (1, 0)]
    pairs = view_pairs(2, 6)
    assert len(pairs) == 2 * 6 - 2 and all(t != s for t, s in pairs)
    torch.manual_seed(1)
    student, teacher, center = torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(8)
    targets = teacher_probs(teacher, center, 0.04)
    log_p = F.log_softmax(student / 0.1, dim=-1)
    by_hand = (-(targets[0] * log_p[1]).sum(-1).mean() - (targets[1] * log_p[0]).sum(-1).mean()) / 2
    assert torch.allclose(dino_loss(student, teacher, center), by_hand)


def test_local_crops_reach_only_the_student_and_the_teacher_gets_no_gradient():
    model = small_dino()
    images = torch.rand(4, 3, 16, 16)
    global_crops, local_crops = multi_crop(images, CFG, torch.Generator().manual_seed(0))
    assert global_crops.shape == (2, 4, 3, 16, 16) and local_crops.shape == (3, 4, 3, 16, 16)
    seen = {"teacher": [], "student": []}
    model.teacher.backbone.patch_embed.register_forward_pre_hook(lambda m, args: seen["teacher"].append(args[0]))
    model.student.backbone.patch_embed.register_forward_pre_hook(lambda m, args: seen["student"].append(args[0]))
    out = model(global_crops, local_crops)
    assert torch.equal(seen["teacher"][0], global_crops.flatten(0, 1))  # the global crops and nothing else
    assert torch.equal(seen["student"][0], torch.cat([global_crops, local_crops]).flatten(0, 1))
    assert out.student_logits.shape == (5, 4, 8) and out.teacher_logits.shape == (2, 4, 8)
    out.loss.backward()
    assert all(p.grad is None and not p.requires_grad for p in model.teacher.parameters())
    used = {n: p for n, p in model.student.named_parameters() if not n.startswith("backbone.head.")}  # the ViT's
    assert all(p.grad is not None for p in used.values())  # classification head is unused by DINO


def test_after_step_moves_teacher_and_centre():
    model = small_dino()
    out = model(*multi_crop(torch.rand(4, 3, 16, 16), CFG, torch.Generator().manual_seed(0)))
    with torch.no_grad():
        for p in model.student.parameters():
            p.add_(1.0)
    momentum = model.after_step(out.teacher_logits, 0, 10)
    assert momentum == pytest.approx(0.996)
    assert torch.allclose(model.center, 0.1 * out.teacher_logits.mean(dim=(0, 1)))
    t = next(model.teacher.parameters())
    s = next(model.student.parameters())
    assert torch.allclose(t, 0.996 * (s - 1.0) + 0.004 * s)


def test_crops_cover_the_right_share_and_whole_image_crop_is_identity():
    images = torch.rand(3, 3, 16, 16)
    whole = random_crops(images, (1.0, 1.0), 16, torch.Generator().manual_seed(0))
    flipped = images.flip(-1)
    for i in range(3):  # the full-area crop is the image or its mirror
        assert torch.allclose(whole[i], images[i], atol=1e-5) or torch.allclose(whole[i], flipped[i], atol=1e-5)
    small = random_crops(images, (0.05, 0.1), 16, torch.Generator().manual_seed(0))
    assert small.shape == (3, 3, 16, 16) and not torch.allclose(small, images)


def test_colour_jitter_keeps_range_and_its_probabilities():
    images = torch.rand(6, 3, 8, 8)
    assert torch.equal(colour_jitter(images, 0.0, 0.0, torch.Generator().manual_seed(0)), images)
    gray = colour_jitter(images, 0.0, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(gray[:, 0], gray[:, 1]) and torch.equal(gray[:, 1], gray[:, 2])
    jittered = colour_jitter(images, 1.0, 0.0, torch.Generator().manual_seed(0))
    assert 0 <= jittered.min() and jittered.max() <= 1 and not torch.allclose(jittered, images)
    flat = torch.zeros(1, 3, 4, 4)
    flat[:, 0] = 0.5  # a pure red image: the channel shuffle moves its colour to another channel for some seeds
    moved = {int(colour_jitter(flat, 1.0, 0.0, torch.Generator().manual_seed(s))[0, :, 0, 0].argmax()) for s in range(20)}
    assert len(moved) > 1
    with pytest.raises(ValueError, match="colour jitter needs 3 channels, got 1"):
        colour_jitter(torch.rand(2, 1, 4, 4), 0.5, 0.5)


def test_head_gives_cosines_to_unit_prototypes():
    head = DINOHead(16, 32, 8, 10)
    scores = head(torch.randn(5, 16))
    assert scores.shape == (5, 10) and scores.abs().max() <= 1 + 1e-6


def test_collapse_stats_tell_collapsed_from_spread_outputs():
    k = 8
    collapsed = torch.zeros(1, 16, k)
    collapsed[..., 3] = 1.0
    spread = torch.eye(k).repeat(2, 1)[None]  # (1, 16, K): every prototype wins twice
    bad = collapse_stats(collapsed, torch.zeros(k), 0.04)
    good = collapse_stats(spread, torch.zeros(k), 0.04)
    assert bad["top_share"] == 1.0 and bad["prototypes_used"] == 1
    assert good["top_share"] == pytest.approx(1 / k) and good["prototypes_used"] == k
    assert good["batch_entropy"] == pytest.approx(math.log(k), abs=1e-3)


def test_knn_accuracy_on_separable_features():
    train_x = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    train_y = torch.tensor([0, 0, 1, 1])
    test_x = torch.tensor([[1.0, 0.05], [0.05, 1.0]])
    assert knn_accuracy(train_x, train_y, test_x, torch.tensor([0, 1]), 2, k=2) == 1.0
    assert knn_accuracy(train_x, train_y, test_x, torch.tensor([1, 0]), 2, k=2) == 0.0
    with pytest.raises(ValueError, match="k = 5 exceeds the 4"):
        knn_accuracy(train_x, train_y, test_x, torch.tensor([0, 1]), 2, k=5)


def test_config_round_trips_through_a_dict():
    assert DINOConfig(**CFG.to_dict()) == CFG


@pytest.mark.parametrize("bad, match", [
    ({"num_prototypes": 0}, "num_prototypes must be a positive integer, got 0"),
    ({"num_local_crops": -1}, "num_local_crops must be an int ≥ 0, got -1"),
    ({"local_scale": (0.5, 0.2)}, r"local_scale must be \(low, high\)"),
    ({"teacher_temp": 0.0}, "teacher_temp must be positive, got 0.0"),
    ({"center_momentum": 1.0}, r"center_momentum must be in \[0, 1\), got 1.0"),
    ({"grayscale_prob": 1.5}, r"grayscale_prob must be a probability in \[0, 1\], got 1.5"),
    ({"encoder": dataclasses.replace(TINY, pool="mean")}, "needs pool='cls'"),
])
def test_bad_config_is_named(bad, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(CFG, **bad)


def test_bad_inputs_are_named():
    model = small_dino()
    with pytest.raises(ValueError, match="DINO uses 2 global crops, got 3"):
        model(torch.rand(3, 2, 3, 16, 16), torch.rand(0, 2, 3, 16, 16))
    with pytest.raises(ValueError, match="local_crops must have 5 dimensions"):
        model(torch.rand(2, 2, 3, 16, 16), torch.rand(2, 3, 16, 16))
    with pytest.raises(ValueError, match="images are \\(32, 32\\), the encoder takes \\(16, 16\\)"):
        multi_crop(torch.rand(2, 3, 32, 32), CFG)
    with pytest.raises(ValueError, match="need the same B and K"):
        dino_loss(torch.randn(3, 2, 8), torch.randn(2, 2, 7), torch.zeros(7))
    with pytest.raises(ValueError, match="num_student 1 < num_teacher 2"):
        view_pairs(2, 1)
    with pytest.raises(ValueError, match="center has 5 entries, the heads have K = 8"):
        dino_loss(torch.randn(3, 2, 8), torch.randn(2, 2, 8), torch.zeros(5))
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\], got 1.5"):
        update_teacher(model.teacher, model.student, 1.5)
    with pytest.raises(ValueError, match=r"step must be in \[0, 10\], got 11"):
        teacher_momentum(11, 10)


SHIPPED = Path(__file__).resolve().parents[1] / "vit_edu" / "checkpoints"


@pytest.mark.skipif(not (SHIPPED / "dino_shapes.pt").exists(), reason="the shipped DINO teacher is missing")
def test_shipped_teacher_is_what_the_json_reports():
    from vit_edu.data import ShapesDataset
    from vit_edu.variants.dino import load_teacher
    from vit_edu.variants.dino_train import DINO_CONFIG, localisation

    run = json.loads((SHIPPED / "dino_shapes.json").read_text())
    network, config, metrics = load_teacher(SHIPPED / "dino_shapes.pt")
    assert config == DINO_CONFIG == DINOConfig(**run["dino_config"]) and metrics["seed"] == run["runs"][0]["seed"]
    assert [r["seed"] for r in run["runs"]] == [0, 1, 2] and run["threads"] == 1
    test = ShapesDataset("test", seed=0)
    score = localisation(network.backbone, test.images, test.masks)["mean_heads"]
    # Weights are stored in half precision: the score may move in its third decimal.
    assert score == pytest.approx(run["runs"][0]["localisation"]["DINO"]["mean_heads"], abs=0.01)
    for r in run["runs"]:  # no seed collapsed
        assert r["collapse"]["top_share"] < 0.5 and r["collapse"]["prototypes_used"] >= 8
