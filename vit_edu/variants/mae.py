"""Masked autoencoders (He et al., 2022): hide most patches, encode the rest, reconstruct the hidden pixels.

Pre-training needs no labels. Each image's patch tokens are shuffled by random noise and only the first
``(1 - mask_ratio)·N`` of them are kept (:func:`random_masking`, with the paper's code's ``ids_shuffle`` and
``ids_restore``). The encoder, a :class:`vit_edu.VisionTransformer` whose blocks, patch embedding and position
embedding are used as they are, sees only those visible tokens (and its CLS token): at 75% masking, a quarter of
the sequence. A light decoder takes the encoded tokens, puts a shared learned mask token in every hidden place,
unshuffles, adds its own (fixed sin-cos) position embeddings, runs a few narrow blocks and predicts each patch's
pixels. The loss is the mean squared error on the hidden patches only, against pixels normalised per patch
(mean 0, variance 1 within each patch: the paper's ``norm_pix_loss``).

After pre-training, ``MaskedAutoencoder.encoder`` is an ordinary ``VisionTransformer`` (its classification head
never trained): chapter 16 probes and fine-tunes it with :mod:`vit_edu.training`. Left out, and said so there: the
paper's scale (ViT-L/H, 1600 epochs on ImageNet), its augmentation, and its layer-wise learning-rate decay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.block import EncoderBlock
from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer
from vit_edu.patches import patchify, unpatchify
from vit_edu.position import sincos_2d

NORM_PIX_EPS = 1e-6  # the paper's code: (target - mean) / sqrt(var + 1e-6)


def check_mask_ratio(mask_ratio: float) -> float:
    """The share of hidden patches must lie in [0, 1): at least one patch stays visible."""
    if isinstance(mask_ratio, bool) or not isinstance(mask_ratio, (int, float)) or not 0.0 <= mask_ratio < 1.0:
        raise ValueError(f"mask ratio must be a number in [0, 1), got {mask_ratio!r}")
    return float(mask_ratio)


def num_visible(num_patches: int, mask_ratio: float) -> int:
    """How many of N patches the encoder sees: ``int(N · (1 - mask_ratio))`` as in the paper's code, at least 1."""
    check_positive_int("num_patches", num_patches)
    return max(1, int(num_patches * (1 - check_mask_ratio(mask_ratio))))


class Masking(NamedTuple):
    """What :func:`random_masking` returns; K = visible tokens, N = all patch tokens."""

    visible: torch.Tensor  # (B, K, D): the kept tokens, in shuffled order
    mask: torch.Tensor  # (B, N): 1.0 where the patch is hidden, 0.0 where the encoder sees it, in image order
    ids_shuffle: torch.Tensor  # (B, N): patch indices sorted by their noise; the first K are kept
    ids_restore: torch.Tensor  # (B, N): the inverse permutation, position of each patch in the shuffled order


def random_masking(tokens: torch.Tensor, mask_ratio: float = 0.75, *,
                   generator: torch.Generator | None = None) -> Masking:
    """Keep a random ``1 - mask_ratio`` of each sample's ``(B, N, D)`` tokens: a per-sample shuffle by noise.

    Each sample draws N uniform numbers; ``ids_shuffle = argsort(noise)`` orders its patches, the first K are kept,
    and ``ids_restore = argsort(ids_shuffle)`` is the inverse permutation that puts a shuffled sequence back in
    image order (see :func:`restore_order`).
    """
    check_ndim("tokens", tokens, 3, "(B, N, D)")
    b, n, d = tokens.shape
    keep = num_visible(n, mask_ratio)
    noise = torch.rand(b, n, generator=generator, device=tokens.device)  # (B, N) in [0, 1)
    ids_shuffle = torch.argsort(noise, dim=1)  # (B, N): small noise first = kept
    ids_restore = torch.argsort(ids_shuffle, dim=1)  # (B, N): the inverse permutation
    ids_keep = ids_shuffle[:, :keep]  # (B, K)
    visible = torch.gather(tokens, 1, ids_keep[:, :, None].expand(-1, -1, d))  # (B, K, D)
    mask = torch.ones(b, n, device=tokens.device)
    mask[:, :keep] = 0.0  # in shuffled order: the first K are visible
    mask = torch.gather(mask, 1, ids_restore)  # (B, N), back in image order
    return Masking(visible, mask, ids_shuffle, ids_restore)


def restore_order(shuffled: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
    """``(B, N, D)`` tokens in shuffled order -> image order: ``out[:, i] = shuffled[:, ids_restore[:, i]]``."""
    check_ndim("shuffled", shuffled, 3, "(B, N, D)")
    check_ndim("ids_restore", ids_restore, 2, "(B, N)")
    if shuffled.shape[:2] != ids_restore.shape:
        raise ValueError(f"tokens of shape {tuple(shuffled.shape)} do not match ids_restore of shape "
                         f"{tuple(ids_restore.shape)}: need the same (B, N)")
    return torch.gather(shuffled, 1, ids_restore[:, :, None].expand(-1, -1, shuffled.shape[2]))


def normalized_patches(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``(B, C, H, W)`` -> ``(B, N, C·P·P)`` target: each patch's pixels with their own mean 0 and variance 1."""
    target = patchify(images, patch_size)  # (B, N, C·P·P), vit_edu's (c, p_h, p_w) order
    mean = target.mean(dim=-1, keepdim=True)
    var = target.var(dim=-1, keepdim=True)  # unbiased, as torch's default and the paper's code
    return (target - mean) / (var + NORM_PIX_EPS) ** 0.5


def masked_patch_loss(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error per patch ``(B, N)``, averaged over the hidden patches only (``mask == 1``)."""
    check_ndim("pred", pred, 3, "(B, N, C·P·P)")
    if pred.shape != target.shape or mask.shape != pred.shape[:2]:
        raise ValueError(f"pred {tuple(pred.shape)}, target {tuple(target.shape)} and mask {tuple(mask.shape)} "
                         f"must be (B, N, C·P·P), (B, N, C·P·P) and (B, N)")
    if not bool(mask.sum() > 0):
        raise ValueError("the mask hides no patch: the loss is taken on hidden patches only")
    per_patch = ((pred - target) ** 2).mean(dim=-1)  # (B, N)
    return (per_patch * mask).sum() / mask.sum()


@dataclasses.dataclass(frozen=True)
class MAEConfig:
    """An MAE: the encoder's ``ViTConfig``, the mask ratio, and the decoder's width, depth, heads and MLP width."""

    encoder: ViTConfig
    mask_ratio: float = 0.75
    decoder_dim: int = 64
    decoder_depth: int = 2
    decoder_heads: int = 4
    decoder_mlp_dim: int = 128
    norm_pix_loss: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.encoder, dict):  # after a JSON round trip
            object.__setattr__(self, "encoder", ViTConfig(**self.encoder))
        check_mask_ratio(self.mask_ratio)
        for name in ("decoder_dim", "decoder_depth", "decoder_heads", "decoder_mlp_dim"):
            check_positive_int(name, getattr(self, name))
        if self.decoder_dim % self.decoder_heads or self.decoder_dim % 4:
            raise ValueError(f"decoder_dim {self.decoder_dim} must be divisible by decoder_heads "
                             f"{self.decoder_heads} and by 4 (for its sin-cos position embedding)")

    def decoder_block_config(self) -> ViTConfig:
        """The ``ViTConfig`` of one decoder block (only its width, heads, MLP and LayerNorm settings are used)."""
        e = self.encoder
        return ViTConfig(image_size=e.image_size, patch_size=e.patch_size, in_channels=e.in_channels, num_classes=1,
                         embed_dim=self.decoder_dim, depth=self.decoder_depth, num_heads=self.decoder_heads,
                         mlp_dim=self.decoder_mlp_dim, ln_eps=e.ln_eps, pool=e.pool, pos_embed="sincos")

    def to_dict(self) -> dict:
        """JSON-ready; ``MAEConfig(**d)`` rebuilds it."""
        d = dataclasses.asdict(self)
        d["encoder"] = self.encoder.to_dict()
        return d


class MAEOutput(NamedTuple):
    """One forward pass: the loss, the predicted patches ``(B, N, C·P·P)``, the mask and ``ids_restore`` ``(B, N)``."""

    loss: torch.Tensor
    pred: torch.Tensor
    mask: torch.Tensor
    ids_restore: torch.Tensor


class MaskedAutoencoder(nn.Module):
    """A ``VisionTransformer`` encoder that sees only visible patches, and a light decoder that predicts all pixels."""

    def __init__(self, config: MAEConfig) -> None:
        super().__init__()
        self.config = config
        enc = config.encoder
        self.encoder = VisionTransformer(enc)  # its head stays unused (and zero) during pre-training
        dd = config.decoder_dim
        self.decoder_embed = nn.Linear(enc.embed_dim, dd)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dd).normal_(std=0.02))  # shared by every hidden patch
        table = torch.zeros(1, enc.seq_len, dd)  # the prefix (CLS) row stays zero, as in the paper's code
        table[0, enc.num_prefix_tokens:] = sincos_2d(enc.grid_size, dd)
        self.register_buffer("decoder_pos_embed", table, persistent=False)  # fixed, so not in the state dict
        block_cfg = config.decoder_block_config()
        self.decoder_blocks = nn.ModuleList(EncoderBlock(block_cfg, i) for i in range(config.decoder_depth))
        self.decoder_norm = nn.LayerNorm(dd, eps=enc.ln_eps)
        self.decoder_pred = nn.Linear(dd, enc.patch_dim)  # one patch of C·P·P pixels per token
        for layer in (self.decoder_embed, self.decoder_pred):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def _encoder_pos(self) -> torch.Tensor | None:
        """The encoder's position table ``(1, S, D)``, or None when it has none."""
        return self.encoder.pos_embed.embedding

    def forward_encoder(self, images: torch.Tensor, mask_ratio: float | None = None, *,
                        generator: torch.Generator | None = None,
                        need_weights: bool = False) -> tuple[torch.Tensor, Masking]:
        """``(B, C, H, W)`` -> encoded visible tokens ``(B, prefix + K, D)`` (CLS first) and the masking.

        Position embeddings are added before the masking, so every kept token carries its own position.
        ``need_weights`` runs attention's explicit path (for :func:`count_flops`, which cannot see inside the fused one).
        """
        enc = self.encoder
        cfg = enc.config
        ratio = self.config.mask_ratio if mask_ratio is None else mask_ratio
        if cfg.input_norm is not None:
            mean, std = cfg.input_norm
            images = (images - mean) / std
        x = enc.patch_embed(images)  # (B, N, D): all N patches are embedded, then most are dropped
        pos = self._encoder_pos()  # (1, S, D) or None
        prefix = cfg.num_prefix_tokens
        if pos is not None:
            x = x + pos[:, prefix:]
        masking = random_masking(x, ratio, generator=generator)
        x = masking.visible  # (B, K, D)
        if enc.cls_token is not None:
            cls = enc.cls_token if pos is None else enc.cls_token + pos[:, :1]  # (1, 1, D)
            x = torch.cat([cls.expand(x.shape[0], -1, -1), x], dim=1)  # (B, 1 + K, D)
        x = enc.pos_drop(x)
        for block in enc.blocks:
            x, _ = block(x, need_weights=need_weights)
        return enc.norm(x), masking

    def forward_decoder(self, latent: torch.Tensor, ids_restore: torch.Tensor, *,
                        need_weights: bool = False) -> torch.Tensor:
        """Encoded ``(B, prefix + K, D)`` -> predicted pixels of every patch ``(B, N, C·P·P)``, in image order."""
        prefix = self.config.encoder.num_prefix_tokens
        x = self.decoder_embed(latent)  # (B, prefix + K, Dd)
        b, length, dd = x.shape
        n = ids_restore.shape[1]
        hidden = self.mask_token.expand(b, n - (length - prefix), -1)  # (B, N - K, Dd): one shared vector
        patches = restore_order(torch.cat([x[:, prefix:], hidden], dim=1), ids_restore)  # (B, N, Dd), image order
        x = torch.cat([x[:, :prefix], patches], dim=1) + self.decoder_pos_embed  # (B, S, Dd)
        for block in self.decoder_blocks:
            x, _ = block(x, need_weights=need_weights)
        return self.decoder_pred(self.decoder_norm(x))[:, prefix:]  # (B, N, C·P·P)

    def target(self, images: torch.Tensor) -> torch.Tensor:
        """What the decoder learns to predict ``(B, N, C·P·P)``: per-patch normalised pixels, or raw ones."""
        p = self.config.encoder.patch_size
        return normalized_patches(images, p) if self.config.norm_pix_loss else patchify(images, p)

    def forward(self, images: torch.Tensor, mask_ratio: float | None = None, *,
                generator: torch.Generator | None = None) -> MAEOutput:
        """Mask, encode, decode; the loss on the hidden patches only."""
        latent, masking = self.forward_encoder(images, mask_ratio, generator=generator)
        pred = self.forward_decoder(latent, masking.ids_restore)
        loss = masked_patch_loss(pred, self.target(images), masking.mask)
        return MAEOutput(loss, pred, masking.mask, masking.ids_restore)

    @torch.no_grad()
    def reconstruct(self, images: torch.Tensor, mask_ratio: float | None = None, *,
                    generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(images with the visible patches kept and the hidden ones predicted (B, C, H, W), mask (B, N))``.

        With the normalised-pixel loss the decoder predicts each hidden patch's pattern, not its brightness: for
        display, its prediction is scaled back with the TRUE patch's mean and standard deviation (as one must;
        said in the chapter), so the colour of a hidden patch is given and only its pattern is the model's.
        """
        out = self.forward(images, mask_ratio, generator=generator)
        cfg = self.config.encoder
        true = patchify(images, cfg.patch_size)  # (B, N, C·P·P)
        pred = out.pred
        if self.config.norm_pix_loss:
            mean, var = true.mean(dim=-1, keepdim=True), true.var(dim=-1, keepdim=True)
            pred = pred * (var + NORM_PIX_EPS) ** 0.5 + mean
        mixed = torch.where(out.mask[:, :, None] > 0, pred, true).clamp(0.0, 1.0)
        return unpatchify(mixed, cfg.patch_size, cfg.image_size, cfg.in_channels), out.mask


def save_mae(path, model: MaskedAutoencoder, metrics: dict) -> None:
    """Weights in half precision (the file stays small), the config and a few numbers in one file."""
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save({"mae_config": model.config.to_dict(), "state_dict": state, "metrics": metrics}, path)


def load_mae(path) -> tuple[MaskedAutoencoder, dict]:
    """The pre-trained MAE (eval mode, float32) and its metrics; torch's global random state is left as it was."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):
        model = MaskedAutoencoder(MAEConfig(**data["mae_config"]))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in data["state_dict"].items()})
    return model.eval(), data["metrics"]


# ---------------------------------------------------------------- what masking saves

def block_macs(tokens: int, dim: int, mlp_dim: int) -> int:
    """Multiply-adds of one encoder block on S tokens: Q, K, V and output projections 4·S·D², attention 2·S²·D,
    MLP 2·S·D·mlp_dim (LayerNorm, softmax and GELU not counted)."""
    return tokens * (4 * dim * dim + 2 * dim * mlp_dim) + 2 * tokens * tokens * dim


def mae_macs(config: MAEConfig, mask_ratio: float | None = None) -> dict[str, int]:
    """Multiply-adds per image, by formula: the encoder on all tokens (a plain ViT), the encoder on the visible
    tokens (MAE), and the decoder on all tokens. The patch embedding runs on all N patches in both encoders."""
    e = config.encoder
    ratio = config.mask_ratio if mask_ratio is None else mask_ratio
    n, prefix = e.num_patches, e.num_prefix_tokens
    k = num_visible(n, ratio)
    embed = n * e.patch_dim * e.embed_dim
    dd = config.decoder_dim
    return {
        "encoder_all": embed + e.depth * block_macs(n + prefix, e.embed_dim, e.mlp_dim),
        "encoder_visible": embed + e.depth * block_macs(k + prefix, e.embed_dim, e.mlp_dim),
        "decoder": ((k + prefix) * e.embed_dim * dd + config.decoder_depth * block_macs(n + prefix, dd, config.decoder_mlp_dim)
                    + (n + prefix) * dd * e.patch_dim),
        "visible_tokens": k,
        "all_tokens": n,
    }


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of ``fn()`` as ``torch.utils.flop_counter`` counts them: 2 per multiply-add of matmuls and convolutions."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def measured_flops(model: MaskedAutoencoder, images: torch.Tensor, mask_ratio: float | None = None) -> dict[str, int]:
    """FLOPs per image counted by torch while the model runs: encoder on all tokens, on the visible ones, decoder.

    Attention runs its explicit path here (``need_weights=True``): the flop counter does not see inside the
    fused CPU kernel of ``scaled_dot_product_attention`` and would count its matmuls as zero.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    b = images.shape[0]
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        everything = count_flops(lambda: model.forward_encoder(images, 0.0, generator=gen, need_weights=True))
        latent, masking = model.forward_encoder(images, mask_ratio, generator=gen)
        visible = count_flops(lambda: model.forward_encoder(images, mask_ratio, generator=gen, need_weights=True))
        decoder = count_flops(lambda: model.forward_decoder(latent, masking.ids_restore, need_weights=True))
    return {"encoder_all": everything // b, "encoder_visible": visible // b, "decoder": decoder // b}
