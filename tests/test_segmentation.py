"""vit_edu.tasks.segmentation and its experiment script: the token-to-grid reshape, the two heads, the scores."""

import dataclasses
import json

import pytest
import torch
from torchmetrics.classification import MulticlassJaccardIndex

from vit_edu.config import ViTConfig
from vit_edu.data.scenes import make_scenes
from vit_edu.model import VisionTransformer
from vit_edu.tasks import segmentation_train
from vit_edu.tasks.segmentation import (
    NUM_CLASSES,
    NaiveHead,
    ProgressiveHead,
    SegmentationViT,
    boundary_band,
    jaccard,
    load_encoder,
    make_head,
    predict,
    scores,
    tokens_to_grid,
)

SMALL = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2, mlp_dim=32)


def test_tokens_to_grid_puts_token_i_at_row_i_div_w():
    tokens = torch.arange(2 * (1 + 6) * 3, dtype=torch.float32).reshape(2, 7, 3)  # (B, 1+N, D), a 2×3 grid
    grid = tokens_to_grid(tokens, (2, 3))
    assert grid.shape == (2, 3, 2, 3)
    for i in range(6):
        torch.testing.assert_close(grid[:, :, i // 3, i % 3], tokens[:, 1 + i])  # the CLS token (index 0) is dropped


def test_tokens_to_grid_undoes_the_patch_embedding():
    """The grid of the patch tokens is the patch embedding's convolution output before it was flattened."""
    model = VisionTransformer(SMALL)
    images = torch.rand(2, 3, 16, 16)
    tokens = model.prepend_tokens(model.patch_embed(images))  # (B, 1+N, D)
    torch.testing.assert_close(tokens_to_grid(tokens, SMALL.grid_size), model.patch_embed.proj(images))


def test_tokens_to_grid_without_prefix_and_bad_shapes():
    tokens = torch.rand(1, 4, 5)
    assert tokens_to_grid(tokens, (2, 2), num_prefix_tokens=0).shape == (1, 5, 2, 2)
    with pytest.raises(ValueError, match=r"\(1, 4, 5\).*2×2"):
        tokens_to_grid(tokens, (2, 2))  # 1 prefix + 4 patches would need 5 tokens
    with pytest.raises(ValueError, match="prefix"):
        tokens_to_grid(torch.rand(4, 5), (2, 2))


def test_naive_head_scores_each_patch_from_its_own_token():
    head = NaiveHead(dim=8, num_classes=5, patch_size=4)
    grid = torch.rand(1, 8, 4, 4)
    out = head(grid)
    assert out.shape == (1, 5, 16, 16)
    changed = grid.clone()
    changed[:, :, 0, 0] += 1.0  # one token changes
    moved = (head(changed) - out).abs().amax(1)[0] > 1e-6  # (16, 16): pixels whose scores moved
    assert moved[:4, :4].all()  # its own patch
    assert not moved[8:, :].any() and not moved[:, 8:].any()  # bilinear: half a patch further, no more
    constant = head(torch.ones(1, 8, 4, 4))
    torch.testing.assert_close(constant, constant[:, :, :1, :1].expand_as(constant))


@pytest.mark.parametrize("patch_size", [2, 4, 8])
def test_progressive_head_doubles_once_per_stage(patch_size):
    head = ProgressiveHead(dim=8, num_classes=5, patch_size=patch_size, channels=4)
    assert len(head.stages) == {2: 1, 4: 2, 8: 3}[patch_size]
    assert head(torch.rand(2, 8, 3, 2)).shape == (2, 5, 3 * patch_size, 2 * patch_size)


@pytest.mark.parametrize("patch_size", [1, 6])
def test_progressive_head_needs_a_power_of_two(patch_size):
    with pytest.raises(ValueError, match=f"power of 2.*got {patch_size}"):
        ProgressiveHead(dim=8, num_classes=5, patch_size=patch_size)


def test_make_head_names():
    assert isinstance(make_head("naive", 8, 5, 4), NaiveHead)
    assert isinstance(make_head("pup", 8, 5, 4), ProgressiveHead)
    with pytest.raises(ValueError, match="'mla'"):
        make_head("mla", 8, 5, 4)


@pytest.mark.parametrize("head", ["naive", "pup"])
@pytest.mark.parametrize("pos_embed", ["learned", "none"])
def test_segmenter_gives_one_score_per_class_and_pixel(head, pos_embed):
    model = SegmentationViT(dataclasses.replace(SMALL, pos_embed=pos_embed), head=head)
    logits = model(torch.rand(3, 3, 16, 16))
    assert logits.shape == (3, NUM_CLASSES, 16, 16)
    assert predict(model, torch.rand(3, 3, 16, 16), batch_size=2).shape == (3, 16, 16)


def test_load_encoder_copies_all_but_the_classification_head():
    classifier = VisionTransformer(SMALL)
    model = SegmentationViT(SMALL)
    load_encoder(model, classifier)
    source = classifier.state_dict()
    for name, value in model.encoder.state_dict().items():
        torch.testing.assert_close(value, source[name])
    with pytest.raises(ValueError, match="pos_embed"):
        load_encoder(SegmentationViT(dataclasses.replace(SMALL, patch_size=8)), classifier)  # a 2×2 grid, not 4×4


def test_boundary_band_of_a_square():
    semantic = torch.zeros(1, 8, 8, dtype=torch.long)
    semantic[0, 2:5, 2:5] = 3  # a 3×3 square
    band = boundary_band(semantic)[0]
    expected = torch.zeros(8, 8, dtype=torch.bool)
    expected[1:6, 1:6] = True  # within 1 px of the square's edge, on either side
    expected[3, 3] = False  # the square's centre sees only its own class
    assert torch.equal(band, expected)
    assert boundary_band(semantic, width=2)[0, 0, 0]  # 2 px away now counts
    assert not boundary_band(torch.ones(2, 5, 5, dtype=torch.long)).any()  # the picture's edge is no boundary


@pytest.mark.parametrize("width", [0, 1.5, True])
def test_boundary_band_rejects_bad_widths(width):
    with pytest.raises(ValueError, match="width"):
        boundary_band(torch.zeros(1, 4, 4, dtype=torch.long), width)


def test_boundary_band_needs_n_h_w():
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        boundary_band(torch.zeros(4, 4, dtype=torch.long))


def test_jaccard_counts_intersection_over_union_per_class():
    target = torch.tensor([[[0, 0, 1, 1]]])
    pred = torch.tensor([[[0, 1, 1, 2]]])
    iou = jaccard(pred, target)
    assert iou.shape == (NUM_CLASSES,)
    torch.testing.assert_close(iou[:3], torch.tensor([1 / 2, 1 / 3, 0.0]))
    region = torch.tensor([[[True, False, True, False]]])  # score only pixels 0 and 2: both right
    torch.testing.assert_close(jaccard(pred, target, region)[:2], torch.tensor([1.0, 1.0]))
    reference = MulticlassJaccardIndex(num_classes=NUM_CLASSES, average="none")(pred, target)
    torch.testing.assert_close(iou, reference)
    with pytest.raises(ValueError, match="one shape"):
        jaccard(pred, target[..., :3])


def test_scores_of_a_perfect_and_of_a_blank_prediction():
    scenes = make_scenes(6, seed=3)
    perfect = scores(scenes.semantic, scenes.semantic)
    present = set(scenes.semantic.unique().tolist())
    assert perfect["boundary_miou"] == pytest.approx(len(present) / NUM_CLASSES)  # absent classes count 0
    assert perfect["per_class"]["background"] == 1.0
    blank = scores(torch.zeros_like(scenes.semantic), scenes.semantic)
    assert blank["miou"] < perfect["miou"] and blank["per_class"]["circle"] == 0.0


def test_script_trains_and_writes_every_arm(tmp_path, monkeypatch):
    monkeypatch.setattr(segmentation_train, "scene_split", lambda split, size=None: make_scenes(16, seed=1))
    out, weights = tmp_path / "seg.json", tmp_path / "seg.pt"
    segmentation_train.main(["--seeds", "0", "1", "--steps", "2", "--warmup-steps", "1", "--out", str(out),
                             "--weights", str(weights), "--arms", "base", "P4 pup", "no position"])
    result = json.loads(out.read_text())
    expected = [("base", 0), ("P4 pup", 0), ("no position", 0), ("base", 1), ("no position", 1)]  # P4 pup: seed 0 only
    assert [(r["arm"], r["seed"]) for r in result["runs"]] == expected
    assert {"miou", "boundary_miou", "interior_miou", "per_class", "seconds"} <= set(result["runs"][0])
    models = segmentation_train.load_models(weights)
    assert set(models) == {"base", "P4 pup"} and models["P4 pup"].config.patch_size == 4
    assert models["P4 pup"].head_name == "pup"
    segmentation_train.main(["--seeds", "1", "2", "--steps", "2", "--warmup-steps", "1", "--out", str(out),
                             "--arms", "P4 pup", "--first-seed-only"])  # none held back: every seed
    assert [(r["arm"], r["seed"]) for r in json.loads(out.read_text())["runs"]] == [("P4 pup", 1), ("P4 pup", 2)]


def test_same_seed_same_model_and_the_classifier_start():
    a, b = (segmentation_train.build(segmentation_train.ARMS["base"], seed=4) for _ in range(2))
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name
    pre = segmentation_train.build(segmentation_train.ARMS["from classifier"], seed=4)
    assert not torch.equal(pre.encoder.pos_embed.embedding, a.encoder.pos_embed.embedding)
    assert torch.equal(pre.head.classify.weight, a.head.classify.weight)  # the head: the same random start


def test_shipped_models_reach_their_recorded_test_miou():
    """The widget's fp16 weights are seed 0's models of the shipped results: same arm, same test mIoU."""
    from vit_edu.data.scenes import scene_split
    from vit_edu.training.checkpoint import CHECKPOINTS

    recorded = {r["arm"]: r["miou"] for r in json.loads((CHECKPOINTS / "segmentation.json").read_text())["runs"]
                if r["seed"] == 0}
    test = scene_split("test")
    for name, model in segmentation_train.load_models().items():
        assert model.config == segmentation_train.ARMS[name].config()
        assert scores(predict(model, test.images), test.semantic)["miou"] == pytest.approx(recorded[name], abs=0.005)
