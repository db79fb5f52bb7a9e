"""DeiT's distillation token: a ViT with a second learned token that learns from a teacher's predictions.

DeiT (Touvron et al., 2021) trains a ViT on ImageNet alone, without JFT-300M, and adds knowledge distillation
(Hinton et al., 2015) from a convolutional teacher. Next to the CLS token, the student prepends a distillation
token: S = N + 2 tokens go through the same encoder, and the two tokens are read out by two linear heads. The
CLS head learns from the true labels; the distillation head learns from the teacher, either

* hard distillation: cross-entropy with the teacher's top class ``argmax(teacher logits)``, the two losses
  weighted ½ and ½; or
* soft distillation: ``(1 - α)·CE(CLS head, labels) + α·τ²·KL(softmax(teacher/τ) ‖ softmax(student/τ))``,
  with temperature τ and weight α (the paper's formula; the DeiT code divides the summed KL by B·K, not B).

At test time the model predicts with the average of the two heads' logits, as DeiT's official code does (the
paper's text adds the two heads' softmax outputs instead). The student
here is :class:`vit_edu.VisionTransformer` with the extra token, its own position-embedding row, and a second
head; everything else is the parent class's. The teacher on the shapes task is chapter 9's
:class:`vit_edu.training.cnn.SmallCNN`. Left out, and said in chapter 15: DeiT's heavy augmentation and regularisation
(RandAugment, Mixup, CutMix, random erasing, repeated augmentation, stochastic depth), which the shapes task
does not need, and the ImageNet-scale teacher (a RegNetY-16GF).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim
from vit_edu.config import ViTConfig
from vit_edu.embedding import prepend_cls
from vit_edu.model import VisionTransformer
from vit_edu.position import sincos_2d
from vit_edu.trace import record
from vit_edu.training import TrainConfig, train

KINDS = ("none", "hard", "soft")  # what the distillation head learns from: nothing (labels only), teacher argmax, teacher soft
Kind = Literal["none", "hard", "soft"]
UNLABELLED = -1  # a label value: an image the teacher scores but nobody labelled (its label terms are skipped)


class DistilledViT(VisionTransformer):
    """A ViT with a distillation token after the CLS token: S = N + 2; a CLS head and a distillation head.

    ``forward`` returns the average of the two heads' logits in eval mode (DeiT's test-time prediction) and the
    pair ``(cls_logits, dist_logits)`` in train mode; :meth:`forward_heads` returns the pair in either mode.
    """

    def __init__(self, config: ViTConfig) -> None:
        if config.pool != "cls":
            raise ValueError(f"a distillation token sits next to the CLS token: needs pool='cls', got {config.pool!r}")
        if config.pos_embed == "relative":
            raise ValueError("pos_embed='relative' is not supported with a distillation token: its bias tables have "
                             "entries for one prefix token; use 'learned', 'sincos' or 'none'")
        super().__init__(config)
        dim = config.embed_dim
        self.dist_token = nn.Parameter(torch.empty(1, 1, dim).normal_(std=0.02))  # DeiT: N(0, 0.02²)
        # The position table gains one row, for the distillation token (index 1); the CLS token keeps row 0.
        shape = (1, config.num_patches + 2, dim)
        if config.pos_embed == "learned":
            self.pos_embed.embedding = nn.Parameter(torch.empty(shape).normal_(std=0.02))
        elif config.pos_embed == "sincos":
            table = torch.zeros(shape)  # the two prefix rows stay zero
            table[0, 2:] = sincos_2d(config.grid_size, dim)
            self.pos_embed.register_buffer("embedding", table, persistent=False)
        self.head_dist = nn.Linear(dim, config.num_classes)
        nn.init.zeros_(self.head_dist.weight)
        nn.init.zeros_(self.head_dist.bias)

    @property
    def seq_len(self) -> int:
        """S = N + 2: the patches, the CLS token and the distillation token."""
        return self.config.num_patches + 2

    def prepend_tokens(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, N, D)`` patch tokens -> ``(B, N+2, D)``: [CLS, distillation token, patches]."""
        x = prepend_cls(x, self.dist_token)  # (B, N+1, D): [dist, patches]
        return prepend_cls(x, self.cls_token)  # (B, N+2, D): [CLS, dist, patches]

    def forward_heads(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, C, H, W)`` -> ``(cls_logits, dist_logits)``, each ``(B, K)``: the CLS head and the distillation head."""
        tokens = self.forward_features(images)  # (B, N+2, D)
        return self.head(tokens[:, 0]), self.head_dist(tokens[:, 1])

    def forward(self, images: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Eval mode: the two heads' average ``(B, K)``; train mode: ``(cls_logits, dist_logits)``."""
        cls_logits, dist_logits = self.forward_heads(images)
        if self.training:
            return cls_logits, dist_logits
        logits = (cls_logits + dist_logits) / 2  # (B, K): DeiT's test-time prediction
        record("logits", logits)
        return logits


def _check_logits(cls_logits: torch.Tensor, dist_logits: torch.Tensor, labels: torch.Tensor,
                  teacher_logits: torch.Tensor) -> None:
    for name, t in (("cls_logits", cls_logits), ("dist_logits", dist_logits), ("teacher_logits", teacher_logits)):
        check_ndim(name, t, 2, "(B, K)")
        if t.shape != cls_logits.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)} but cls_logits has {tuple(cls_logits.shape)}: "
                             f"student and teacher must score the same B images over the same K classes")
    check_ndim("labels", labels, 1, "(B,)")
    if labels.shape[0] != cls_logits.shape[0]:
        raise ValueError(f"{labels.shape[0]} labels for {cls_logits.shape[0]} rows of logits")
    bad = labels[(labels < UNLABELLED) | (labels >= cls_logits.shape[1])]
    if len(bad):
        raise ValueError(f"labels must be class indices 0..{cls_logits.shape[1] - 1} or {UNLABELLED} (unlabelled), "
                         f"got {sorted(set(bad.tolist()))}")


def label_term(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with the labels, summed over the labelled rows and divided by the batch size B.

    Every image weighs the same and an ``UNLABELLED`` one adds 0; with every row labelled this is
    ``F.cross_entropy(logits, labels)``. (Averaging over the labelled rows alone would give the few labelled images
    of a mixed batch many times the weight of the others.)
    """
    labelled = labels != UNLABELLED  # (B,)
    per_image = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")  # (B,); unlabelled rows masked below
    return (per_image * labelled).sum() / len(labels)


def soft_distillation_term(student_logits: torch.Tensor, teacher_logits: torch.Tensor, tau: float) -> torch.Tensor:
    """τ²·KL(softmax(teacher/τ) ‖ softmax(student/τ)), averaged over the batch: the soft target's loss.

    The τ² keeps the gradient's size comparable across temperatures (Hinton et al., 2015): the gradient of the KL
    at temperature τ shrinks like 1/τ².
    """
    if not tau > 0:
        raise ValueError(f"temperature tau must be > 0, got {tau}")
    log_p_student = F.log_softmax(student_logits / tau, dim=-1)  # (B, K)
    log_p_teacher = F.log_softmax(teacher_logits / tau, dim=-1)  # (B, K)
    return F.kl_div(log_p_student, log_p_teacher, reduction="batchmean", log_target=True) * tau**2


def distillation_loss(
    cls_logits: torch.Tensor,
    dist_logits: torch.Tensor,
    labels: torch.Tensor,
    teacher_logits: torch.Tensor,
    *,
    kind: Kind = "hard",
    alpha: float = 0.5,
    tau: float = 1.0,
) -> torch.Tensor:
    """The DeiT loss: the CLS head learns the labels, the distillation head the teacher (hard or soft).

    Rows whose label is ``UNLABELLED`` (-1) add only the teacher term: the student learns them from the teacher.
    ``kind="hard"``: ``(1 - α)·CE(cls, labels) + α·CE(dist, argmax teacher)`` (the paper uses α = ½);
    ``kind="soft"``: ``(1 - α)·CE(cls, labels) + α·τ²·KL(teacher/τ ‖ dist/τ)``; ``kind="none"``: the mean of
    ``CE(cls, labels)`` and ``CE(dist, labels)`` (two heads, no teacher: the control). For classic distillation
    without a distillation token, pass the same logits as ``cls_logits`` and ``dist_logits``.
    """
    _check_logits(cls_logits, dist_logits, labels, teacher_logits)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if not tau > 0:
        raise ValueError(f"temperature tau must be > 0, got {tau}")
    teacher_logits = teacher_logits.detach()  # a fixed target: no gradient flows into the teacher
    label_loss = label_term(cls_logits, labels)
    if kind == "none":
        return (label_loss + label_term(dist_logits, labels)) / 2
    if kind == "hard":
        teacher_term = F.cross_entropy(dist_logits, teacher_logits.argmax(dim=-1))
    else:
        teacher_term = soft_distillation_term(dist_logits, teacher_logits, tau)
    return (1 - alpha) * label_loss + alpha * teacher_term


@torch.no_grad()
def teacher_logits(teacher: nn.Module, images: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """The teacher's logits ``(n, K)`` for every image, in eval mode (no gradients), computed once.

    Without data augmentation an image's teacher logits never change, so computing them once is the same as
    calling the teacher in every step, and far cheaper.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    was_training = teacher.training
    teacher.eval()
    out = torch.cat([teacher(images[i : i + batch_size]) for i in range(0, len(images), batch_size)])
    teacher.train(was_training)
    return out


def train_distilled(
    student: DistilledViT,
    targets: torch.Tensor,
    train_set,
    val_set,
    cfg: TrainConfig,
    *,
    kind: Kind = "hard",
    alpha: float = 0.5,
    tau: float = 1.0,
) -> list[dict]:
    """Train ``student`` in place with :func:`distillation_loss` against ``targets`` (the teacher's logits of
    every training image, :func:`teacher_logits`); the recipe (AdamW, warm-up + cosine, batches, order) is
    :func:`vit_edu.training.train`'s, with this loss in place of the cross-entropy. Training images labelled
    ``UNLABELLED`` are learnt from the teacher alone. Returns its history."""
    if not isinstance(student, DistilledViT):
        raise ValueError(f"student must be a DistilledViT, got {type(student).__name__}")
    if targets.shape != (len(train_set.labels), student.config.num_classes):
        raise ValueError(f"targets must have shape ({len(train_set.labels)}, {student.config.num_classes}), "
                         f"one row of teacher logits per training image; got {tuple(targets.shape)}")
    if cfg.mix != "none" or cfg.augment != "none" or cfg.label_smoothing:
        raise ValueError("train_distilled uses fixed teacher logits: it needs mix='none', augment='none' and "
                         f"label_smoothing=0, got {cfg.mix!r}, {cfg.augment!r}, {cfg.label_smoothing}")

    def loss_fn(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        cls_logits, dist_logits = model(images)  # train mode: both heads, (B, K) each
        return distillation_loss(cls_logits, dist_logits, labels, targets[index], kind=kind, alpha=alpha, tau=tau)

    return train(student, train_set, val_set, cfg, progress=False, loss_fn=loss_fn)

