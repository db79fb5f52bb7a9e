import pytest
import torch

from vit_edu.explain.filters import embedding_components, spatial_roughness


def smooth_filters(d: int = 64, seed: int = 0) -> torch.Tensor:
    """Filters built from two known smooth patterns plus a little noise: ``(d, 3, 8, 8)``."""
    gen = torch.Generator().manual_seed(seed)
    ramp = torch.linspace(-1, 1, 8)
    a = ramp.view(1, 1, 8).expand(3, 8, 8)  # horizontal gradient, all channels
    b = torch.stack([ramp.view(8, 1).expand(8, 8), torch.zeros(8, 8), -ramp.view(8, 1).expand(8, 8)])  # red-blue
    coef = torch.randn(d, 2, generator=gen) * torch.tensor([3.0, 1.5])
    noise = 0.01 * torch.randn(d, 3, 8, 8, generator=gen)
    return coef[:, 0, None, None, None] * a + coef[:, 1, None, None, None] * b + noise


def test_components_recover_planted_patterns_in_order():
    w = smooth_filters()
    comps, explained = embedding_components(w, 3)
    assert comps.shape == (3, 3, 8, 8) and explained.shape == (3,)
    assert explained[:2].sum() > 0.99 and explained[2] < 0.01
    ramp = torch.linspace(-1, 1, 8).view(1, 1, 8).expand(3, 8, 8).flatten()
    cos = torch.nn.functional.cosine_similarity(comps[0].flatten(), ramp, dim=0).abs()
    assert cos > 0.99


def test_components_are_unit_orthogonal_and_sign_fixed():
    w = torch.randn(32, 3, 4, 4)
    comps, explained = embedding_components(w, 5)
    flat = comps.flatten(1)
    torch.testing.assert_close(flat @ flat.T, torch.eye(5), atol=1e-5, rtol=0)
    assert (explained[:-1] >= explained[1:]).all() and explained.sum() <= 1
    peak = flat.abs().argmax(dim=1)
    assert (flat[torch.arange(5), peak] > 0).all()
    comps2, _ = embedding_components(-w, 5)  # flipping every filter flips the centred data: same components
    torch.testing.assert_close(comps, comps2)


def test_all_components_explain_everything():
    w = torch.randn(10, 3, 2, 2)  # D = 10 < C·P·P = 12
    _, explained = embedding_components(w, 10)
    assert abs(explained.sum().item() - 1) < 1e-5


@pytest.mark.parametrize("k", [0, 11, -1])
def test_bad_k_raises_naming_it(k):
    with pytest.raises(ValueError, match=str(k)):
        embedding_components(torch.randn(10, 3, 2, 2), k)


def test_bad_weight_shape_raises():
    with pytest.raises(ValueError, match="4 dimensions"):
        embedding_components(torch.randn(10, 12), 2)


def test_roughness_of_noise_smooth_and_checkerboard():
    gen = torch.Generator().manual_seed(0)
    noise = torch.randn(200, 3, 8, 8, generator=gen)
    assert abs(spatial_roughness(noise).mean().item() - 1) < 0.05
    smooth = smooth_filters()[:5]
    assert (spatial_roughness(smooth) < 0.1).all()
    checker = ((torch.arange(8).view(8, 1) + torch.arange(8)) % 2).float().expand(1, 3, 8, 8)
    assert spatial_roughness(checker).item() > 1.9


def test_roughness_rejects_one_pixel_tiles():
    with pytest.raises(ValueError, match=r"\(1, 1\)"):
        spatial_roughness(torch.randn(2, 3, 1, 1))


def test_grey_share_of_grey_colour_and_random_tiles():
    from vit_edu.explain.filters import grey_share

    pattern = torch.randn(1, 1, 8, 8)
    grey = pattern.expand(1, 3, 8, 8)
    contrast = torch.cat([pattern, -pattern, torch.zeros_like(pattern)], dim=1)
    noise = torch.randn(500, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    assert abs(grey_share(grey).item() - 1) < 1e-6
    assert grey_share(contrast).item() < 1e-6
    assert abs(grey_share(noise).mean().item() - 1 / 3) < 0.02
