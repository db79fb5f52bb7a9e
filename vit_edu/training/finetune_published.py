"""Fine-tune a published ViT (e.g. torchvision's ImageNet ViT-B/16) on small 32-pixel images, as chapter 12 offers.

:func:`finetune_published` gives a copy of the model a fresh zero-initialised head for the task's classes, upsamples
each batch bilinearly to the model's input size (32×32 → 224×224 for ViT-B/16: a 14×14 grid of 16-pixel patches),
standardises it per channel (ImageNet's mean and std for ImageNet weights), trains every weight for a few steps and
returns the model with its accuracy on held-out images. It downloads nothing: the caller brings the model
(:func:`vit_edu.interop.pretrained_vit_b16` fetches torchvision's weights only when asked).
"""

from __future__ import annotations

import copy
import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.data import ImageSplit
from vit_edu.model import VisionTransformer
from vit_edu.training.config import TrainConfig
from vit_edu.training.loop import evaluate, train


# ImageNet's per-channel mean and std, the standardisation torchvision's ImageNet weights were trained with.
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)


class Upsampled(nn.Module):
    """``model`` behind a bilinear resize to its input size and a per-channel standardisation.

    The resize runs on every batch instead of once on the whole split: 1,200 images at 224×224 would hold about
    720 MB of float32 pixels.
    """

    def __init__(self, model: VisionTransformer, mean: tuple[float, ...] | None, std: tuple[float, ...] | None) -> None:
        super().__init__()
        self.model = model
        channels = model.config.in_channels
        mean = (0.0,) * channels if mean is None else mean
        std = (1.0,) * channels if std is None else std
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, channels, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, channels, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, h, w)`` images in [0, 1] -> logits ``(B, K)``."""
        size = self.model.config.image_size  # (H, W)
        x = F.interpolate(images, size=size, mode="bilinear", align_corners=False)  # (B, C, H, W)
        return self.model((x - self.mean) / self.std)


def _check_split(name: str, split: ImageSplit, channels: int, classes: tuple[str, ...]) -> None:
    check_ndim(f"{name}.images", split.images, 4, "(n, C, h, w)")
    if split.images.shape[1] != channels:
        raise ValueError(f"{name}.images have {split.images.shape[1]} channels, the model takes {channels}")
    if split.labels.shape != (len(split.images),):
        raise ValueError(f"{name}.labels must have shape ({len(split.images)},), got {tuple(split.labels.shape)}")
    if split.labels.dtype != torch.long:
        raise ValueError(f"{name}.labels must be int64 class indices, got {split.labels.dtype}")
    if tuple(split.classes) != classes:
        raise ValueError(f"{name}.classes {tuple(split.classes)} differ from train_set.classes {classes}")
    if len(split.labels) and not 0 <= int(split.labels.min()) <= int(split.labels.max()) < len(classes):
        raise ValueError(f"{name}.labels must lie in [0, {len(classes)}), got {int(split.labels.min())} "
                         f"to {int(split.labels.max())}")


def finetune_published(model: VisionTransformer, train_set: ImageSplit, test_set: ImageSplit, *, steps: int = 50,
                       batch_size: int = 8, lr: float = 1e-4, weight_decay: float = 0.0,
                       warmup_steps: int | None = None, grad_clip: float | None = 1.0,
                       mean: tuple[float, ...] | None = None, std: tuple[float, ...] | None = None, seed: int = 0,
                       eval_batch_size: int = 50) -> tuple[VisionTransformer, float]:
    """A copy of ``model`` with a fresh head for ``train_set.classes``, fine-tuned; and its test accuracy in [0, 1].

    ``model`` itself is left unchanged. The copy's head becomes a zero-initialised ``Linear(D, K)`` (K =
    ``len(train_set.classes)``), so it starts by predicting class 0 for every image, as the book's own arms do. Each
    step draws ``batch_size`` images of ``train_set`` (a new random order per pass, seeded by ``seed``), upsamples
    them to the model's ``image_size`` (bilinear), standardises them with ``mean`` and ``std`` (per channel; none
    when left out: pass :data:`IMAGENET_MEAN` and :data:`IMAGENET_STD` for ImageNet weights) and takes one AdamW
    step on the cross-entropy, every weight trained, in the book's :func:`~vit_edu.training.train` loop: the rate
    warms up linearly over ``warmup_steps`` (by default a tenth of ``steps``) and then decays to zero on a cosine,
    weight decay stays off biases, LayerNorms and embeddings, and gradients are clipped to a global norm of
    ``grad_clip``.

    Why AdamW at 1e-4 and not the paper's SGD with momentum 0.9: the paper sweeps its SGD rate per data set, for
    batches of 512 and thousands of steps, and SGD's step scales with the gradient, so none of its rates is tested
    for batch 8 and 50 steps. Adam's step is about ``lr`` per weight whatever the gradient's scale, so ``lr`` sets how
    far the published weights can move: at 1e-4, the top of the 3e-5 to 1e-4 range in which ViTs are commonly
    fine-tuned with AdamW, the 50 steps' rates (warm-up, then cosine) add up to about 0.0026, a few thousandths per
    weight, while the zero head, which has to learn from nothing in those 50 steps, gets the largest step of the
    range. The book's own arms train with AdamW too. ``weight_decay=0`` and ``grad_clip=1.0`` follow the paper's
    fine-tuning (no weight decay, clipping at global norm 1). Not tuned: no other setting was tried.

    Accuracy is measured on ``test_set`` in eval mode, ``eval_batch_size`` images at a time (small batches keep the
    memory of a ViT-B/16 at 224×224 modest). Bad arguments raise ``ValueError`` naming the offending values.
    """
    if not isinstance(model, VisionTransformer):
        raise ValueError(f"model must be a vit_edu.VisionTransformer, got {type(model).__name__}")
    classes = tuple(train_set.classes)
    if len(classes) < 2:
        raise ValueError(f"train_set.classes must name at least 2 classes, got {classes}")
    channels = model.config.in_channels
    for name, split in (("train_set", train_set), ("test_set", test_set)):
        _check_split(name, split, channels, classes)
    if not len(test_set):
        raise ValueError("test_set holds no images: there is nothing to measure the accuracy on")
    check_positive_int("batch_size", batch_size)
    check_positive_int("eval_batch_size", eval_batch_size)
    if batch_size > len(train_set):
        raise ValueError(f"batch_size {batch_size} exceeds the {len(train_set)} images of train_set")
    for name, values in (("mean", mean), ("std", std)):
        if values is not None and len(values) != channels:
            raise ValueError(f"{name} needs one value per channel ({channels}), got {values!r}")
    if std is not None and not all(s > 0 for s in std):
        raise ValueError(f"std must be positive, got {std!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    check_positive_int("steps", steps)
    warmup_steps = steps // 10 if warmup_steps is None else warmup_steps
    # lr, weight_decay, warmup_steps and grad_clip are checked here, with errors that name them.
    cfg = TrainConfig(steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay, warmup_steps=warmup_steps,
                      label_smoothing=0.0, train_size=len(train_set), eval_every=steps, seed=seed, grad_clip=grad_clip)

    tuned = copy.deepcopy(model)
    tuned.head = nn.Linear(tuned.config.embed_dim, len(classes))  # (K, D) weights
    nn.init.zeros_(tuned.head.weight)
    nn.init.zeros_(tuned.head.bias)
    tuned.config = dataclasses.replace(tuned.config, num_classes=len(classes))
    for p in tuned.parameters():
        p.requires_grad_(True)
    net = Upsampled(tuned, mean, std)

    # The book's loop (seeded batches in a new order each pass, clipping, a check that the loss stays finite); its
    # end-of-run check reads one training batch, since the test set is scored below.
    one_batch = ImageSplit(train_set.images[:batch_size], train_set.labels[:batch_size], classes)
    train(net, train_set, one_batch, cfg, progress=False)
    accuracy = evaluate(net, test_set.images, test_set.labels, batch_size=eval_batch_size)["accuracy"]
    return tuned.eval(), accuracy
