"""A tiny CLIP for the shapes task: captioned images, a text encoder, the symmetric contrastive loss, zero-shot.

CLIP (Radford et al., 2021) trains an image encoder and a text encoder together so that an image and its own
caption get similar embeddings and the other captions of the batch dissimilar ones. Classifying then needs no
labelled images: write one caption (a prompt) per class, embed them, and pick the caption closest to the image.

Here the images are the shapes task's (:func:`vit_edu.data.make_shapes`: shape, size and position), with the
object repainted in one of four named colours, so that a caption such as "a small red circle on the left" is
true of its image. The image encoder is the package's :class:`vit_edu.VisionTransformer` (its CLS token,
projected); the text encoder is a small Transformer as in CLIP: token and position embeddings, pre-LN blocks
built from :class:`vit_edu.MultiHeadSelfAttention` and :class:`vit_edu.block.MLP` under a causal mask, and the
features of the end-of-text token, projected. Left out: CLIP's byte-pair tokeniser (a word list suffices for
captions of at most 7 words drawn from 15), its scale (400 million pairs, batches of 32,768) and its image
augmentations.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.attention import MultiHeadSelfAttention
from vit_edu.block import MLP
from vit_edu.config import ViTConfig
from vit_edu.data import CLASS_NAMES, make_shapes
from vit_edu.model import VisionTransformer
from vit_edu.variants.windows import masked_self_attention

SHAPES: tuple[str, ...] = CLASS_NAMES
COLOURS: tuple[str, ...] = ("red", "green", "blue", "yellow")
# Light tints: every channel at least 0.65, so that, as in vit_edu.data, the object is brighter than its background
# (channels below 0.45) in every channel and its outline shows the same in all three; colour is in the tint.
PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (1.0, 0.65, 0.65),
    "green": (0.65, 1.0, 0.65),
    "blue": (0.65, 0.65, 1.0),
    "yellow": (1.0, 1.0, 0.65),
}
# Saturated colours: the outline shows in one or two channels only (red in R, green in G, ...). Chapter 17 compares.
SATURATED: dict[str, tuple[float, float, float]] = {
    "red": (0.95, 0.2, 0.2),
    "green": (0.2, 0.85, 0.25),
    "blue": (0.3, 0.45, 1.0),
    "yellow": (0.95, 0.9, 0.2),
}
PALETTES: dict[str, dict[str, tuple[float, float, float]]] = {"light": PALETTE, "saturated": SATURATED}
SIZES: tuple[str, ...] = ("small", "large")
SIDES: tuple[str, ...] = ("left", "right")
# Every shape of vit_edu.data covers area_factor · r² pixels at half-size r (circle π r², square (1.7 r)², …).
_AREA_FACTOR = (math.pi, 1.7**2, 1.7, 2.04)
_SMALL_BELOW = 0.23  # the middle of the half-size range (0.16, 0.30) of the image side: "small" below it
_NOISE = 0.03  # the pixel noise of vit_edu.data, drawn afresh on the repainted object

PAD, EOT = "<pad>", "<eot>"
VOCAB: tuple[str, ...] = (PAD, EOT, "a", "on", "the") + SIZES + COLOURS + SHAPES + SIDES
CONTEXT_LENGTH = 8  # "a small red circle on the left" is 7 words, + the end-of-text token
MAX_LOGIT_SCALE = 100.0  # CLIP clamps the learned temperature's inverse at 100


# ----------------------------------------------------------------------------------------------------------
# Captioned images
# ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CaptionedShapes:
    """Images ``(n, 3, H, W)`` in [0, 1] and what each caption may say: indices into SHAPES, COLOURS, SIZES, SIDES."""

    images: torch.Tensor
    shapes: torch.Tensor
    colours: torch.Tensor
    sizes: torch.Tensor
    sides: torch.Tensor

    def __len__(self) -> int:
        return len(self.shapes)

    @property
    def combos(self) -> torch.Tensor:
        """``(n,)`` the colour–shape combination of each image, ``colour · 4 + shape`` (16 classes)."""
        return self.colours * len(SHAPES) + self.shapes

    def captions(self, index: Sequence[int] | None = None, *, generator: torch.Generator | None = None,
                 p_detail: float = 1.0) -> list[str]:
        """One caption per image; size and side each appear with probability ``p_detail`` (colour and shape always)."""
        idx = range(len(self)) if index is None else index
        out = []
        for i in idx:
            keep = torch.rand(2, generator=generator) < p_detail if p_detail < 1 else (True, True)
            out.append(caption(SHAPES[self.shapes[i]], COLOURS[self.colours[i]],
                               SIZES[self.sizes[i]] if keep[0] else None, SIDES[self.sides[i]] if keep[1] else None))
        return out


def all_combos() -> list[tuple[str, str]]:
    """The 16 (colour, shape) pairs, colour-major: index ``colour · 4 + shape``, as :attr:`CaptionedShapes.combos`."""
    return list(itertools.product(COLOURS, SHAPES))


def _check_combos(combos: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    combos = [tuple(c) for c in combos]
    bad = [c for c in combos if len(c) != 2 or c[0] not in COLOURS or c[1] not in SHAPES]
    if bad or not combos:
        raise ValueError(f"combos must be a non-empty list of (colour, shape) pairs from {COLOURS} × {SHAPES}, "
                         f"got {bad or combos!r}")
    return combos


def make_captioned_shapes(n: int, *, image_size: int = 32, seed: int = 0,
                          combos: Sequence[tuple[str, str]] | None = None, palette: str = "light") -> CaptionedShapes:
    """``n`` shapes images whose object is repainted in a named colour allowed for its shape by ``combos``.

    Shape, size and position come from :func:`vit_edu.data.make_shapes` (seed ``seed``); the colour is drawn
    uniformly among the ``combos`` colours of the image's shape (default: all 16 pairs), from a generator of its
    own, and painted as ``PALETTES[palette]`` says. "small"/"large" compares the half-size measured from the object's mask with 0.23 of the image side;
    "left"/"right" compares the mask's centre with the middle of the image. The same arguments give the same
    tensors on any machine.
    """
    combos = _check_combos(all_combos() if combos is None else combos)
    if palette not in PALETTES:
        raise ValueError(f"palette must be one of {tuple(PALETTES)}, got {palette!r}")
    missing = [s for s in SHAPES if not any(c[1] == s for c in combos)]
    if missing:
        raise ValueError(f"combos gives no colour to the shapes {missing}: every shape needs at least one")
    images, labels, masks = make_shapes(n, image_size=image_size, seed=seed)  # (n, 3, H, W), (n,), (n, H, W)
    gen = torch.Generator().manual_seed(10_007 * seed + 1)
    allowed = [[COLOURS.index(c) for c, s in combos if s == shape] for shape in SHAPES]
    pick = torch.rand(n, generator=gen)
    colours = torch.tensor([allowed[k][int(u * len(allowed[k]))] for k, u in zip(labels.tolist(), pick.tolist())])
    paint = torch.tensor([PALETTES[palette][c] for c in COLOURS])[colours]  # (n, 3)
    noise = _NOISE * torch.randn(images.shape, generator=gen)
    images = torch.where(masks[:, None], (paint[:, :, None, None] + noise).clamp(0, 1), images)
    area = masks.flatten(1).sum(1).float()  # (n,)
    half_size = (area / torch.tensor(_AREA_FACTOR)[labels]).sqrt() / image_size
    sizes = (half_size >= _SMALL_BELOW).long()
    xs = torch.arange(image_size, dtype=torch.float32) + 0.5
    centre_x = (masks.float() * xs).flatten(1).sum(1) / area
    sides = (centre_x >= image_size / 2).long()
    return CaptionedShapes(images, labels, colours, sizes, sides)


def caption(shape: str, colour: str | None = None, size: str | None = None, side: str | None = None) -> str:
    """"a [size] [colour] shape [on the side]", e.g. ``caption("circle", "red", "small", "left")``."""
    for name, value, allowed in (("shape", shape, SHAPES), ("colour", colour, COLOURS), ("size", size, SIZES),
                                 ("side", side, SIDES)):
        if (value is not None or name == "shape") and value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}{'' if name == 'shape' else ' or None'}, got {value!r}")
    words = ["a"] + [w for w in (size, colour) if w] + [shape] + (["on", "the", side] if side else [])
    return " ".join(words)


def tokenize(captions: Sequence[str], context_length: int = CONTEXT_LENGTH) -> torch.Tensor:
    """Captions -> ``(B, L)`` word ids: the words, the end-of-text token, then padding (id 0) up to ``L``."""
    if isinstance(captions, str):
        raise ValueError(f"tokenize takes a list of captions, got the single string {captions!r}")
    check_positive_int("context_length", context_length)
    rows = []
    for text in captions:
        words = text.lower().split()
        unknown = [w for w in words if w not in VOCAB or w in (PAD, EOT)]
        if unknown or not words:
            raise ValueError(f"caption {text!r}: words {unknown} are not in the vocabulary {VOCAB[2:]}"
                             if unknown else "an empty caption has nothing to encode")
        if len(words) + 1 > context_length:
            raise ValueError(f"caption {text!r} has {len(words)} words; with the end-of-text token it needs "
                             f"{len(words) + 1} > context_length {context_length}")
        ids = [VOCAB.index(w) for w in words] + [VOCAB.index(EOT)]
        rows.append(ids + [0] * (context_length - len(ids)))
    return torch.tensor(rows, dtype=torch.long)


# ----------------------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TinyCLIPConfig:
    """Both encoders' sizes and the joint embedding width; the image encoder is a ViT with these widths."""

    image_size: int = 32
    patch_size: int = 8
    vision_width: int = 64
    vision_depth: int = 3
    vision_heads: int = 4
    text_width: int = 32
    text_depth: int = 1
    text_heads: int = 2
    embed_dim: int = 32
    context_length: int = CONTEXT_LENGTH

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check_positive_int(f.name, getattr(self, f.name))
        if self.text_width % self.text_heads:
            raise ValueError(f"text_width {self.text_width} is not divisible by text_heads {self.text_heads}")
        self.vision_config()  # ViTConfig checks the image side

    def vision_config(self) -> ViTConfig:
        """The image encoder's ViTConfig (CLS pooling, inputs standardised as the shapes ViT's)."""
        return ViTConfig(image_size=self.image_size, patch_size=self.patch_size, num_classes=1,
                         embed_dim=self.vision_width, depth=self.vision_depth, num_heads=self.vision_heads,
                         mlp_dim=2 * self.vision_width, input_norm=(0.5, 0.25))


def causal_mask(length: int) -> torch.Tensor:
    """``(L, L)`` booleans, True where key j ≤ query i: each word sees itself and the words before it."""
    check_positive_int("length", length)
    return torch.ones(length, length, dtype=torch.bool).tril()


class TextBlock(nn.Module):
    """Pre-LN block under a causal mask: ``x + Attn(LN(x))``, then ``x + MLP(LN(x))``, as ViT's encoder block."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = MultiHeadSelfAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = MLP(width, 4 * width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, L, D)`` -> ``(B, L, D)``."""
        x = x + masked_self_attention(self.attn, self.norm1(x), causal_mask(x.shape[1]))[0]
        return x + self.mlp(self.norm2(x))


class TextEncoder(nn.Module):
    """Word ids ``(B, L)`` -> ``(B, E)``: embeddings, causal blocks, LayerNorm, the end-of-text token, projection."""

    def __init__(self, config: TinyCLIPConfig) -> None:
        super().__init__()
        w = config.text_width
        self.token_embed = nn.Embedding(len(VOCAB), w)
        self.pos_embed = nn.Parameter(torch.randn(config.context_length, w) * 0.01)
        self.blocks = nn.ModuleList(TextBlock(w, config.text_heads) for _ in range(config.text_depth))
        self.norm = nn.LayerNorm(w)
        self.proj = nn.Linear(w, config.embed_dim, bias=False)
        nn.init.normal_(self.token_embed.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check_ndim("tokens", tokens, 2, "(B, L)")
        if tokens.shape[1] > self.pos_embed.shape[0]:
            raise ValueError(f"{tokens.shape[1]} tokens exceed the context length {self.pos_embed.shape[0]}")
        eot = tokens == VOCAB.index(EOT)  # (B, L)
        if not bool((eot.sum(1) == 1).all()):
            raise ValueError("every row of tokens needs exactly one end-of-text token (use tokenize)")
        x = self.token_embed(tokens) + self.pos_embed[: tokens.shape[1]]  # (B, L, D)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        # The causal mask lets the end-of-text token see the whole caption and nothing after it (the padding).
        return self.proj(x[torch.arange(len(x)), eot.int().argmax(1)])  # (B, E)


class TinyCLIP(nn.Module):
    """An image encoder (ViT, CLS token, projection) and a text encoder into one E-dimensional space, and 1/τ."""

    def __init__(self, config: TinyCLIPConfig = TinyCLIPConfig()) -> None:
        super().__init__()
        self.config = config
        self.visual = VisionTransformer(config.vision_config())
        self.visual.head = nn.Identity()  # the ViT now returns its pooled CLS token (B, vision_width)
        self.image_proj = nn.Linear(config.vision_width, config.embed_dim, bias=False)
        self.text = TextEncoder(config)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))  # CLIP's start: τ = 0.07

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 3, H, W)`` -> ``(B, vision_width)``: the ViT's final CLS token (what a linear probe reads)."""
        return self.visual(images)

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 3, H, W)`` -> unit-length embeddings ``(B, E)``."""
        return F.normalize(self.image_proj(self.image_features(images)), dim=-1)

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` word ids -> unit-length embeddings ``(B, E)``."""
        return F.normalize(self.text(tokens), dim=-1)

    def scale(self) -> torch.Tensor:
        """1/τ = exp(logit_scale), clamped at 100 as in CLIP (a larger scale makes the loss unstable)."""
        return self.logit_scale.exp().clamp(max=MAX_LOGIT_SCALE)

    def forward(self, images: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Image–text logits ``(B_img, B_txt)``: scaled cosine similarities."""
        return self.scale() * self.encode_image(images) @ self.encode_text(tokens).T


def contrastive_loss(image_emb: torch.Tensor, text_emb: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """CLIP's symmetric InfoNCE loss: image i's caption is text i, and text i's image is image i.

    ``image_emb`` and ``text_emb`` are ``(B, E)`` (normalised here); the logits are ``scale · cos``; the loss is
    the mean of the cross-entropy over each row (image → which caption?) and each column (caption → which image?).
    """
    check_ndim("image_emb", image_emb, 2, "(B, E)")
    check_ndim("text_emb", text_emb, 2, "(B, E)")
    if image_emb.shape != text_emb.shape:
        raise ValueError(f"image and text embeddings must pair up one to one, got shapes "
                         f"{tuple(image_emb.shape)} and {tuple(text_emb.shape)}")
    logits = scale * F.normalize(image_emb, dim=-1) @ F.normalize(text_emb, dim=-1).T  # (B, B)
    targets = torch.arange(len(logits), device=logits.device)
    return (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets)) / 2


# ----------------------------------------------------------------------------------------------------------
# Zero-shot classification
# ----------------------------------------------------------------------------------------------------------


def class_embeddings(model: TinyCLIP, prompt_sets: Sequence[Sequence[str]]) -> torch.Tensor:
    """``(K, E)``: class k's embedding is the normalised mean of its prompts' embeddings (a prompt ensemble)."""
    if isinstance(prompt_sets, str) or not prompt_sets or any(isinstance(p, str) or not p for p in prompt_sets):
        raise ValueError(f"prompt_sets must be a non-empty list of non-empty lists of prompts, got {prompt_sets!r}")
    with torch.no_grad():
        rows = [model.encode_text(tokenize(list(prompts), model.config.context_length)).mean(0)
                for prompts in prompt_sets]
    return F.normalize(torch.stack(rows), dim=-1)


def zero_shot_probs(model: TinyCLIP, images: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
    """``(B, K)`` probabilities: softmax over the classes of ``scale · cos(image, class embedding)``."""
    check_ndim("classes", classes, 2, "(K, E)")
    with torch.no_grad():
        return (model.scale() * model.encode_image(images) @ classes.T).softmax(-1)


def prompts(task: str) -> tuple[list[str], list[list[str]]]:
    """Class names and prompt sets of a zero-shot task: "shape" (4), "colour" (4) or "combination" (16).

    The prompts name colour and shape only ("a red circle"); a shape's set holds it in all four colours, a
    colour's set all four shapes in it.
    """
    if task == "shape":
        return list(SHAPES), [[caption(s, c) for c in COLOURS] for s in SHAPES]
    if task == "colour":
        return list(COLOURS), [[caption(s, c) for s in SHAPES] for c in COLOURS]
    if task == "combination":
        return [f"{c} {s}" for c, s in all_combos()], [[caption(s, c)] for c, s in all_combos()]
    raise ValueError(f"task must be 'shape', 'colour' or 'combination', got {task!r}")


def task_labels(data: CaptionedShapes, task: str) -> torch.Tensor:
    """``(n,)`` the true class of each image for ``task`` (as indexed by :func:`prompts`)."""
    prompts(task)  # checks the task's name
    return {"shape": data.shapes, "colour": data.colours, "combination": data.combos}[task]


def zero_shot_accuracy(model: TinyCLIP, data: CaptionedShapes, task: str) -> float:
    """Fraction of ``data``'s images whose best-matching prompt set is their own class, no labels used."""
    probs = zero_shot_probs(model, data.images, class_embeddings(model, prompts(task)[1]))
    return (probs.argmax(1) == task_labels(data, task)).float().mean().item()
