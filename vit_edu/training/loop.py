"""Train a small ViT on a CPU: AdamW, linear warm-up then cosine decay, label smoothing, optional CutMix/MixUp.

:func:`train` is the one loop every experiment in the book uses; distillation passes its own ``loss_fn``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from vit_edu.data import ShapesDataset
from vit_edu.training.augment import crop_flip, make_mixer, rand_augment
from vit_edu.training.config import TrainConfig


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on weight matrices only: not on biases, LayerNorm parameters, CLS (or DeiT's distillation)
    tokens or position embeddings.

    Decaying a LayerNorm's scale or an embedding pulls it towards zero for no benefit; this is the usual
    split (as in timm and the DeiT recipe).
    """
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        is_embedding = any(key in name for key in ("cls_token", "dist_token", "pos_embed"))
        (no_decay if p.ndim < 2 or is_embedding else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW with the parameter groups above, and a linear warm-up followed by cosine decay to zero (or, with
    ``schedule="constant"``, the peak rate held to the end)."""
    optimizer = torch.optim.AdamW(parameter_groups(model, cfg.weight_decay), lr=cfg.lr)
    schedulers: list[torch.optim.lr_scheduler.LRScheduler] = []
    milestones = []
    if cfg.warmup_steps:
        schedulers.append(torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / cfg.warmup_steps,
                                                            total_iters=cfg.warmup_steps))
        milestones.append(cfg.warmup_steps)
    schedulers.append(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.steps - cfg.warmup_steps)
                      if cfg.schedule == "cosine" else torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0))
    scheduler = (torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers, milestones)
                 if milestones else schedulers[0])
    return optimizer, scheduler


@torch.no_grad()
def evaluate(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 500) -> dict[str, float]:
    """Accuracy and mean cross-entropy of ``model`` on a whole split, in eval mode."""
    was_training = model.training
    model.eval()
    correct, loss = 0, 0.0
    for start in range(0, len(labels), batch_size):
        logits = model(images[start : start + batch_size])
        target = labels[start : start + batch_size]
        loss += F.cross_entropy(logits, target, reduction="sum").item()
        correct += (logits.argmax(1) == target).sum().item()
    model.train(was_training)
    return {"accuracy": correct / len(labels), "loss": loss / len(labels)}


def train(
    model: nn.Module,
    train_set: ShapesDataset,
    val_set: ShapesDataset,
    cfg: TrainConfig,
    *,
    progress: bool = True,
    on_eval: Callable[[list[dict]], None] | None = None,
    loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> list[dict]:
    """Train in place; return the history: one row per evaluation with step, seconds, losses, accuracies.

    ``on_eval`` is called with the history after every evaluation (the notebooks redraw their curves there).
    ``loss_fn(model, images, labels, index)`` replaces the cross-entropy of ``model(images)``; ``index`` holds the
    batch's positions in ``train_set`` (distillation looks up the teacher's logits there). Seconds count training
    only, not evaluation.
    """
    torch.manual_seed(cfg.seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    mixer = make_mixer(cfg, len(train_set.classes))
    criterion = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    order = torch.Generator().manual_seed(cfg.seed)
    images, labels = train_set.images, train_set.labels
    history: list[dict] = []
    seconds, running, count = 0.0, 0.0, 0
    perm = torch.randperm(len(labels), generator=order)
    cursor = 0
    model.train()
    for step in tqdm(range(1, cfg.steps + 1), disable=not progress, desc="training", mininterval=1.0):
        start = time.perf_counter()
        if cursor + cfg.batch_size > len(perm):
            perm, cursor = torch.randperm(len(labels), generator=order), 0
        index = perm[cursor : cursor + cfg.batch_size]
        cursor += cfg.batch_size
        x, y = images[index], labels[index]
        if cfg.augment == "crop-flip":
            x = crop_flip(x)
        elif cfg.augment == "randaugment":
            x = rand_augment(x)
        if mixer is not None:
            x, y = mixer(x, y)  # y becomes (B, K) soft labels
        loss = criterion(model(x), y) if loss_fn is None else loss_fn(model, x, y, index)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        scheduler.step()
        seconds += time.perf_counter() - start
        running, count = running + loss.item(), count + 1
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"loss became {loss.item()} at step {step} (lr {scheduler.get_last_lr()[0]:.2g})")
        if step % cfg.eval_every == 0 or step == cfg.steps:
            val = evaluate(model, val_set.images, val_set.labels)
            history.append({"step": step, "seconds": round(seconds, 2), "train_loss": running / count,
                            "val_loss": val["loss"], "val_accuracy": val["accuracy"],
                            "lr": scheduler.get_last_lr()[0]})
            running, count = 0.0, 0
            if on_eval is not None:
                on_eval(history)
    model.eval()
    return history


def train_and_score(model: nn.Module, splits: tuple, cfg: TrainConfig) -> dict[str, float]:
    """Train ``model`` on ``splits`` (train, val, test) as :func:`train` does, then score it: the CPU seconds of
    training (``time.process_time``, which a busy machine does not stretch) and the accuracy on its own training
    images (eval mode, no augmentation) and on the test images."""
    train_set, val_set, test_set = splits
    start = time.process_time()
    train(model, train_set, val_set, cfg, progress=False)
    return {"cpu_seconds": round(time.process_time() - start, 1),
            "train_accuracy": evaluate(model, train_set.images, train_set.labels)["accuracy"],
            "test_accuracy": evaluate(model, test_set.images, test_set.labels)["accuracy"]}
