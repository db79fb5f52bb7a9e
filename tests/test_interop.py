import pytest
import torch
import torchvision
from torchvision.models.vision_transformer import VisionTransformer as TVViT

from tests.conftest import randomize
from vit_edu import CONFIGS, VisionTransformer, count_parameters, from_torchvision


def test_vit_b16_logits_match_torchvision():
    torch.manual_seed(0)
    tv = randomize(torchvision.models.vit_b_16(), std=0.02).eval()
    ours = from_torchvision(tv).eval()
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        expected = tv(x)
        torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=1e-5)
        logits, _ = ours(x, return_attention=True)
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    assert expected.abs().max() > 0.1  # the comparison is not between two zero heads


def test_small_non_square_config_matches_torchvision():
    torch.manual_seed(1)
    tv = randomize(TVViT(image_size=32, patch_size=8, num_layers=3, num_heads=2, hidden_dim=16, mlp_dim=40,
                         num_classes=5)).eval()
    ours = from_torchvision(tv).eval()
    assert ours.config.depth == 3 and ours.config.num_heads == 2 and ours.config.mlp_dim == 40
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), tv(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name,builder", [("vit-b/16", torchvision.models.vit_b_16),
                                          ("vit-l/32", torchvision.models.vit_l_32),
                                          ("vit-b/32", torchvision.models.vit_b_32)])
def test_parameter_counts_equal_torchvision(name, builder):
    with torch.device("meta"):
        ours = VisionTransformer(CONFIGS[name])
        theirs = builder()
    assert count_parameters(ours) == sum(p.numel() for p in theirs.parameters())


def test_pre_logits_head_is_refused_clearly():
    tv = TVViT(image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32,
               representation_size=8)
    with pytest.raises(ValueError, match="representation_size=8"):
        from_torchvision(tv)


def test_port_is_an_independent_copy_that_trains():
    tv = TVViT(image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=3)
    ours = from_torchvision(tv)
    assert all(p.device.type == "cpu" and p.requires_grad for p in ours.parameters())
    with torch.no_grad():
        ours.head.weight.add_(1.0)
    assert torch.equal(tv.heads.head.weight, torch.zeros(3, 16))  # torchvision's tensors untouched
    ours(torch.randn(2, 3, 32, 32)).sum().backward()
    assert ours.blocks[0].attn.qkv.weight.grad is not None
