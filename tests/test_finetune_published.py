"""Fine-tuning a published ViT on upsampled small images (vit_edu.training.finetune_published), on a tiny random
model: nothing is downloaded."""

import pytest
import torch
import torch.nn.functional as F

import vit_edu
from vit_edu.data import ImageSplit
from vit_edu.training import finetune
from vit_edu.training.finetune_published import IMAGENET_MEAN, IMAGENET_STD, finetune_published

CLASSES = ("small", "medium", "large")
STEPS, LR = 3, 1e-3


def tiny(image_size: int) -> vit_edu.VisionTransformer:
    """A random stand-in for ViT-B/16: 16-pixel patches, D = 32, one block, a 10-class head that is not zero."""
    torch.manual_seed(0)
    model = vit_edu.VisionTransformer(vit_edu.ViTConfig(image_size=image_size, patch_size=16, num_classes=10,
                                                        embed_dim=32, depth=1, num_heads=2, mlp_dim=64))
    torch.nn.init.ones_(model.head.weight)  # a trained head is not zero: the new one must not start from it
    return model.eval()


def split(n: int, seed: int) -> ImageSplit:
    gen = torch.Generator().manual_seed(seed)
    return ImageSplit(torch.rand(n, 3, 32, 32, generator=gen), torch.arange(n) % 3, CLASSES)


TRAIN, TEST = split(12, 1), split(9, 2)


@pytest.mark.parametrize("image_size", [32, 48])  # 48: the 32-pixel images are upsampled to a 3×3 patch grid
def test_new_head_and_a_body_changed_only_by_training(image_size):
    model = tiny(image_size)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tuned, accuracy = finetune_published(model, TRAIN, TEST, steps=STEPS, batch_size=4, lr=LR, warmup_steps=1,
                                         mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # the caller's model untouched
    assert tuned is not model and 0.0 <= accuracy <= 1.0 and not tuned.training
    assert tuned.config.num_classes == 3 and tuned.config.image_size == (image_size, image_size)
    assert tuned.head.weight.shape == (3, 32) and tuned.head.bias.shape == (3,)
    # Adam moves a weight by a few times lr per step at most: the head started at zero, not from the old ones.
    bound = 10 * STEPS * LR
    assert tuned.head.weight.abs().max() < bound and tuned.head.weight.abs().max() > 0
    after = tuned.state_dict()
    body = [k for k in before if not k.startswith("head.")]
    assert set(after) == set(before) and all(after[k].shape == before[k].shape for k in body)
    moved = {k: (after[k] - before[k]).abs().max().item() for k in body}
    assert max(moved.values()) < bound  # trained, not re-initialised
    assert moved["blocks.0.attn.qkv.weight"] > 0 and moved["patch_embed.proj.weight"] > 0  # every weight trains


def test_accuracy_is_that_of_the_returned_model_on_upsampled_standardised_images():
    tuned, accuracy = finetune_published(tiny(48), TRAIN, TEST, steps=STEPS, batch_size=4, lr=1e-2, warmup_steps=0,
                                         mean=IMAGENET_MEAN, std=IMAGENET_STD)
    x = F.interpolate(TEST.images, size=(48, 48), mode="bilinear", align_corners=False)  # (9, 3, 48, 48)
    x = (x - torch.tensor(IMAGENET_MEAN)[:, None, None]) / torch.tensor(IMAGENET_STD)[:, None, None]
    with torch.no_grad():
        expected = (tuned(x).argmax(1) == TEST.labels).float().mean().item()
    assert accuracy == pytest.approx(expected)
    assert accuracy * len(TEST) == pytest.approx(round(accuracy * len(TEST)))  # a count of test images


def test_same_seed_same_weights_other_seed_other_batches():
    runs = [finetune_published(tiny(32), TRAIN, TEST, steps=STEPS, batch_size=4, lr=LR, seed=s)[0].state_dict()
            for s in (0, 0, 1)]
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert not all(torch.equal(runs[0][k], runs[2][k]) for k in runs[0])


def test_bad_arguments_raise_value_errors_naming_them():
    model = tiny(32)
    cases = [
        (dict(model=torch.nn.Linear(2, 2)), "Linear"),
        (dict(batch_size=0), "batch_size must be a positive integer, got 0"),
        (dict(batch_size=13), "batch_size 13 exceeds the 12 images"),
        (dict(steps=0), "steps must be a positive integer, got 0"),
        (dict(lr=-1.0), "lr=-1.0"),
        (dict(warmup_steps=3, steps=3), r"warmup_steps must be in \[0, steps=3\), got 3"),
        (dict(grad_clip=0.0), "grad_clip must be None or > 0, got 0.0"),
        (dict(mean=(0.5, 0.5)), r"mean needs one value per channel \(3\), got \(0.5, 0.5\)"),
        (dict(std=(0.2, 0.0, 0.2)), r"std must be positive, got \(0.2, 0.0, 0.2\)"),
        (dict(seed=-1), "seed must be a non-negative integer, got -1"),
        (dict(eval_batch_size=0), "eval_batch_size must be a positive integer, got 0"),
        (dict(test_set=ImageSplit(TEST.images, TEST.labels, ("a", "b", "c"))), r"\('a', 'b', 'c'\) differ"),
        (dict(test_set=ImageSplit(TEST.images, TEST.labels + 1, CLASSES)), r"\[0, 3\), got 1 to 3"),
        (dict(test_set=ImageSplit(TEST.images[:0], TEST.labels[:0], CLASSES)), "no images"),
        (dict(train_set=ImageSplit(TRAIN.images[:, :1], TRAIN.labels, CLASSES)), "1 channels, the model takes 3"),
        (dict(train_set=ImageSplit(TRAIN.images, TRAIN.labels.float(), CLASSES)), "torch.float32"),
        (dict(train_set=ImageSplit(TRAIN.images[0], TRAIN.labels, CLASSES)), r"\(3, 32, 32\)"),
        (dict(train_set=ImageSplit(TRAIN.images, TRAIN.labels % 1, ("one",))), r"at least 2 classes, got \('one',\)"),
    ]
    for change, message in cases:
        kwargs = {**dict(model=model, train_set=TRAIN, test_set=TEST, steps=2, batch_size=4), **change}
        with pytest.raises(ValueError, match=message):
            finetune_published(kwargs.pop("model"), kwargs.pop("train_set"), kwargs.pop("test_set"), **kwargs)


def test_the_chapter_splits_are_the_shipped_runs_own():
    pool = finetune.size_split(60, 32, finetune.POOL_SEED)
    labelled = finetune.labelled_split(pool, 30, 0)
    index = finetune.balanced_subset(pool.labels, 30, torch.Generator().manual_seed(0))
    assert torch.equal(labelled.images, pool.images[index]) and torch.equal(labelled.labels, pool.labels[index])
    held_out = finetune.held_out_split(30, 32)
    assert torch.bincount(held_out.labels, minlength=3).tolist() == [10, 10, 10]
    assert torch.equal(held_out.images, finetune.held_out_split(30, 32).images)  # the same images every time
    unseen = finetune.size_split(60, 32, finetune.TEST_SEED)
    assert all((unseen.images == image).flatten(1).all(1).any() for image in held_out.images)  # from TEST_SEED
