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
