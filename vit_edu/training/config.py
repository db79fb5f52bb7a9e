"""How to train: one frozen dataclass of optimiser, schedule, augmentation and data settings, checked on creation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TrainConfig:
    """How to train. ``steps`` optimiser steps of ``batch_size`` images; ``mix`` turns on CutMix/MixUp;
    ``grad_clip`` rescales the gradients whenever their global norm exceeds it."""

    steps: int = 600
    batch_size: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup_steps: int = 60
    label_smoothing: float = 0.1
    mix: Literal["none", "cutmix", "mixup", "both"] = "none"
    augment: Literal["none", "crop-flip", "randaugment"] = "none"  # crop (pad 4) + flip, or RandAugment(2, 9)
    schedule: Literal["cosine", "constant"] = "cosine"  # after the warm-up: cosine decay to 0, or the peak rate held
    train_size: int = 5000
    distractor: bool = False
    seed: int = 0
    eval_every: int = 50
    grad_clip: float | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "train_size", "eval_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must be in [0, steps={self.steps}), got {self.warmup_steps}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.mix not in ("none", "cutmix", "mixup", "both"):
            raise ValueError(f"mix must be 'none', 'cutmix', 'mixup' or 'both', got {self.mix!r}")
        if self.augment not in ("none", "crop-flip", "randaugment"):
            raise ValueError(f"augment must be 'none', 'crop-flip' or 'randaugment', got {self.augment!r}")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be None or > 0, got {self.grad_clip}")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError(f"lr must be > 0 and weight_decay ≥ 0, got lr={self.lr}, weight_decay={self.weight_decay}")
