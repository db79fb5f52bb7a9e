"""pretrained_vit_b16 loads a local torchvision state dict; nothing downloads unless asked."""

import pytest
import torch

torchvision = pytest.importorskip("torchvision")

from vit_edu.interop import pretrained_vit_b16  # noqa: E402


@pytest.fixture(scope="module")
def saved_b16(tmp_path_factory):
    torch.manual_seed(0)
    tv = torchvision.models.vit_b_16(weights=None).eval()
    path = tmp_path_factory.mktemp("w") / "vit_b_16.pth"
    torch.save(tv.state_dict(), path)
    return tv, path


def test_local_file_gives_the_same_logits(saved_b16):
    tv, path = saved_b16
    model = pretrained_vit_b16(path)
    assert not model.training
    assert model.config.grid_size == (14, 14) and model.config.embed_dim == 768
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(model(x), tv(x), atol=1e-4, rtol=1e-4)


def test_missing_file_without_download_is_a_clear_error(tmp_path, monkeypatch):
    def no_web(*a, **k):
        raise AssertionError("tried to download")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_web)
    with pytest.raises(ValueError, match="no weights file.*download=True"):
        pretrained_vit_b16(tmp_path / "missing.pth")
    with pytest.raises(ValueError, match="nothing is downloaded"):
        pretrained_vit_b16()


def test_wrong_file_is_a_clear_error(tmp_path):
    path = tmp_path / "other.pth"
    torch.save({"weight": torch.zeros(2)}, path)
    with pytest.raises(ValueError, match="not a torchvision ViT-B/16 state dict"):
        pretrained_vit_b16(path)
