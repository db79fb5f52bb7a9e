import math

import pytest
import torch
from scipy.stats import spearmanr

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.explain.similarity import attention_vs_pixel_similarity, central_patches, spearman_rows
from vit_edu.patches import patchify


@pytest.fixture
def model():
    torch.manual_seed(0)
    cfg = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32,
                    input_norm=(0.5, 0.25))
    return VisionTransformer(cfg).eval()


@pytest.fixture
def images():
    return torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def test_spearman_rows_matches_scipy_with_ties():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(0, 4, (5, 9), generator=g).float()  # many ties
    b = torch.randn(5, 9, generator=g)
    rho = spearman_rows(a, b)
    for i in range(5):
        assert rho[i].item() == pytest.approx(spearmanr(a[i], b[i]).statistic, abs=1e-6)


def test_spearman_rows_same_reversed_and_constant():
    x = torch.tensor([[0.1, 0.5, 0.3, 0.9]])
    assert spearman_rows(x, 2 * x + 1).item() == pytest.approx(1.0)
    assert spearman_rows(x, -x).item() == pytest.approx(-1.0)
    assert math.isnan(spearman_rows(x, torch.ones_like(x)).item())  # no order to compare
    with pytest.raises(ValueError, match=r"\(1, 4\) and \(1, 3\)"):
        spearman_rows(x, x[:, :3])


def test_central_patches():
    assert central_patches((4, 4)) == [5, 6, 9, 10]
    assert central_patches((3, 3)) == [4]
    assert central_patches((2, 3)) == [1, 4]
    with pytest.raises(ValueError, match=r"\(0, 4\)"):
        central_patches((0, 4))


def test_shapes_and_central_default(model, images):
    rho = attention_vs_pixel_similarity(model, images)
    assert rho["learned"].shape == (3, 4, 2)  # (B, Q, h): 4 central patches of a 4×4 grid, 2 heads
    assert rho["identity, tokens"].shape == rho["identity, pixels"].shape == (3, 4)
    assert all(bool(((r >= -1 - 1e-6) & (r <= 1 + 1e-6)).all()) for r in rho.values())


def test_identity_projections_make_the_learned_row_the_token_row(model, images):
    # One head with W_Q = W_K = I and no bias: the layer's own attention is softmax(z zᵀ/√D) of its input tokens.
    cfg = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=1, mlp_dim=32,
                    input_norm=(0.5, 0.25))
    torch.manual_seed(0)
    one_head = VisionTransformer(cfg).eval()
    qkv = one_head.blocks[0].attn.qkv
    with torch.no_grad():
        qkv.weight[:32] = torch.cat([torch.eye(16), torch.eye(16)])
        qkv.bias[:32] = 0
    rho = attention_vs_pixel_similarity(one_head, images, queries=[0, 7])
    torch.testing.assert_close(rho["learned"][..., 0], rho["identity, tokens"])


def test_pixel_row_is_spearman_of_dot_products_and_cosines(model, images):
    rho = attention_vs_pixel_similarity(model, images, queries=[6])
    p = patchify((images - 0.5) / 0.25, 4)[0]  # (16, 48): image 0, standardised as the model sees it
    others = [j for j in range(16) if j != 6]
    dots, cosines = p[others] @ p[6], torch.nn.functional.cosine_similarity(p[others], p[6][None], dim=1)
    assert rho["identity, pixels"][0, 0].item() == pytest.approx(spearmanr(dots, cosines).statistic, abs=1e-5)


@pytest.mark.parametrize("queries, named", [([16], "16"), ([-1], "-1"), ([], r"\[\]"), ([True], "True")])
def test_bad_queries_raise_naming_them(model, images, queries, named):
    with pytest.raises(ValueError, match=named):
        attention_vs_pixel_similarity(model, images, queries=queries)


def test_images_of_another_size_raise_naming_the_shape(model):
    with pytest.raises(ValueError, match=r"\(2, 3, 32, 32\)"):
        attention_vs_pixel_similarity(model, torch.rand(2, 3, 32, 32))
