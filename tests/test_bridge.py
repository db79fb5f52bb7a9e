"""vit_edu.variants.bridge: LLaVA's bridge shapes on the meta device, and the descendants map's token shapes."""

import pytest
import torch

from vit_edu import VisionTransformer, ViTConfig
from vit_edu.variants.bridge import (
    LlavaSetup,
    bridge_stages,
    descendants,
    llava_bridge,
    mlp_projector,
    share_text,
    tiny_bridge,
)


@pytest.fixture(scope="module")
def llava():
    return llava_bridge(text_tokens=32)


def test_llava_bridge_shapes(llava):
    shapes = {s.name: s.shape for s in llava["stages"]}
    assert shapes["image"] == (1, 3, 336, 336)
    assert shapes["patches"] == (1, 576, 14 * 14 * 3)
    assert shapes["patch embedding"] == (1, 576, 1024)
    assert shapes["CLS token + positions"] == (1, 577, 1024)
    assert shapes["ViT-L/14 block 23 of 24"] == (1, 577, 1024)
    assert shapes["patch tokens (CLS dropped)"] == (1, 576, 1024)
    assert shapes["projector (2-layer MLP)"] == (1, 576, 4096)
    assert llava["sequence"] == (1, 576 + 32, 4096)
    assert llava["shares"] == {2048: 576 / 2048, 4096: 576 / 4096}


def test_llava_parameter_counts(llava):
    """The projector is 1024·4096 + 4096 + 4096·4096 + 4096; the ViT-L/14 encoder about 303 million (CLIP's 304M)."""
    proj = next(s for s in llava["stages"] if s.name.startswith("projector"))
    assert proj.params == 1024 * 4096 + 4096 + 4096 * 4096 + 4096
    assert 300e6 < llava["vision_params"] < 306e6
    assert all(p.is_meta for p in mlp_projector(8, 16).to("meta").parameters())


def test_bridge_on_real_weights_equals_the_model_by_hand():
    """On the CPU the stages are the model's own computation: block outputs equal forward_layers'."""
    torch.manual_seed(0)
    cfg = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32)
    vit = VisionTransformer(cfg).eval()
    proj = mlp_projector(16, 24)
    images = torch.rand(2, 3, 16, 16)
    stages = bridge_stages(vit, proj, images, feature_block=-1)
    assert stages[-1].shape == (2, 4, 24)
    hidden, _ = vit.forward_layers(images)
    torch.testing.assert_close(stages[-3].shape, tuple(hidden[-1].shape))
    with pytest.raises(ValueError, match="feature_block"):
        bridge_stages(vit, proj, images, feature_block=2)


def test_tiny_bridge():
    torch.manual_seed(0)
    vit = VisionTransformer(ViTConfig(image_size=32, patch_size=8, num_classes=1, embed_dim=64, depth=2,
                                      num_heads=4, mlp_dim=128))
    out = tiny_bridge(vit, 32, 24)
    assert out["stages"][-1].shape == (1, 16, 32) and out["image_tokens"] == 16 and out["share"] == 16 / 24
    with pytest.raises(ValueError, match="do not fit"):
        tiny_bridge(vit, 32, 8)


def test_descendants_token_shapes():
    by_name = {d.name: dict(d.shapes) for d in descendants()}
    assert len(by_name) == 9
    assert by_name["ViT-B/16"]["tokens"] == (1, 197, 768)
    assert by_name["DeiT-B/16"]["tokens"] == (1, 198, 768)
    swin = by_name["Swin-T"]
    assert swin["stage 1 tokens"] == (1, 56, 56, 96) and swin["stage 4 tokens"] == (1, 7, 7, 768)
    assert swin["7×7 windows"] == (64, 49, 96)
    assert by_name["MAE (ViT-L/16)"]["encoder tokens"] == (1, 50, 1024)
    assert by_name["MAE (ViT-L/16)"]["predicted pixels"] == (1, 196, 768)
    assert by_name["DINO (ViT-S/16)"]["local crop tokens"] == (1, 37, 384)
    assert by_name["CLIP (ViT-L/14)"]["image tokens"] == (1, 257, 1024)
    assert by_name["DETR"]["encoder tokens"] == (1, 25 * 42, 256)  # an 800×1333 image at stride 32
    assert by_name["SETR (ViT-L/16)"]["pixel scores"] == (1, 150, 512, 512)
    assert by_name["TimeSformer"]["video tokens"] == (1, 1 + 8 * 196, 768)
    assert by_name["TimeSformer"]["time attention"] == (196, 8, 768)


def test_share_text_and_checks():
    assert share_text(576, 2048) == "576 of 2048 tokens (28.1%)"
    with pytest.raises(ValueError, match="context"):
        share_text(576, 0)
    with pytest.raises(ValueError, match="text_tokens"):
        llava_bridge(text_tokens=0)
    assert LlavaSetup().vision_config().num_patches == 576
