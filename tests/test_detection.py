"""vit_edu.tasks.detection: matching, the GIoU-based cost and loss, the two detectors' shapes, the evaluation
helpers."""

import itertools

import pytest
import torch

from vit_edu.config import ViTConfig
from vit_edu.tasks.detection import (
    DETR,
    NO_OBJECT,
    NUM_CLASSES,
    YOLOS,
    CostWeights,
    CrossAttention,
    average_precision,
    count_duplicates,
    fixed_match,
    hungarian_match,
    match,
    match_cost,
    predict,
    set_loss,
    to_cxcywh,
    to_xyxy,
)

TINY = ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32, pool="mean")


def test_hungarian_equals_brute_force_on_random_costs():
    gen = torch.Generator().manual_seed(0)
    for q, m in ((3, 3), (5, 2), (6, 4)):
        cost = torch.rand(q, m, generator=gen)
        rows, cols = hungarian_match(cost)
        best = min(sum(cost[p[j], j] for j in range(m)) for p in itertools.permutations(range(q), m))
        assert torch.equal(cols, torch.arange(m))  # ordered by object
        assert len(set(rows.tolist())) == m  # one query per object
        torch.testing.assert_close(cost[rows, cols].sum(), best)


def test_hungarian_refuses_more_objects_than_queries():
    with pytest.raises(ValueError, match="2 queries and 3 objects"):
        hungarian_match(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="1 queries and 2 objects"):
        fixed_match(1, 2)


def test_fixed_match_pairs_in_order():
    rows, cols = fixed_match(8, 3)
    assert rows.tolist() == [0, 1, 2] and cols.tolist() == [0, 1, 2]


def test_box_conversions_round_trip():
    pixels = torch.tensor([[2.0, 4.0, 10.0, 8.0]])
    norm = to_cxcywh(pixels, 32)
    torch.testing.assert_close(norm, torch.tensor([[6 / 32, 6 / 32, 8 / 32, 4 / 32]]))
    torch.testing.assert_close(to_xyxy(norm, 32), pixels)


def test_match_cost_prefers_the_right_box_and_class():
    targets = torch.tensor([[0.25, 0.25, 0.2, 0.2], [0.75, 0.75, 0.2, 0.2]])
    labels = torch.tensor([1, 3])
    logits = torch.full((2, NUM_CLASSES + 1), -5.0)
    logits[0, 3], logits[1, 1] = 5.0, 5.0  # query 0 says class 3, query 1 says class 1
    boxes = targets.flip(0)  # query 0 sits on object 1, query 1 on object 0
    cost = match_cost(logits, boxes, labels, targets)
    assert cost.shape == (2, 2)
    assert cost[0, 1] < cost[0, 0] and cost[1, 0] < cost[1, 1]
    rows, _ = hungarian_match(cost)
    assert rows.tolist() == [1, 0]
    # one term at a time: a perfect box costs −λ_giou·1 and nothing for L1
    only_box = match_cost(logits, boxes, labels, targets, CostWeights(cls=0.0, l1=5.0, giou=2.0))
    torch.testing.assert_close(only_box[1, 0], torch.tensor(-2.0))


def test_match_cost_checks_its_inputs():
    with pytest.raises(ValueError, match="labels has 1 objects but targets has 2"):
        match_cost(torch.zeros(3, 5), torch.rand(3, 4), torch.tensor([0]), torch.rand(2, 4))


def test_set_loss_targets_no_object_for_unmatched_queries():
    torch.manual_seed(0)
    b, q = 2, 4
    logits = torch.zeros(b, q, NUM_CLASSES + 1)
    logits[..., NO_OBJECT] = 10.0  # everything says "no object"
    boxes = torch.full((b, q, 4), 0.5)
    labels = [torch.tensor([2]), torch.zeros(0, dtype=torch.long)]
    targets = [torch.tensor([[0.5, 0.5, 0.2, 0.2]]), torch.zeros(0, 4)]
    out = set_loss({"logits": logits, "boxes": boxes}, labels, targets, "fixed")
    # 7 of 8 queries are right ("no object", weight 0.1), one is wrong (weight 1): the weighted mean is dominated by it
    wrong = torch.nn.functional.cross_entropy(logits[0, :1], torch.tensor([2]))
    right = torch.nn.functional.cross_entropy(logits[0, 1:2], torch.tensor([NO_OBJECT]))
    torch.testing.assert_close(out["class"], (wrong + 7 * 0.1 * right) / (1 + 7 * 0.1))
    torch.testing.assert_close(out["l1"], torch.tensor(0.3 * 2))  # |0.5 − 0.2| on w and h, one object
    assert out["giou"] > 0
    torch.testing.assert_close(out["total"], out["class"] + 5 * out["l1"] + 2 * out["giou"])


def test_set_loss_hungarian_is_at_most_fixed():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 6, NUM_CLASSES + 1, generator=gen)
    boxes = torch.rand(3, 6, 4, generator=gen) * 0.5 + 0.25
    labels = [torch.tensor([0, 1, 2]), torch.tensor([3]), torch.tensor([1, 1])]
    targets = [torch.rand(len(c), 4, generator=gen) * 0.5 + 0.25 for c in labels]
    outputs = {"logits": logits, "boxes": boxes}
    hung = match(outputs, labels, targets, "hungarian")
    fixed = match(outputs, labels, targets, "fixed")
    for lo, bo, c, t, (hq, hj), (fq, fj) in zip(logits, boxes, labels, targets, hung, fixed):
        cost = match_cost(lo, bo, c, t)
        assert cost[hq, hj].sum() <= cost[fq, fj].sum() + 1e-6
    with pytest.raises(ValueError, match="matcher must be one of"):
        set_loss(outputs, labels, targets, "greedy")
    with pytest.raises(ValueError, match="3 images of predictions but 2 label"):
        set_loss(outputs, labels[:2], targets[:2])


def test_cross_attention_paths_agree_and_rows_sum_to_one():
    torch.manual_seed(0)
    attn = CrossAttention(16, 2)
    queries, memory = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    slow, weights = attn(queries, memory, need_weights=True)
    fast, none = attn(queries, memory)
    assert weights.shape == (3, 2, 5, 7) and none is None
    torch.testing.assert_close(slow, fast, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 5))
    with pytest.raises(ValueError, match="not divisible"):
        CrossAttention(10, 3)


@pytest.mark.parametrize("model", [DETR(TINY, num_queries=3, decoder_depth=1), YOLOS(TINY, num_queries=3)],
                         ids=["detr", "yolos"])
def test_detectors_shapes_and_attention(model):
    images = torch.rand(2, 3, 16, 16)
    out = model(images, need_weights=True)
    assert out["logits"].shape == (2, 3, NUM_CLASSES + 1)
    assert out["boxes"].shape == (2, 3, 4) and 0 < out["boxes"].min() and out["boxes"].max() < 1
    assert out["attention"].shape == (2, 3, TINY.num_patches)
    fast = model(images)
    torch.testing.assert_close(fast["boxes"], out["boxes"], rtol=1e-5, atol=1e-6)


def test_detectors_refuse_a_cls_backbone_and_bad_counts():
    with pytest.raises(ValueError, match="pool='mean'"):
        DETR(ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32))
    with pytest.raises(ValueError, match="num_queries"):
        YOLOS(TINY, num_queries=0)


def test_predict_average_precision_and_duplicates():
    torch.manual_seed(0)
    model = DETR(TINY, num_queries=3, decoder_depth=1)
    images = torch.rand(2, 3, 16, 16)
    pred = predict(model, images)
    assert pred["boxes"].shape == (2, 3, 4) and pred["scores"].shape == (2, 3)
    torch.testing.assert_close(pred["scores"] + pred["no_object"] <= 1.0 + 1e-6, torch.ones(2, 3, dtype=torch.bool))
    # a hand-made perfect detector with one duplicate
    targets = [{"boxes": torch.tensor([[1.0, 1.0, 8.0, 8.0]]), "labels": torch.tensor([2])},
               {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.long)}]
    perfect = {"boxes": torch.tensor([[[1.0, 1.0, 8.0, 8.0], [1.0, 1.0, 8.0, 7.5], [9.0, 9.0, 12.0, 12.0]],
                                      [[0.0, 0.0, 1.0, 1.0]] * 3]),
               "scores": torch.tensor([[0.9, 0.8, 0.1], [0.05, 0.05, 0.05]]),
               "labels": torch.tensor([[2, 2, 0], [1, 1, 1]])}
    ap = average_precision(perfect, targets)
    assert ap["map_50"] == pytest.approx(1.0)
    assert count_duplicates(perfect, targets) == {"objects": 1, "found": 1, "duplicates": 1}
    perfect["labels"][0, 1] = 3  # a different class is not a duplicate
    assert count_duplicates(perfect, targets)["duplicates"] == 0
    with pytest.raises(ValueError, match="threshold=1.5"):
        count_duplicates(perfect, targets, threshold=1.5)


def test_training_script_arms_match_parameters_and_refuse_unknown_arms():
    from vit_edu.tasks.detection_train import build, macs_per_image

    models = {arm: build(arm, 0) for arm in ("detr", "fixed", "yolos")}
    count = {arm: sum(p.numel() for p in m.parameters()) for arm, m in models.items()}
    assert count["detr"] == count["fixed"] and abs(count["yolos"] / count["detr"] - 1) < 0.01
    assert macs_per_image(models["yolos"]) > macs_per_image(models["detr"]) > 0
    with pytest.raises(ValueError, match="'ssd'"):
        build("ssd", 0)


def test_a_few_training_steps_change_the_weights_and_the_checkpoint_round_trips(tmp_path):
    from vit_edu.data.scenes import scene_split
    from vit_edu.tasks.detection_train import Budget, build, load_detector, train_detector

    model = build("detr", 0)
    before = [p.detach().clone() for p in model.parameters()]
    budget = Budget(steps=2, batch_size=4, warmup_steps=1)
    train_detector(model, scene_split("train", size=8, seed=0), budget, "fixed", 0)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    path = tmp_path / "detr.pt"
    torch.save({k: v.half() for k, v in model.state_dict().items()}, path)
    loaded = load_detector("detr", path)
    for a, b in zip(model.parameters(), loaded.parameters()):
        torch.testing.assert_close(a.detach(), b, rtol=1e-3, atol=1e-3)  # half precision
