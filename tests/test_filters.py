import pytest
import torch

import vit_edu
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


def planted_images(n: int = 200, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(n, 3, 16, 16)`` images whose 8×8 patches are a random multiple of one grey ramp plus a little noise."""
    gen = torch.Generator().manual_seed(seed)
    ramp = torch.linspace(-0.5, 1, 8).view(1, 1, 8).expand(3, 8, 8)  # (3, 8, 8): the planted pattern, peak > 0
    coef = torch.randn(n, 1, 2, 2, generator=gen)  # one coefficient per patch of the 2×2 grid
    tiles = coef[:, :, :, None, :, None] * ramp.reshape(1, 3, 1, 8, 1, 8)  # (n, 3, 2, 8, 2, 8)
    images = tiles.reshape(n, 3, 16, 16) + 0.01 * torch.randn(n, 3, 16, 16, generator=gen)
    return images, ramp


def test_patch_components_recover_a_planted_pattern():
    from vit_edu.explain.filters import patch_components

    images, ramp = planted_images()
    comps, explained = patch_components(images, 8, 3)
    assert comps.shape == (3, 3, 8, 8) and explained.shape == (3,)
    assert explained[0] > 0.99 and (explained[:-1] >= explained[1:]).all()
    cos = torch.nn.functional.cosine_similarity(comps[0].flatten(), ramp.flatten(), dim=0)
    assert cos > 0.999  # sign fixed: the largest entry is positive, as in the ramp
    assert abs(grey_share_of(comps[:1]) - 1) < 1e-3


def grey_share_of(tiles: torch.Tensor) -> float:
    from vit_edu.explain.filters import grey_share

    return grey_share(tiles).mean().item()


def test_patch_components_agree_with_the_filter_pca_of_the_same_patches():
    from vit_edu.explain.filters import patch_components

    images = torch.rand(30, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    comps, explained = patch_components(images, 8, 4)
    as_filters = vit_edu.patchify(images, 8).reshape(-1, 3, 8, 8)  # the 120 patches as if they were filters
    comps2, explained2 = embedding_components(as_filters, 4)
    torch.testing.assert_close(explained, explained2, atol=1e-5, rtol=0)
    torch.testing.assert_close(comps, comps2, atol=1e-4, rtol=0)


def test_patch_components_bad_input_raises_naming_it():
    from vit_edu.explain.filters import patch_components

    with pytest.raises(ValueError, match="not divisible by patch size 5"):
        patch_components(torch.rand(2, 3, 16, 16), 5, 2)
    with pytest.raises(ValueError, match=r"min\(2, 12\) = 2, got 3"):
        patch_components(torch.rand(2, 3, 2, 2), 2, 3)
    with pytest.raises(ValueError, match="4 dimensions"):
        patch_components(torch.rand(3, 16, 16), 8, 2)


def test_subspace_share_is_one_inside_zero_outside_and_chance_at_random():
    from vit_edu.explain.filters import random_subspace_shares, subspace_energy_share

    w = smooth_filters()  # two planted patterns + noise
    comps, explained = embedding_components(w, 2)
    assert subspace_energy_share(w, comps) == pytest.approx(explained.sum().item(), abs=1e-5)
    assert subspace_energy_share(w, comps) > 0.99
    basis = torch.eye(192)[:8].reshape(8, 3, 8, 8)
    only_first = torch.zeros(10, 192)
    only_first[:, :8] = torch.randn(10, 8, generator=torch.Generator().manual_seed(0))
    assert subspace_energy_share(only_first.reshape(10, 3, 8, 8), basis) == pytest.approx(1.0)
    assert subspace_energy_share(only_first.reshape(10, 3, 8, 8), torch.eye(192)[8:16].reshape(8, 3, 8, 8)) == 0
    noise = torch.randn(128, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    shares = random_subspace_shares(noise, 8, n=50)
    assert shares.shape == (50,) and abs(shares.mean().item() - 8 / 192) < 0.01
    torch.testing.assert_close(shares, random_subspace_shares(noise, 8, n=50))  # same seed, same subspaces
    assert random_subspace_shares(w, 2, n=20).max() < 0.2  # random planes miss the planted ones


def test_subspace_share_bad_input_raises_naming_it():
    from vit_edu.explain.filters import random_subspace_shares, subspace_energy_share

    w = torch.randn(10, 3, 4, 4)
    with pytest.raises(ValueError, match=r"orthonormal.*up to 1"):
        subspace_energy_share(w, torch.ones(2, 3, 4, 4) / 48**0.5)
    with pytest.raises(ValueError, match=r"\(3, 2, 2\) do not match the filters \(3, 4, 4\)"):
        subspace_energy_share(w, torch.eye(12)[:2].reshape(2, 3, 2, 2))
    with pytest.raises(ValueError, match="no energy"):
        subspace_energy_share(torch.ones(10, 3, 4, 4), torch.eye(48)[:2].reshape(2, 3, 4, 4))
    with pytest.raises(ValueError, match="at most C·P·P = 48, got 49"):
        random_subspace_shares(w, 49)
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        random_subspace_shares(w, 2, n=0)
    with pytest.raises(ValueError, match="no energy"):
        random_subspace_shares(torch.ones(10, 3, 4, 4), 2)


def test_grey_energy_share_weights_directions_by_their_variance():
    from vit_edu.explain.filters import grey_energy_share

    gen = torch.Generator().manual_seed(0)
    pattern = torch.randn(1, 1, 4, 4, generator=gen)
    grey = torch.randn(400, 1, 1, 1, generator=gen) * pattern.expand(1, 3, 4, 4)  # grey variation only
    contrast = torch.cat([pattern, -pattern, torch.zeros_like(pattern)], dim=1)  # pure colour, grey share 0
    colour = torch.randn(400, 1, 1, 1, generator=gen) * contrast
    assert abs(grey_energy_share(grey) - 1) < 1e-6 and grey_energy_share(colour) < 1e-6
    # nine parts grey variance to one part colour: 0.9, whatever the count of directions of each kind
    mixed = 3 * grey / grey.flatten(1).norm(dim=1).mean() + colour / colour.flatten(1).norm(dim=1).mean()
    share = grey_energy_share(mixed)
    assert 0.85 < share < 0.95
    assert abs(grey_energy_share(grey + 5.0) - 1) < 1e-6  # a common offset is removed by the centring
    noise = torch.randn(2000, 3, 4, 4, generator=gen)
    assert abs(grey_energy_share(noise) - 1 / 3) < 0.02
    with pytest.raises(ValueError, match="the 5 tiles are all equal"):
        grey_energy_share(torch.ones(5, 3, 4, 4))


def test_random_subspace_shares_match_the_share_inside_each_subspace():
    from vit_edu.explain.filters import random_subspace_shares, subspace_energy_share

    w = torch.randn(20, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    shares = random_subspace_shares(w, 3, n=4, seed=7)
    gen = torch.Generator().manual_seed(7)
    bases, _ = torch.linalg.qr(torch.randn(4, 48, 3, generator=gen, dtype=torch.float64))  # the same draws
    for share, q in zip(shares, bases):
        assert share.item() == pytest.approx(subspace_energy_share(w, q.T.reshape(3, 3, 4, 4)), abs=1e-6)
