"""DINO (Caron et al., 2021): self-distillation with no labels. A student matches an EMA teacher across crops.

Pieces, each small enough to test alone: :func:`multi_crop` (2 global + several local crops, each colour-jittered
with probability ``jitter_prob``), :class:`DINOHead` (MLP -> L2-normalised bottleneck -> weight-normalised
prototypes), :func:`dino_loss` (cross-entropy between the teacher's centred, sharpened softmax and the student's
log-softmax, over every pair of DIFFERENT views), :func:`update_center` and :func:`update_teacher` (two exponential
moving averages), and :class:`DINO` that ties them together. No labels and no negatives: collapse is held off by
centring and sharpening the teacher alone.

Every crop is resized to the encoder's input size (32×32 for the shapes task). A 16×16 local crop would be a 2×2
grid of 8-pixel patches (4 tokens) and would need the learned position table resampled on every step; upsampling
keeps one input size and one code path, at the cost of computing a full-size forward pass per local crop. Of the
paper's augmentations the module implements colour jitter and grayscale (:func:`colour_jitter`, on by default at
the paper's probabilities 0.8 and 0.2); blur and solarisation are left out. The shipped run
(:data:`vit_edu.variants.dino_train.DINO_CONFIG`) turns both off, ``jitter_prob=0.0, grayscale_prob=0.0``: in short
trial runs with the jitter on (100 steps, learning rates 1e-3 and 3e-4), the teacher's targets went flat, the
collapse that centring alone produces. The price, said in chapter 16, is likely a colour shortcut: every shapes
image has its own random colours, so two crops of one image can be matched by colour without looking at the shape.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer


@dataclasses.dataclass(frozen=True)
class DINOConfig:
    """The encoder and DINO's own settings (the paper's values where a toy can use them; K and widths shrunk)."""

    encoder: ViTConfig
    num_prototypes: int = 256  # K (65,536 in the paper)
    head_hidden_dim: int = 256  # the projection MLP's width (2048 in the paper)
    bottleneck_dim: int = 64  # the L2-normalised layer before the prototypes (256 in the paper)
    num_local_crops: int = 4  # small crops seen by the student only (the paper uses 6 or 10)
    global_scale: tuple[float, float] = (0.4, 1.0)  # share of the image's area a global crop covers
    local_scale: tuple[float, float] = (0.05, 0.4)  # share for a local crop
    jitter_prob: float = 0.8  # colour jitter of each crop (channel shuffle, brightness, contrast), as the paper's 0.8
    grayscale_prob: float = 0.2
    student_temp: float = 0.1
    teacher_temp: float = 0.04  # sharpening: lower than the student's
    center_momentum: float = 0.9
    teacher_momentum: float = 0.996  # start of the cosine schedule that ends at 1

    def __post_init__(self) -> None:
        if isinstance(self.encoder, dict):  # after a JSON round trip
            object.__setattr__(self, "encoder", ViTConfig(**self.encoder))
        if self.encoder.pool != "cls":
            raise ValueError(f"DINO reads the CLS token: the encoder needs pool='cls', got {self.encoder.pool!r}")
        for name in ("num_prototypes", "head_hidden_dim", "bottleneck_dim"):
            check_positive_int(name, getattr(self, name))
        local = self.num_local_crops
        if isinstance(local, bool) or not isinstance(local, int) or local < 0:
            raise ValueError(f"num_local_crops must be an int ≥ 0, got {self.num_local_crops!r}")
        for name in ("global_scale", "local_scale"):
            low, high = (float(v) for v in getattr(self, name))
            if not 0 < low <= high <= 1:
                raise ValueError(f"{name} must be (low, high) with 0 < low ≤ high ≤ 1, got {getattr(self, name)!r}")
            object.__setattr__(self, name, (low, high))
        for name in ("jitter_prob", "grayscale_prob"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be a probability in [0, 1], got {getattr(self, name)}")
        for name in ("student_temp", "teacher_temp"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("center_momentum", "teacher_momentum"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")

    def to_dict(self) -> dict:
        """JSON-ready; ``DINOConfig(**d)`` turns it back into this config."""
        d = dataclasses.asdict(self)
        d["encoder"] = self.encoder.to_dict()
        d["global_scale"], d["local_scale"] = list(self.global_scale), list(self.local_scale)
        return d


# ---------------------------------------------------------------- multi-crop

def random_crops(images: torch.Tensor, scale: tuple[float, float], size: int,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """One square crop per image covering a random share ``scale`` of its area, randomly flipped left-right,
    resized to ``size``×``size`` (bilinear): ``(B, C, H, W)`` -> ``(B, C, size, size)``."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    check_positive_int("size", size)
    b = images.shape[0]
    low, high = scale
    if not 0 < low <= high <= 1:
        raise ValueError(f"scale must be (low, high) with 0 < low ≤ high ≤ 1, got {scale!r}")
    area = low + (high - low) * torch.rand(b, generator=generator)  # (B,)
    side = area.sqrt()  # the crop's side as a share of the image's side
    cx = (torch.rand(b, generator=generator) * 2 - 1) * (1 - side)  # centre keeps the crop inside the image
    cy = (torch.rand(b, generator=generator) * 2 - 1) * (1 - side)
    flip = torch.where(torch.rand(b, generator=generator) < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0], theta[:, 0, 2] = side * flip, cx
    theta[:, 1, 1], theta[:, 1, 2] = side, cy
    grid = F.affine_grid(theta, [b, images.shape[1], size, size], align_corners=False)  # (B, size, size, 2)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


def colour_jitter(images: torch.Tensor, jitter_prob: float, grayscale_prob: float,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Per image, with probability ``jitter_prob``: shuffle the colour channels (a stand-in for the paper's hue
    jitter), scale contrast and brightness by factors in [0.6, 1.4]; then, with ``grayscale_prob``, drop the colour.
    ``(B, 3, H, W)`` in [0, 1] -> the same shape, in [0, 1]. Without it, two crops of one image share their colours
    and DINO can match them by colour alone."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if images.shape[1] != 3:
        raise ValueError(f"colour jitter needs 3 channels, got {images.shape[1]}")
    b = images.shape[0]
    order = torch.rand(b, 3, generator=generator).argsort(dim=1)  # (B, 3): one channel permutation per image
    shuffled = images.gather(1, order[:, :, None, None].expand_as(images))
    contrast, brightness = (0.6 + 0.8 * torch.rand(2, b, 1, 1, 1, generator=generator)).unbind(0)  # (B, 1, 1, 1)
    mean = shuffled.mean(dim=(1, 2, 3), keepdim=True)  # (B, 1, 1, 1)
    jittered = (((shuffled - mean) * contrast + mean) * brightness).clamp(0, 1)
    jitter = (torch.rand(b, generator=generator) < jitter_prob)[:, None, None, None]
    out = torch.where(jitter, jittered, images)
    luma = torch.tensor([0.299, 0.587, 0.114]).reshape(1, 3, 1, 1)
    gray = (out * luma).sum(1, keepdim=True).expand_as(out)  # (B, 3, H, W), three equal channels
    return torch.where((torch.rand(b, generator=generator) < grayscale_prob)[:, None, None, None], gray, out)


def multi_crop(images: torch.Tensor, config: DINOConfig,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, C, H, W)`` -> global crops ``(2, B, C, H, W)`` and local crops ``(L, B, C, H, W)``, all at input size,
    each crop colour-jittered on its own (:func:`colour_jitter`)."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    size = config.encoder.image_size[0]
    if tuple(images.shape[-2:]) != config.encoder.image_size:
        raise ValueError(f"images are {tuple(images.shape[-2:])}, the encoder takes {config.encoder.image_size}")
    def view(scale: tuple[float, float]) -> torch.Tensor:
        crops = random_crops(images, scale, size, generator)  # (B, C, size, size)
        return colour_jitter(crops, config.jitter_prob, config.grayscale_prob, generator)

    globals_ = torch.stack([view(config.global_scale) for _ in range(2)])
    locals_ = [view(config.local_scale) for _ in range(config.num_local_crops)]
    empty = images.new_zeros(0, *images.shape)
    return globals_, torch.stack(locals_) if locals_ else empty


# ---------------------------------------------------------------- head, loss, moving averages

class DINOHead(nn.Module):
    """``(B, D)`` -> prototype scores ``(B, K)``: 3-layer MLP, L2-normalised bottleneck, weight-normalised prototypes.

    The prototypes are unit vectors (weight normalisation with the gain fixed to 1, as the paper's default), so a
    score is a cosine in [-1, 1] before the temperature divides it.
    """

    def __init__(self, in_dim: int, hidden_dim: int, bottleneck_dim: int, num_prototypes: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, hidden_dim), nn.GELU(),
                                 nn.Linear(hidden_dim, bottleneck_dim))
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                nn.init.trunc_normal_(layer.weight, std=0.02)
                nn.init.zeros_(layer.bias)
        self.prototypes = nn.Parameter(torch.randn(num_prototypes, bottleneck_dim) * 0.02)  # (K, bottleneck)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = F.normalize(self.mlp(x), dim=-1)  # (B, bottleneck), unit length
        return z @ F.normalize(self.prototypes, dim=-1).T  # (B, K)


def view_pairs(num_teacher: int, num_student: int) -> list[tuple[int, int]]:
    """Every (teacher view, student view) pair the loss uses: all pairs but a view with itself.

    The first ``num_teacher`` student views are the same global crops the teacher saw, in the same order.
    """
    check_positive_int("num_teacher", num_teacher)
    if num_student < num_teacher:
        raise ValueError(f"the student sees every teacher view and more: num_student {num_student} < num_teacher "
                         f"{num_teacher}")
    return [(t, s) for t in range(num_teacher) for s in range(num_student) if s != t]


def teacher_probs(teacher_logits: torch.Tensor, center: torch.Tensor, teacher_temp: float) -> torch.Tensor:
    """Centre, then sharpen: ``softmax((t - c) / τ_t)``, ``(V, B, K)`` -> ``(V, B, K)``."""
    return F.softmax((teacher_logits - center) / teacher_temp, dim=-1)


def dino_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, center: torch.Tensor,
              student_temp: float = 0.1, teacher_temp: float = 0.04) -> torch.Tensor:
    """The DINO loss: ``-Σ_k P_t[k] log P_s[k]`` averaged over images and over :func:`view_pairs`.

    ``student_logits (V_s, B, K)``, its first ``V_t`` views the global crops; ``teacher_logits (V_t, B, K)``;
    ``center (K,)`` or ``(1, K)``. No gradient reaches the teacher's side.
    """
    check_ndim("student_logits", student_logits, 3, "(V_s, B, K)")
    check_ndim("teacher_logits", teacher_logits, 3, "(V_t, B, K)")
    if student_logits.shape[1:] != teacher_logits.shape[1:]:
        raise ValueError(f"student (V_s, B, K) = {tuple(student_logits.shape)} and teacher (V_t, B, K) = "
                         f"{tuple(teacher_logits.shape)} need the same B and K")
    if center.numel() != teacher_logits.shape[-1]:
        raise ValueError(f"center has {center.numel()} entries, the heads have K = {teacher_logits.shape[-1]}")
    if not (student_temp > 0 and teacher_temp > 0):
        raise ValueError(f"temperatures must be positive, got student {student_temp}, teacher {teacher_temp}")
    targets = teacher_probs(teacher_logits.detach(), center.reshape(1, 1, -1), teacher_temp)  # (V_t, B, K)
    log_p = F.log_softmax(student_logits / student_temp, dim=-1)  # (V_s, B, K)
    pairs = view_pairs(teacher_logits.shape[0], student_logits.shape[0])
    terms = [-(targets[t] * log_p[s]).sum(-1).mean() for t, s in pairs]  # one scalar per pair
    return torch.stack(terms).mean()


@torch.no_grad()
def update_center(center: torch.Tensor, teacher_logits: torch.Tensor, momentum: float = 0.9) -> torch.Tensor:
    """``c ← m·c + (1 - m)·mean of the teacher's outputs over views and images``: ``(K,)``, ``(V, B, K)`` -> ``(K,)``.

    The centre is what every image's teacher output shares; subtracting it keeps one prototype from winning for all.
    """
    check_ndim("teacher_logits", teacher_logits, 3, "(V, B, K)")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    return momentum * center + (1 - momentum) * teacher_logits.mean(dim=(0, 1))


def teacher_momentum(step: int, total_steps: int, base: float = 0.996) -> float:
    """Cosine schedule from ``base`` at step 0 to 1 at ``total_steps``: ``1 - (1 - base)(cos(π t/T) + 1)/2``."""
    check_positive_int("total_steps", total_steps)
    if not 0 <= step <= total_steps:
        raise ValueError(f"step must be in [0, {total_steps}], got {step}")
    return 1 - (1 - base) * (math.cos(math.pi * step / total_steps) + 1) / 2


@torch.no_grad()
def update_teacher(teacher: nn.Module, student: nn.Module, momentum: float) -> None:
    """In place, every teacher weight ``θ_t ← m·θ_t + (1 - m)·θ_s``: an exponential moving average of the student."""
    if not 0 <= momentum <= 1:
        raise ValueError(f"momentum must be in [0, 1], got {momentum}")
    t_params, s_params = list(teacher.parameters()), list(student.parameters())
    if len(t_params) != len(s_params):
        raise ValueError(f"teacher has {len(t_params)} parameter tensors, student {len(s_params)}: not copies")
    for t, s in zip(t_params, s_params):
        t.mul_(momentum).add_(s.detach(), alpha=1 - momentum)


# ---------------------------------------------------------------- the whole method

class DINONetwork(nn.Module):
    """A ViT backbone and a DINO head: images ``(B, C, H, W)`` -> prototype scores ``(B, K)``."""

    def __init__(self, config: DINOConfig) -> None:
        super().__init__()
        self.backbone = VisionTransformer(config.encoder)  # its classification head is unused
        self.head = DINOHead(config.encoder.embed_dim, config.head_hidden_dim, config.bottleneck_dim,
                             config.num_prototypes)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """The final CLS token ``(B, D)``: the feature k-NN and probes read."""
        return self.backbone.forward_features(images)[:, 0]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images))  # (B, K)


class DINOOutput(NamedTuple):
    """The loss and both networks' scores, per view."""

    loss: torch.Tensor  # scalar
    student_logits: torch.Tensor  # (2 + L, B, K)
    teacher_logits: torch.Tensor  # (2, B, K)


class DINO(nn.Module):
    """Student, EMA teacher (a copy that gets no gradients) and the centre, a buffer of shape ``(K,)``."""

    def __init__(self, config: DINOConfig) -> None:
        super().__init__()
        self.config = config
        self.student = DINONetwork(config)
        self.teacher = copy.deepcopy(self.student)  # starts equal to the student
        self.teacher.requires_grad_(False)
        self.register_buffer("center", torch.zeros(config.num_prototypes))

    def forward(self, global_crops: torch.Tensor, local_crops: torch.Tensor) -> DINOOutput:
        """Global crops ``(2, B, C, H, W)`` go to both networks, local crops ``(L, B, C, H, W)`` to the student only."""
        check_ndim("global_crops", global_crops, 5, "(2, B, C, H, W)")
        check_ndim("local_crops", local_crops, 5, "(L, B, C, H, W)")
        if global_crops.shape[0] != 2:
            raise ValueError(f"DINO uses 2 global crops, got {global_crops.shape[0]}")
        if local_crops.shape[0] and local_crops.shape[1:] != global_crops.shape[1:]:
            raise ValueError(f"local crops {tuple(local_crops.shape)} must match the global crops' "
                             f"(B, C, H, W) = {tuple(global_crops.shape[1:])}")
        v, b = 2 + local_crops.shape[0], global_crops.shape[1]
        views = torch.cat([global_crops, local_crops])  # (V, B, C, H, W), globals first
        student = self.student(views.flatten(0, 1)).unflatten(0, (v, b))  # (V, B, K)
        with torch.no_grad():
            teacher = self.teacher(global_crops.flatten(0, 1)).unflatten(0, (2, b))  # (2, B, K)
        loss = dino_loss(student, teacher, self.center, self.config.student_temp, self.config.teacher_temp)
        return DINOOutput(loss, student, teacher)

    @torch.no_grad()
    def after_step(self, teacher_logits: torch.Tensor, step: int, total_steps: int) -> float:
        """After the optimiser's step: move the teacher towards the student, then the centre; returns the momentum."""
        momentum = teacher_momentum(step, total_steps, self.config.teacher_momentum)
        update_teacher(self.teacher, self.student, momentum)
        self.center.copy_(update_center(self.center, teacher_logits, self.config.center_momentum))
        return momentum


@torch.no_grad()
def collapse_stats(teacher_logits: torch.Tensor, center: torch.Tensor, teacher_temp: float) -> dict[str, float]:
    """Collapse checks on ``(V, B, K)`` teacher scores: the mean entropy of its (centred, sharpened) distribution,
    the entropy of the batch-averaged distribution (log K if it spreads over all prototypes), the share of images
    whose argmax is the most common prototype, and how many prototypes are ever the argmax."""
    probs = teacher_probs(teacher_logits, center.reshape(1, 1, -1), teacher_temp).flatten(0, 1)  # (V·B, K)
    mean = probs.mean(0)  # (K,)
    top = probs.argmax(-1)  # (V·B,)
    counts = torch.bincount(top, minlength=probs.shape[-1])
    return {"entropy": float(-(probs * probs.clamp_min(1e-12).log()).sum(-1).mean()),
            "batch_entropy": float(-(mean * mean.clamp_min(1e-12).log()).sum()),
            "top_share": float(counts.max()) / len(top), "prototypes_used": int((counts > 0).sum()),
            "max_entropy": math.log(probs.shape[-1])}


def save_teacher(path, model: DINO, metrics: dict) -> None:
    """The teacher (backbone + head) in half precision, the config and a few numbers in one file."""
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.teacher.state_dict().items()}
    torch.save({"dino_config": model.config.to_dict(), "state_dict": state, "metrics": metrics}, path)


def load_teacher(path) -> tuple[DINONetwork, DINOConfig, dict]:
    """The shipped teacher (eval mode, float32), its config and metrics; torch's random state is left as it was."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    config = DINOConfig(**data["dino_config"])
    with torch.random.fork_rng(devices=[]):
        network = DINONetwork(config)
    network.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in data["state_dict"].items()})
    return network.eval(), config, data["metrics"]
