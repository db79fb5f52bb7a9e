import json

import pytest
import torch

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.explain.ablation import PARTS, ablation_accuracies, drop_updates, mean_updates, update_means
from vit_edu.training.checkpoint import CHECKPOINTS


@pytest.fixture
def model():
    torch.manual_seed(0)
    cfg = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32)
    m = VisionTransformer(cfg).eval()
    torch.nn.init.normal_(m.head.weight)  # the zero-initialised head would hide every change in the logits
    return m


@pytest.fixture
def images():
    return torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def embeddings(model, images):
    return model.pos_embed(model.prepend_tokens(model.patch_embed(images)))  # (B, S, D)


def test_dropping_nothing_gives_the_logits_exactly(model, images):
    with torch.no_grad():
        reference = model(images)
        with drop_updates(model, []):
            ablated = model(images)
    assert torch.equal(ablated, reference)


def test_dropping_both_everywhere_leaves_the_embeddings(model, images):
    with torch.no_grad(), drop_updates(model, [(b, "both") for b in range(2)]):
        hidden, _ = model.forward_layers(images)
        for h in hidden:
            assert torch.equal(h, embeddings(model, images))


def test_dropping_attention_leaves_only_the_mlp_update(model, images):
    with torch.no_grad():
        x = embeddings(model, images)
        block = model.blocks[0]
        expected = x + block.mlp(block.norm2(x))
        with drop_updates(model, [(0, "attn")]):
            hidden, _ = model.forward_layers(images)
    torch.testing.assert_close(hidden[0], expected)


def test_dropping_the_mlp_leaves_only_the_attention_update(model, images):
    with torch.no_grad():
        x = embeddings(model, images)
        block = model.blocks[0]
        expected = x + block.attn(block.norm1(x))[0]
        with drop_updates(model, [(0, "mlp")]):
            hidden, _ = model.forward_layers(images)
    torch.testing.assert_close(hidden[0], expected)


def test_each_drop_changes_the_logits_and_the_hooks_go_away(model, images):
    with torch.no_grad():
        reference = model(images)
        for part in PARTS:
            with drop_updates(model, [(1, part)]):
                assert not torch.allclose(model(images), reference)
        with pytest.raises(RuntimeError), drop_updates(model, [(0, "both")]):
            raise RuntimeError("inside the with block")
        assert torch.equal(model(images), reference)


@pytest.mark.parametrize("drop, named", [((2, "attn"), "2"), ((-1, "mlp"), "-1"), ((0, "norm"), "'norm'"),
                                         ((True, "mlp"), "True")])
def test_bad_block_or_part_raises_naming_it(model, drop, named):
    with pytest.raises(ValueError, match=named):
        with drop_updates(model, [drop]):
            pass


def test_ablation_accuracies_has_one_arm_per_block_and_part(model, images):
    labels = torch.tensor([0, 1, 2, 0])
    acc = ablation_accuracies(model, images, labels)
    assert len(acc) == 1 + 3 * 2 and "block 2: both" in acc
    assert all(0 <= v <= 1 for v in acc.values())
    with pytest.raises(ValueError, match=r"\(3,\)"):
        ablation_accuracies(model, images, labels[:3])


def test_shipped_block_ablation_covers_three_seeds_and_every_arm():
    data = json.loads((CHECKPOINTS / "block_ablation.json").read_text())
    assert [r["seed"] for r in data["results"]] == [0, 1, 2]
    assert {"torch", "threads", "test_images", "preset"} <= set(data)
    arms = {"none"} | {f"block {b}: {p}" for b in range(1, 5) for p in PARTS}
    for row in data["results"]:
        assert set(row["accuracy"]) == arms and set(row["mean_accuracy"]) == arms
        assert row["mean_accuracy"]["none"] == row["accuracy"]["none"]  # the intact model, scored once per kind


def test_update_means_has_one_position_wise_mean_per_block_and_sublayer(model, images):
    means = update_means(model, images)
    assert set(means) == {(b, sub) for b in range(2) for sub in ("attn", "mlp")}
    with torch.no_grad():
        x = embeddings(model, images)  # (B, S, D)
        expected = model.blocks[0].attn(model.blocks[0].norm1(x))[0].mean(dim=0)  # (S, D)
    torch.testing.assert_close(means[(0, "attn")], expected)
    assert all(m.shape == x.shape[1:] for m in means.values())
    with pytest.raises(ValueError, match=r"\(1, 3, 16, 16\)"):
        update_means(model, images[:1])


def test_mean_ablation_adds_the_mean_update_instead_of_the_images_own(model, images):
    means = update_means(model, images)
    with torch.no_grad():
        x = embeddings(model, images)
        block = model.blocks[0]
        mid = x + means[(0, "attn")]  # the same attention update for every image
        expected = mid + block.mlp(block.norm2(mid))
        with mean_updates(model, [(0, "attn")], means):
            hidden, _ = model.forward_layers(images)
    torch.testing.assert_close(hidden[0], expected)


def test_mean_ablation_changes_nothing_when_every_image_is_the_same(model, images):
    same = images[:1].expand(4, -1, -1, -1)  # four copies: each update equals its own mean
    means = update_means(model, same)
    with torch.no_grad():
        reference = model(same)
        with mean_updates(model, [(b, "both") for b in range(2)], means):
            ablated = model(same)
        with drop_updates(model, [(b, "both") for b in range(2)]):
            zeroed = model(same)
    torch.testing.assert_close(ablated, reference)
    assert not torch.allclose(zeroed, reference)  # zero ablation does change them


def test_mean_ablation_names_a_missing_or_mismatched_mean(model, images):
    means = update_means(model, images)
    with pytest.raises(ValueError, match=r"\(1, 'mlp'\)"):
        with mean_updates(model, [(1, "both")], {k: v for k, v in means.items() if k != (1, "mlp")}):
            pass
    wrong = {k: v[:3] for k, v in means.items()}  # (3, D): means of another sequence length
    with torch.no_grad():
        reference = model(images)
        with pytest.raises(ValueError, match="another size"), mean_updates(model, [(0, "attn")], wrong):
            model(images)
        assert torch.equal(model(images), reference)  # the hooks went away after the error


def test_ablation_accuracies_with_means_is_the_mean_ablation(model, images):
    labels = torch.tensor([0, 1, 2, 0])
    means = update_means(model, images)
    acc = ablation_accuracies(model, images, labels, means)
    with torch.no_grad(), mean_updates(model, [(1, "both")], means):
        expected = (model(images).argmax(1) == labels).float().mean().item()
    assert acc["block 2: both"] == pytest.approx(expected, abs=1e-4)
