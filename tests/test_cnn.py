import pytest
import torch

from vit_edu.training.cnn import SmallCNN, matching_cnn


def test_small_cnn_shapes_and_matching_size():
    model = SmallCNN(4, width=8)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 4)
    target = 310_000
    cnn = matching_cnn(target, 4)
    count = sum(p.numel() for p in cnn.parameters())
    assert abs(count - target) / target < 0.02
    with pytest.raises(ValueError, match="width must be a positive integer"):
        SmallCNN(4, width=0)


def test_seeded_model_draws_the_same_weights_for_the_same_seed():
    from vit_edu.config import ViTConfig
    from vit_edu.training.cnn import SmallCNN, seeded_model

    cfg = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=1, num_heads=2, mlp_dim=32)
    a, b = seeded_model(cfg, 3, "CNN"), seeded_model(cfg, 3, "CNN")
    assert isinstance(a, SmallCNN) and all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    vit = seeded_model(cfg, 3)
    assert torch.equal(vit.head.weight, seeded_model(cfg, 3).head.weight)
    assert not torch.equal(vit.patch_embed.proj.weight, seeded_model(cfg, 4).patch_embed.proj.weight)
    with pytest.raises(ValueError, match="kind must be 'ViT' or 'CNN', got 'MLP'"):
        seeded_model(cfg, 0, "MLP")
