import pytest
import torch
from torchvision.models.vision_transformer import interpolate_embeddings

from vit_edu import interpolate_pos_embed, sincos_2d


def test_sincos_rows_encode_row_and_column():
    table = sincos_2d((3, 4), 16)
    assert table.shape == (12, 16)
    # patches in the same grid row share the first half, same column the second half
    torch.testing.assert_close(table[0, :8], table[3, :8])
    torch.testing.assert_close(table[0, 8:], table[4, 8:])
    assert not torch.allclose(table[0, :8], table[4, :8])
    with pytest.raises(ValueError, match="divisible by 4, got 18"):
        sincos_2d(3, 18)


@pytest.mark.parametrize("old,new", [(14, 24), (14, 7), (4, 6)])
def test_interpolation_equals_torchvision(old, new):
    torch.manual_seed(0)
    dim, patch = 16, 16
    pos = torch.randn(1, old * old + 1, dim)
    state = {"encoder.pos_embedding": pos}
    expected = interpolate_embeddings(new * patch, patch, state)["encoder.pos_embedding"]
    got = interpolate_pos_embed(pos, new)
    assert got.shape == (1, new * new + 1, dim)
    torch.testing.assert_close(got, expected)
    assert torch.equal(got[:, 0], pos[:, 0])  # CLS untouched


def test_unchanged_grid_is_identity_and_non_square_grids_work():
    pos = torch.randn(1, 1 + 12, 8)
    assert torch.equal(interpolate_pos_embed(pos, (3, 4), old_grid=(3, 4)), pos)
    out = interpolate_pos_embed(pos, (6, 8), old_grid=(3, 4))
    assert out.shape == (1, 49, 8)
    no_prefix = interpolate_pos_embed(torch.randn(1, 16, 8), 8, num_prefix_tokens=0)
    assert no_prefix.shape == (1, 64, 8)


def test_bad_inputs_name_the_sizes():
    with pytest.raises(ValueError, match="13 rows = 1 prefix \\+ 12 patches, which is not a square grid"):
        interpolate_pos_embed(torch.randn(1, 13, 8), 6)
    with pytest.raises(ValueError, match="old_grid 3×3 = 9 patches, but pos_embed has 13 rows"):
        interpolate_pos_embed(torch.randn(1, 13, 8), 6, old_grid=3)
    with pytest.raises(ValueError, match="batch size 1"):
        interpolate_pos_embed(torch.randn(2, 17, 8), 6)
    with pytest.raises(ValueError, match=r"3 dimensions"):
        interpolate_pos_embed(torch.randn(17, 8), 6)


def test_nearest_mode_needs_no_align_corners():
    table = torch.arange(1 + 4, dtype=torch.float32).reshape(1, 5, 1)
    out = interpolate_pos_embed(table, 4, mode="nearest")
    assert out.shape == (1, 17, 1)
    torch.testing.assert_close(out[0, 1:, 0].reshape(4, 4)[:2, :2], torch.full((2, 2), 1.0))
