"""TimeSformer's space-time tokens and its three attentions over a clip (chapter 20).

A clip ``(B, T, 3, H, W)`` becomes a grid of tokens ``(B, T, N, D)``: T frames of N patches each. Two ways:

* frame patches (TimeSformer, Bertasius et al., 2021): every frame cut into P×P patches by one shared ``Conv2d``,
  T·N tokens, a space position table (one row per patch place) plus a time position table (one row per frame);
* tubelets (ViViT, Arnab et al., 2021): t×P×P blocks embedded by one ``Conv3d``, (T/t)·N tokens.

Then blocks of self-attention whose only difference is which tokens may see which (TimeSformer's names):

* ``"space"`` (S): attention within each frame; frames never meet until the readout averages them;
* ``"joint"`` (ST): all T·N tokens attend to each other;
* ``"divided"`` (T+S): in each block, attention over time at each patch place (the time reshape), then over
  space within each frame (the space reshape), then the MLP.

All attentions are :class:`vit_edu.attention.MultiHeadSelfAttention`. The readout is the mean of all final tokens
(the frames' pooled outputs averaged over time) and a linear head. The space-only model gets no time table, as in
TimeSformer's code: with one, a frame would know its index and the model would no longer be order-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from einops import rearrange
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.attention import MultiHeadSelfAttention
from vit_edu.block import MLP

ATTENTIONS: tuple[str, ...] = ("space", "joint", "divided")
SHORT_NAMES: dict[str, str] = {"space": "S", "joint": "ST", "divided": "T+S"}  # the paper's names
TOKENIZERS: tuple[str, ...] = ("frames", "tubelets")
GRID = "(B, T, N, D)"


@dataclass(frozen=True)
class VideoConfig:
    """A small video Transformer: clip size, tokenizer, attention kind and widths."""

    frames: int = 8
    image_size: int = 32
    patch_size: int = 8
    tokens: str = "frames"  # "frames" (T·N frame patches) or "tubelets" (t×P×P blocks)
    tubelet_frames: int = 2  # t, for tubelets only
    attention: str = "divided"
    embed_dim: int = 64
    depth: int = 2
    num_heads: int = 4
    mlp_dim: int = 128
    num_classes: int = 2
    time_embed: bool | None = None  # None: a time table for every attention but "space" (as TimeSformer's code)
    input_norm: tuple[float, float] = (0.5, 0.25)  # pixels standardised as (x − mean) / std (chapter 13)
    pos_std: float = 0.5  # the position tables' initial std (ViT's 0.02 left the frame-patch models on a long plateau)

    def __post_init__(self) -> None:
        for name in ("frames", "image_size", "patch_size", "tubelet_frames", "embed_dim", "depth", "num_heads",
                     "mlp_dim", "num_classes"):
            check_positive_int(name, getattr(self, name))
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.tokens not in TOKENIZERS:
            raise ValueError(f"tokens must be one of {TOKENIZERS}, got {self.tokens!r}")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}")
        if self.tokens == "tubelets" and self.frames % self.tubelet_frames:
            raise ValueError(f"frames {self.frames} is not divisible by tubelet_frames {self.tubelet_frames}")
        if not self.pos_std >= 0:
            raise ValueError(f"pos_std must be ≥ 0, got {self.pos_std!r}")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}")

    @property
    def grid(self) -> int:
        """Patches per side of a frame."""
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        """N, the tokens per frame (or per tubelet slice)."""
        return self.grid**2

    @property
    def time_steps(self) -> int:
        """The token grid's time length: T for frame patches, T/t for tubelets."""
        return self.frames // self.tubelet_frames if self.tokens == "tubelets" else self.frames

    @property
    def uses_time_embed(self) -> bool:
        """Whether the tokens get a time position table (by default: all but the space-only model)."""
        return self.attention != "space" if self.time_embed is None else self.time_embed


def check_clips(clips: torch.Tensor, config: VideoConfig) -> None:
    """Raise a ValueError naming the shapes if ``clips`` is not ``(B, T, 3, H, W)`` with the config's T, H, W."""
    check_ndim("clips", clips, 5, "(B, T, 3, H, W)")
    want = (config.frames, 3, config.image_size, config.image_size)
    if tuple(clips.shape[1:]) != want:
        raise ValueError(f"clips must have shape (B, {', '.join(map(str, want))}) for this config, "
                         f"got {tuple(clips.shape)}")


# The reshapes. Each moves the tokens of one group (a frame, a place, the whole clip) into one sequence.

def space_reshape(x: torch.Tensor) -> torch.Tensor:
    """``(B, T, N, D)`` -> ``(B·T, N, D)``: one sequence per frame, its N places."""
    check_ndim("x", x, 4, GRID)
    return rearrange(x, "b t n d -> (b t) n d")


def space_unreshape(x: torch.Tensor, batch: int) -> torch.Tensor:
    """``(B·T, N, D)`` -> ``(B, T, N, D)``: the inverse of :func:`space_reshape`."""
    check_ndim("x", x, 3, "(B·T, N, D)")
    if x.shape[0] % batch:
        raise ValueError(f"{x.shape[0]} sequences are not a whole number of frames for batch {batch}")
    return rearrange(x, "(b t) n d -> b t n d", b=batch)


def time_reshape(x: torch.Tensor) -> torch.Tensor:
    """``(B, T, N, D)`` -> ``(B·N, T, D)``: one sequence per patch place, its T frames."""
    check_ndim("x", x, 4, GRID)
    return rearrange(x, "b t n d -> (b n) t d")


def time_unreshape(x: torch.Tensor, batch: int) -> torch.Tensor:
    """``(B·N, T, D)`` -> ``(B, T, N, D)``: the inverse of :func:`time_reshape`."""
    check_ndim("x", x, 3, "(B·N, T, D)")
    if x.shape[0] % batch:
        raise ValueError(f"{x.shape[0]} sequences are not a whole number of places for batch {batch}")
    return rearrange(x, "(b n) t d -> b t n d", b=batch)


def joint_reshape(x: torch.Tensor) -> torch.Tensor:
    """``(B, T, N, D)`` -> ``(B, T·N, D)``: the whole clip as one sequence, frame after frame."""
    check_ndim("x", x, 4, GRID)
    return rearrange(x, "b t n d -> b (t n) d")


class ClipEmbedding(nn.Module):
    """Clip ``(B, T, 3, H, W)`` -> tokens ``(B, T', N, D)`` with space (and, if configured, time) positions added."""

    def __init__(self, config: VideoConfig) -> None:
        super().__init__()
        self.config = config
        p, d = config.patch_size, config.embed_dim
        if config.tokens == "frames":
            self.proj: nn.Module = nn.Conv2d(3, d, kernel_size=p, stride=p)  # one P×P patch -> one token
        else:
            t = config.tubelet_frames
            self.proj = nn.Conv3d(3, d, kernel_size=(t, p, p), stride=(t, p, p))  # one t×P×P block -> one token
        std = config.pos_std
        self.space_pos_embed = nn.Parameter(torch.randn(1, 1, config.num_patches, d) * std)  # one row per place
        self.time_pos_embed = (nn.Parameter(torch.randn(1, config.time_steps, 1, d) * std)  # one row per time step
                         if config.uses_time_embed else None)

    def tokens(self, clips: torch.Tensor) -> torch.Tensor:
        """The projection alone: ``(B, T, 3, H, W)`` -> ``(B, T', N, D)``, no positions."""
        check_clips(clips, self.config)
        b = clips.shape[0]
        mean, std = self.config.input_norm
        clips = (clips - mean) / std  # zero-centred pixels
        if self.config.tokens == "frames":
            x = self.proj(clips.flatten(0, 1))  # (B·T, D, H/P, W/P): every frame through the same Conv2d
            return rearrange(x, "(b t) d gh gw -> b t (gh gw) d", b=b)  # (B, T, N, D)
        x = self.proj(clips.transpose(1, 2))  # (B, D, T/t, H/P, W/P): Conv3d wants (B, C, T, H, W)
        return rearrange(x, "b d t gh gw -> b t (gh gw) d")  # (B, T/t, N, D)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        x = self.tokens(clips) + self.space_pos_embed  # (B, T', N, D): the same place table in every frame
        return x if self.time_pos_embed is None else x + self.time_pos_embed  # the same frame row at every place


class VideoBlock(nn.Module):
    """A Pre-LN block whose attention is space-only, joint space-time or divided (time, then space); then an MLP.

    ``forward`` maps ``(B, T, N, D)`` to the same shape and returns the weights of each attention it ran when
    asked: ``{"space": (B·T, h, N, N)}``, ``{"joint": (B, h, T·N, T·N)}`` or both ``"time": (B·N, h, T, T)`` and
    ``"space"``.
    """

    def __init__(self, config: VideoConfig) -> None:
        super().__init__()
        d = config.embed_dim
        self.kind = config.attention
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.attn = MultiHeadSelfAttention(d, config.num_heads)  # space or joint; in "divided" the space one
        if self.kind == "divided":
            self.norm_time = nn.LayerNorm(d, eps=1e-6)
            self.time_attn = MultiHeadSelfAttention(d, config.num_heads)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = MLP(d, config.mlp_dim)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        check_ndim("x", x, 4, GRID)
        b, t, n, d = x.shape
        weights: dict[str, torch.Tensor] = {}
        if self.kind == "divided":
            y, w = self.time_attn(time_reshape(self.norm_time(x)), need_weights=need_weights)  # (B·N, T, D)
            x = x + time_unreshape(y, b)  # (B, T, N, D): each place has seen its own past and future
            if need_weights:
                weights["time"] = w  # (B·N, h, T, T)
        if self.kind == "joint":
            y, w = self.attn(joint_reshape(self.norm1(x)), need_weights=need_weights)  # (B, T·N, D)
            x = x + y.reshape(b, t, n, d)
            if need_weights:
                weights["joint"] = w  # (B, h, T·N, T·N)
        else:
            y, w = self.attn(space_reshape(self.norm1(x)), need_weights=need_weights)  # (B·T, N, D)
            x = x + space_unreshape(y, b)
            if need_weights:
                weights["space"] = w  # (B·T, h, N, N)
        return x + self.mlp(self.norm2(x)), weights


class VideoTransformer(nn.Module):
    """Clip embedding -> ``depth`` video blocks -> LayerNorm -> mean over all tokens -> linear head (logits)."""

    def __init__(self, config: VideoConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = ClipEmbedding(config)
        self.blocks = nn.ModuleList(VideoBlock(config) for _ in range(config.depth))
        self.norm = nn.LayerNorm(config.embed_dim, eps=1e-6)
        self.head = nn.Linear(config.embed_dim, config.num_classes)

    def forward_features(self, clips: torch.Tensor, *, need_weights: bool = False
                         ) -> tuple[torch.Tensor, list[dict[str, torch.Tensor]]]:
        """``(B, T, 3, H, W)`` -> ``((B, T', N, D)`` final tokens after the LayerNorm, each block's weights)."""
        x = self.embed(clips)  # (B, T', N, D)
        attentions = []
        for block in self.blocks:
            x, w = block(x, need_weights=need_weights)
            attentions.append(w)
        return self.norm(x), attentions

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        """``(B, T, 3, H, W)`` -> logits ``(B, classes)``: the frames' pooled tokens averaged over time."""
        x, _ = self.forward_features(clips)
        return self.head(x.mean(dim=(1, 2)))  # (B, D) -> (B, classes)


def attention_macs(config: VideoConfig, frames: int | None = None) -> dict[str, int]:
    """Multiply-adds of one forward pass of one clip, counted from the shapes (chapter 8's count).

    For S = T'·N tokens of width D: the patch embedding S·(3·t·P²)·D; per block the projections 4·S·D² (twice
    in divided attention), the attention's QKᵀ and weights·V, 2·D per query–key pair (joint: (T'N)² pairs, space:
    T'·N², time: N·T'²), the MLP 2·S·D·D_mlp; the head D·classes. ``"attention"`` is the pairs' part,
    ``"rest"`` everything else. LayerNorms, softmax and GELU are not multiply-adds and are left out.
    """
    cfg = config if frames is None else dataclasses.replace(config, frames=frames)
    d, n, tt = cfg.embed_dim, cfg.num_patches, cfg.time_steps
    s = tt * n
    kernel = 3 * cfg.patch_size**2 * (cfg.tubelet_frames if cfg.tokens == "tubelets" else 1)
    pairs = {"space": tt * n * n, "joint": s * s, "divided": tt * n * n + n * tt * tt}[cfg.attention]
    projections = (8 if cfg.attention == "divided" else 4) * s * d * d
    per_block_rest = projections + 2 * s * d * cfg.mlp_dim
    attention = cfg.depth * 2 * pairs * d
    rest = s * kernel * d + cfg.depth * per_block_rest + d * cfg.num_classes
    return {"attention": attention, "rest": rest, "total": attention + rest, "tokens": s}
