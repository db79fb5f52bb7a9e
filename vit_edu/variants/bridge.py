"""LLaVA's bridge from a ViT into a language model, shape by shape, and the token shapes of ViT's descendants.

Everything here runs on PyTorch's ``meta`` device: the layers are built at their real sizes but hold no numbers
(random weights are never even drawn), and a forward pass on a meta tensor computes only the shapes. So the
shapes are those of the real configurations, and the parameter counts are the real layers', while nothing
here can say what a trained model outputs.

LLaVA (Liu et al., 2023; the 1.5 version's choices) takes CLIP's ViT-L/14 at 336×336 pixels, reads the
patch tokens of its second-to-last block (no CLS token), maps each one with a two-layer MLP (GELU between)
to the language model's width, and puts them into the language model's context among the text tokens (its
chat template puts a system prompt and "USER:" before them, the question after; the first LLaVA read the same
block, with one linear layer at 224×224).
The image encoder here is :class:`vit_edu.VisionTransformer` with ViT-L/14's sizes: the same token shapes as
CLIP's (CLIP adds a LayerNorm before the blocks and uses a slightly different GELU, which change no shape).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from vit_edu._checks import check_positive_int
from vit_edu.config import CONFIGS, ViTConfig
from vit_edu.model import VisionTransformer
from vit_edu.variants.windows import PatchMerging, window_partition

Shape = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class LlavaSetup:
    """LLaVA-1.5-7B's bridge: CLIP ViT-L/14 at 336 px, its second-to-last block, a 2-layer MLP, Vicuna-7B."""

    image_size: int = 336
    patch_size: int = 14
    vision_width: int = 1024
    vision_depth: int = 24
    vision_heads: int = 16
    vision_mlp: int = 4096
    feature_block: int = -2  # the second-to-last block's output, as both LLaVA versions (select_layer = -2)
    llm_width: int = 4096  # Vicuna-7B (a LLaMA-7B), its hidden size
    llm_vocab: int = 32_000
    contexts: tuple[int, ...] = (2048, 4096)  # LLaMA-1 and LLaMA-2 (Vicuna v1.5) context lengths

    def vision_config(self) -> ViTConfig:
        """The image encoder's sizes as a ViTConfig (CLS token, learned positions; no classifier is used)."""
        return ViTConfig(image_size=self.image_size, patch_size=self.patch_size, num_classes=1,
                         embed_dim=self.vision_width, depth=self.vision_depth, num_heads=self.vision_heads,
                         mlp_dim=self.vision_mlp)


@dataclasses.dataclass(frozen=True)
class Stage:
    """One step of a bridge: its name, the tensor shape after it, the parameters it adds, and what it does."""

    name: str
    shape: Shape
    params: int
    note: str


def _unused(used: int, depth: int) -> str:
    if used == depth:
        return " (the last)"
    return f"; block {depth} is not used" if used == depth - 1 else f"; blocks {used + 1}–{depth} are not used"


def _params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def mlp_projector(in_width: int, out_width: int) -> nn.Sequential:
    """LLaVA-1.5's projector ("mlp2x_gelu"): ``Linear(in, out)`` → GELU → ``Linear(out, out)``, token by token."""
    check_positive_int("in_width", in_width)
    check_positive_int("out_width", out_width)
    return nn.Sequential(nn.Linear(in_width, out_width), nn.GELU(), nn.Linear(out_width, out_width))


def bridge_stages(vit: VisionTransformer, projector: nn.Module, images: torch.Tensor, *,
                  feature_block: int = -2, vision_name: str = "ViT") -> list[Stage]:
    """The bridge of ``vit`` → ``projector`` on ``images`` ``(B, C, H, W)``: one :class:`Stage` per step.

    Works on any device (``meta`` for shapes only): patches, patch embedding, CLS + positions, the output of block
    ``feature_block`` (negative counts from the end), the patch tokens without the CLS token, the projector.
    """
    cfg = vit.config
    depth = cfg.depth
    block = feature_block % depth if -depth <= feature_block < depth else None
    if block is None:
        raise ValueError(f"feature_block must index one of the {depth} blocks (from {-depth} to {depth - 1}), "
                         f"got {feature_block}")
    b = images.shape[0]
    tokens = vit.patch_embed(images)  # (B, N, D)
    stages = [
        Stage("image", tuple(images.shape), 0, f"{cfg.image_size[0]}×{cfg.image_size[1]} pixels, RGB"),
        Stage("patches", (b, cfg.num_patches, cfg.patch_dim), 0,
              f"{cfg.grid_size[0]}×{cfg.grid_size[1]} patches of {cfg.patch_size}×{cfg.patch_size}×3 values"),
        Stage("patch embedding", tuple(tokens.shape), _params(vit.patch_embed), f"each patch to {cfg.embed_dim} features"),
    ]
    x = vit.pos_embed(torch.cat([vit.cls_token.expand(b, -1, -1), tokens], dim=1)) if vit.cls_token is not None \
        else vit.pos_embed(tokens)
    stages.append(Stage("CLS token + positions", tuple(x.shape), _params(vit.pos_embed) + cfg.embed_dim,
                        "one CLS token in front, a learned position added to every token"))
    for blk in vit.blocks[: block + 1]:
        x, _ = blk(x)
    used = _params(vit.blocks[: block + 1])
    stages.append(Stage(f"{vision_name} block {block + 1} of {depth}", tuple(x.shape), used,
                        f"the output of block {block + 1}" + _unused(block + 1, depth)))
    patches = x[:, cfg.num_prefix_tokens:]  # (B, N, D)
    stages.append(Stage("patch tokens (CLS dropped)", tuple(patches.shape), 0, "one token per patch"))
    out = projector(patches)  # (B, N, D_llm)
    stages.append(Stage("projector (2-layer MLP)", tuple(out.shape), _params(projector),
                        f"each token from {cfg.embed_dim} to {out.shape[-1]} features, the language model's width"))
    return stages


def llava_bridge(setup: LlavaSetup = LlavaSetup(), *, text_tokens: int = 32) -> dict:
    """LLaVA's bridge on the real configuration, on the meta device: stages, and the image's share of the context.

    ``text_tokens`` text tokens (embedded by a meta ``nn.Embedding(vocab, width)``) follow the image tokens in
    the language model's input sequence; the chat template's system prompt and "USER:" before the image tokens
    are left out (a few dozen tokens, no new shape). Returns ``{"stages", "sequence", "shares", "vision_params"}``.
    """
    check_positive_int("text_tokens", text_tokens)
    with torch.device("meta"):
        vit = VisionTransformer(setup.vision_config())
        projector = mlp_projector(setup.vision_width, setup.llm_width)
        embed = nn.Embedding(setup.llm_vocab, setup.llm_width)
        images = torch.empty(1, 3, setup.image_size, setup.image_size)
        stages = bridge_stages(vit, projector, images, feature_block=setup.feature_block, vision_name="ViT-L/14")
        text = embed(torch.zeros(1, text_tokens, dtype=torch.long))  # (1, T, D_llm)
        sequence = torch.cat([torch.empty(stages[-1].shape), text], dim=1)  # (1, N + T, D_llm)
    image_tokens = stages[-1].shape[1]
    stages.append(Stage(f"+ {text_tokens} text tokens", tuple(sequence.shape), _params(embed),
                        "the language model's input: (system prompt, USER:) image tokens, text tokens"))
    vision_params = _params(vit) - _params(vit.head)
    shares = {n: image_tokens / n for n in setup.contexts}
    return {"stages": stages, "sequence": tuple(sequence.shape), "shares": shares, "vision_params": vision_params,
            "image_tokens": image_tokens}


def tiny_bridge(vit: VisionTransformer, out_width: int, context: int) -> dict:
    """The same bridge for a small ViT (e.g. the tiny CLIP's, on the CPU with its own weights): stages and share.

    The projector is a fresh, untrained ``mlp_projector(D, out_width)``; ``context`` is the length of the
    sequence the image tokens would join.
    """
    check_positive_int("context", context)
    cfg = vit.config
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        projector = mlp_projector(cfg.embed_dim, out_width)
        stages = bridge_stages(vit, projector, torch.zeros(1, cfg.in_channels, *cfg.image_size), feature_block=-1)
    n = stages[-1].shape[1]
    if n > context:
        raise ValueError(f"{n} image tokens do not fit a context of {context}")
    return {"stages": stages, "image_tokens": n, "share": n / context}


# ----------------------------------------------------------------------------------------------------------
# The descendants map
# ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Descendant:
    """One model of the map: what it keeps of ViT, what it changes, and its token shapes as code computes them."""

    name: str
    year: int
    cite: str
    keeps: str
    changes: str
    shapes: tuple[tuple[str, Shape], ...]


def _vit(name: str, **changes) -> VisionTransformer:
    return VisionTransformer(dataclasses.replace(CONFIGS[name], **changes))


def _tokens(vit: VisionTransformer, batch: int = 1) -> torch.Tensor:
    """``(B, S, D)`` tokens after the patch embedding, CLS token and positions (meta tensors)."""
    cfg = vit.config
    x = vit.patch_embed(torch.empty(batch, 3, *cfg.image_size))
    return vit.pos_embed(torch.cat([vit.cls_token.expand(batch, -1, -1), x], dim=1))


def _resnet50_stride32(height: int, width: int) -> torch.Tensor:
    """The shape of ResNet-50's last feature map: its stem and its three stride-2 stages (only the downsampling
    layers, with ResNet's kernel sizes, strides and paddings, not the full network)."""
    layers = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.MaxPool2d(3, stride=2, padding=1),
                           nn.Conv2d(64, 512, 3, stride=2, padding=1), nn.Conv2d(512, 1024, 3, stride=2, padding=1),
                           nn.Conv2d(1024, 2048, 3, stride=2, padding=1))
    return layers(torch.empty(1, 3, height, width))


def descendants() -> list[Descendant]:
    """ViT and eight descendants at their papers' main configurations, token shapes computed on the meta device."""
    out = []
    with torch.device("meta"):
        vit = _vit("vit-b/16")
        x = _tokens(vit)  # (1, 197, 768)
        out.append(Descendant(
            "ViT-B/16", 2021, "dosovitskiy2021vit", "—", "the reference: patches, CLS token, global attention",
            (("tokens", tuple(x.shape)), ("CLS → classes", tuple(vit.head(x[:, 0]).shape)))))

        deit = torch.cat([x[:, :1], x[:, :1], x[:, 1:]], dim=1)  # CLS, distillation token, patches
        out.append(Descendant(
            "DeiT-B/16", 2021, "touvron2021deit", "the whole ViT-B", "a distillation token learns from a CNN teacher",
            (("tokens", tuple(deit.shape)), ("CLS → classes", tuple(vit.head(deit[:, 0]).shape)),
             ("distillation token → classes", tuple(nn.Linear(768, 1000)(deit[:, 1]).shape)))))

        emb = _vit("vit-b/16", patch_size=4, embed_dim=96, num_heads=3).patch_embed(torch.empty(1, 3, 224, 224))
        grid = emb.reshape(1, 56, 56, 96)  # (B, H, W, C)
        shapes = [("stage 1 tokens", tuple(grid.shape)), ("7×7 windows", tuple(window_partition(grid, 7).shape))]
        for dim in (96, 192, 384):
            grid = PatchMerging(dim)(grid)
            shapes.append((f"stage {len(shapes)} tokens", tuple(grid.shape)))
        out.append(Descendant(
            "Swin-T", 2021, "liu2021swin", "patch embedding, pre-LN blocks, MLPs",
            "attention inside (shifted) 7×7 windows; patch merging builds a 4-stage pyramid", tuple(shapes)))

        tokens = _tokens(_vit("vit-l/16"))  # (1, 197, 1024)
        keep = int(196 * (1 - 0.75))
        visible = torch.cat([tokens[:, :1], tokens[:, 1: 1 + keep]], dim=1)  # which 49 is random; how many is not
        decoder_in = torch.cat([nn.Linear(1024, 512)(visible), torch.empty(1, 196 - keep, 512)], dim=1)
        pixels = nn.Linear(512, 16 * 16 * 3)(decoder_in[:, 1:])
        out.append(Descendant(
            "MAE (ViT-L/16)", 2022, "he2022mae", "the ViT encoder, unchanged",
            "pre-training: the encoder sees 25% of the patches; a light decoder redraws the pixels",
            (("encoder tokens", tuple(visible.shape)), ("decoder tokens", tuple(decoder_in.shape)),
             ("predicted pixels", tuple(pixels.shape)))))

        global_crop = _tokens(_vit("vit-s/16"))  # (1, 197, 384)
        local_crop = _tokens(_vit("vit-s/16", image_size=96))  # (1, 37, 384)
        out.append(Descendant(
            "DINO (ViT-S/16)", 2021, "caron2021dino", "the ViT, unchanged",
            "pre-training without labels: a student matches a momentum teacher across crops",
            (("global crop tokens", tuple(global_crop.shape)), ("local crop tokens", tuple(local_crop.shape)),
             ("head output", tuple(nn.Linear(384, 65_536)(global_crop[:, 0]).shape)))))

        img = _tokens(_vit("vit-l/16", patch_size=14))  # (1, 257, 1024)
        words = nn.Embedding(49_408, 768)(torch.zeros(1, 77, dtype=torch.long))  # (1, 77, 768)
        out.append(Descendant(
            "CLIP (ViT-L/14)", 2021, "radford2021clip", "the ViT as image encoder",
            "trained against a text encoder on image–caption pairs; classes become prompts",
            (("image tokens", tuple(img.shape)), ("image embedding", tuple(nn.Linear(1024, 768)(img[:, 0]).shape)),
             ("text tokens", tuple(words.shape)), ("text embedding", tuple(nn.Linear(768, 768)(words[:, -1]).shape)))))

        feat = _resnet50_stride32(800, 1333)  # (1, 2048, 25, 42)
        memory = nn.Conv2d(2048, 256, 1)(feat).flatten(2).transpose(1, 2)  # (1, 25·42, 256)
        queries = nn.Embedding(100, 256).weight[None]  # (1, 100, 256)
        out.append(Descendant(
            "DETR", 2020, "carion2020detr", "a Transformer encoder over image tokens (DETR is a few months older than ViT)",
            "tokens from a CNN's feature map; a decoder with 100 object queries outputs boxes",
            (("CNN feature map", tuple(feat.shape)), ("encoder tokens", tuple(memory.shape)),
             ("object queries", tuple(queries.shape)), ("class scores", tuple(nn.Linear(256, 92)(queries).shape)),
             ("boxes", tuple(nn.Linear(256, 4)(queries).shape)))))

        setr = _tokens(_vit("vit-l/16", image_size=512))  # (1, 1025, 1024)
        fmap = setr[:, 1:].transpose(1, 2).reshape(1, 1024, 32, 32)
        scores = nn.Upsample(scale_factor=16)(nn.Conv2d(1024, 150, 1)(fmap))
        out.append(Descendant(
            "SETR (ViT-L/16)", 2021, "zheng2021setr", "the ViT-L encoder",
            "patch tokens reshaped to a grid and upsampled to one class score per pixel",
            (("tokens", tuple(setr.shape)), ("token grid", tuple(fmap.shape)), ("pixel scores", tuple(scores.shape)))))

        frames = 8
        patches = x[:, 1:].repeat(frames, 1, 1)  # (T, N, D): each frame's 196 patch tokens (all alike on meta)
        video = torch.cat([x[:, :1], patches.reshape(1, -1, 768)], dim=1)  # (1, 1 + T·N, D)
        over_time = patches.transpose(0, 1)  # (N, T, D): one sequence per patch position
        over_space = torch.cat([x[:, :1].expand(frames, -1, -1), patches], dim=1)  # (T, 1 + N, D)
        out.append(Descendant(
            "TimeSformer", 2021, "bertasius2021timesformer", "ViT-B/16 on each frame's patches",
            "divided attention: each token attends over time (same patch, 8 frames), then over space",
            (("video tokens", tuple(video.shape)), ("time attention", tuple(over_time.shape)),
             ("space attention", tuple(over_space.shape)))))
    return out


def share_text(image_tokens: int, context: int) -> str:
    """"576 of 2048 tokens (28.1%)": the image's part of a context, in words."""
    check_positive_int("image_tokens", image_tokens)
    check_positive_int("context", context)
    return f"{image_tokens} of {context} tokens ({100 * image_tokens / context:.1f}%)"


__all__ = ["Descendant", "LlavaSetup", "Stage", "bridge_stages", "descendants", "llava_bridge", "mlp_projector",
           "share_text", "tiny_bridge"]
