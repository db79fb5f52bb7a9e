"""The ViT hyper-parameters in one validated dataclass, and the paper's named presets."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from vit_edu._checks import check_divisible, check_positive_int, pair

POOLS = ("cls", "mean")
POS_EMBEDS = ("learned", "none", "sincos", "relative")
NORMS = ("pre", "post")


@dataclass(frozen=True)
class ViTConfig:
    """Everything that fixes a ViT's shapes. Invalid combinations raise ``ValueError`` at construction.

    ``pool="cls"`` reads out a prepended CLS token; ``pool="mean"`` averages the patch tokens and then the
    model has no CLS token at all (as in the paper's global-average-pooling variant). ``input_norm=(mean, std)``
    makes the model standardise its input itself, ``(x - mean) / std``, so callers pass images in [0, 1].
    """

    image_size: int | tuple[int, int]
    patch_size: int
    in_channels: int = 3
    num_classes: int = 1000
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    mlp_dim: int = 3072
    qkv_bias: bool = True
    ln_eps: float = 1e-6
    dropout: float = 0.0
    drop_path_rate: float = 0.0  # stochastic depth: the last block's rate; block i gets rate * i / (depth - 1)
    pool: Literal["cls", "mean"] = "cls"
    pos_embed: Literal["learned", "none", "sincos", "relative"] = "learned"  # relative: a bias in each attention
    norm: Literal["pre", "post"] = "pre"
    input_norm: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.input_norm is not None:
            values = tuple(self.input_norm)  # a list after a JSON round trip
            if len(values) != 2 or not values[1] > 0:
                raise ValueError(f"input_norm=(mean, std) needs std > 0, got {self.input_norm!r}")
            object.__setattr__(self, "input_norm", (float(values[0]), float(values[1])))
        object.__setattr__(self, "image_size", pair(self.image_size, "image_size"))
        for name in ("patch_size", "in_channels", "num_classes", "embed_dim", "depth", "num_heads", "mlp_dim"):
            check_positive_int(name, getattr(self, name))
        check_divisible(*self.image_size, self.patch_size)
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}: "
                f"each head needs embed_dim / num_heads features"
            )
        if self.pos_embed == "sincos" and self.embed_dim % 4:
            raise ValueError(f"pos_embed='sincos' needs embed_dim divisible by 4, got {self.embed_dim}")
        for name, allowed in (("pool", POOLS), ("pos_embed", POS_EMBEDS), ("norm", NORMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not 0.0 <= self.drop_path_rate < 1.0:
            raise ValueError(f"drop_path_rate must be in [0, 1), got {self.drop_path_rate}")
        if self.ln_eps <= 0:
            raise ValueError(f"ln_eps must be positive, got {self.ln_eps}")

    @property
    def grid_size(self) -> tuple[int, int]:
        """Patches per column and per row, ``(H/P, W/P)``."""
        height, width = self.image_size
        return height // self.patch_size, width // self.patch_size

    @property
    def num_patches(self) -> int:
        """N, the number of patch tokens."""
        grid_h, grid_w = self.grid_size
        return grid_h * grid_w

    @property
    def num_prefix_tokens(self) -> int:
        """Tokens before the patches: 1 (the CLS token) with ``pool="cls"``, else 0."""
        return 1 if self.pool == "cls" else 0

    @property
    def seq_len(self) -> int:
        """S, the sequence length the encoder sees: N patches plus the prefix tokens."""
        return self.num_patches + self.num_prefix_tokens

    @property
    def head_dim(self) -> int:
        """d = D / h, the width of one attention head."""
        return self.embed_dim // self.num_heads

    @property
    def patch_dim(self) -> int:
        """C·P·P, the length of one flattened patch."""
        return self.in_channels * self.patch_size**2

    def to_dict(self) -> dict:
        """A JSON-ready dict (``image_size`` as a list) that ``ViTConfig(**d)`` turns back into this config."""
        d = asdict(self)
        d["image_size"] = list(self.image_size)
        d["input_norm"] = None if self.input_norm is None else list(self.input_norm)
        return d


def _preset(patch: int, dim: int, depth: int, heads: int, mlp: int) -> ViTConfig:
    return ViTConfig(image_size=224, patch_size=patch, embed_dim=dim, depth=depth, num_heads=heads, mlp_dim=mlp)


# Paper Table 1 (Base/Large/Huge) and DeiT (Tiny/Small), at 224×224 and 1000 classes.
# Change them with dataclasses.replace(CONFIGS["vit-b/16"], image_size=32, num_classes=10).
CONFIGS: dict[str, ViTConfig] = {
    "vit-ti/16": _preset(16, 192, 12, 3, 768),
    "vit-s/16": _preset(16, 384, 12, 6, 1536),
    "vit-b/16": _preset(16, 768, 12, 12, 3072),
    "vit-b/32": _preset(32, 768, 12, 12, 3072),
    "vit-l/16": _preset(16, 1024, 24, 16, 4096),
    "vit-l/32": _preset(32, 1024, 24, 16, 4096),
    "vit-h/14": _preset(14, 1280, 32, 16, 5120),
}
