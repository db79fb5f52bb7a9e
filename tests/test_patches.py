import pytest
import torch
from torch import nn

from vit_edu import patchify, patchify_without_permute, toy_image, unpatchify

METHODS = ["permute", "unfold", "einops"]


def test_toy_image_holds_1_to_16_row_by_row():
    image = toy_image()
    assert image.shape == (1, 1, 4, 4)
    assert image[0, 0, 0].tolist() == [1, 2, 3, 4]
    assert image[0, 0, 3].tolist() == [13, 14, 15, 16]


@pytest.mark.parametrize("method", METHODS)
def test_toy_tokens_are_the_four_2x2_squares(method):
    tokens = patchify(toy_image(), 2, method=method)
    assert tokens[0].tolist() == [[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]]


def test_without_permute_cuts_rows_instead():
    tokens = patchify_without_permute(toy_image(), 2)
    assert tokens.shape == (1, 4, 4)
    assert tokens[0, 0].tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("shape,p", [((2, 3, 32, 48), 16), ((1, 2, 12, 8), 4), ((3, 1, 6, 6), 3), ((1, 3, 8, 8), 8)])
def test_three_methods_bit_identical_including_non_square(shape, p):
    x = torch.randn(shape)
    ref = patchify(x, p, method="permute")
    b, c, h, w = shape
    assert ref.shape == (b, (h // p) * (w // p), c * p * p)
    for method in METHODS[1:]:
        assert torch.equal(patchify(x, p, method=method), ref)


def test_token_order_is_row_major_and_c_ph_pw_inside():
    # Each pixel stores its own (c, y, x) as c*10000 + y*100 + x, so positions can be read back.
    c, h, w, p = 2, 4, 6, 2
    cc, yy, xx = torch.meshgrid(torch.arange(c), torch.arange(h), torch.arange(w), indexing="ij")
    x = (cc * 10000 + yy * 100 + xx).float()[None]
    tokens = patchify(x, p)[0]  # (N, C·P·P)
    # token 4 is grid row 1, column 1 (grid width 3): top-left pixel (y=2, x=2)
    assert tokens[4, 0].item() == 0 * 10000 + 2 * 100 + 2
    # inside a token: channel slowest, then row, then column
    assert tokens[0].tolist() == [0, 1, 100, 101, 10000, 10001, 10100, 10101]


def test_patchify_then_linear_equals_conv2d():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 5, kernel_size=4, stride=4)
    x = torch.randn(2, 3, 8, 12)
    expected = conv(x).flatten(2).transpose(1, 2)  # (B, N, D)
    got = patchify(x, 4) @ conv.weight.flatten(1).T + conv.bias
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("shape,p", [((2, 3, 32, 48), 16), ((1, 1, 4, 4), 2), ((2, 2, 6, 9), 3)])
def test_unpatchify_round_trips(shape, p):
    x = torch.randn(shape)
    back = unpatchify(patchify(x, p), p, shape[2:], shape[1])
    assert torch.equal(back, x)


def test_errors_name_the_sizes():
    with pytest.raises(ValueError, match="image height 30 is not divisible by patch size 16"):
        patchify(torch.zeros(1, 3, 30, 32), 16)
    with pytest.raises(ValueError, match="image width 33 is not divisible by patch size 16"):
        patchify(torch.zeros(1, 3, 32, 33), 16)
    with pytest.raises(ValueError, match=r"4 dimensions .*got 3"):
        patchify(torch.zeros(3, 32, 32), 16)
    with pytest.raises(ValueError, match="method must be"):
        patchify(torch.zeros(1, 3, 32, 32), 16, method="reshape")
    with pytest.raises(ValueError, match="patch size must be a positive integer"):
        patchify(torch.zeros(1, 3, 32, 32), 0)
    with pytest.raises(ValueError, match="image height 5 is not divisible"):
        patchify_without_permute(torch.zeros(1, 1, 5, 4), 2)


def test_unpatchify_errors_name_the_sizes():
    tokens = torch.zeros(1, 4, 12)
    with pytest.raises(ValueError, match="got 4 tokens but a 8×4 image"):
        unpatchify(tokens, 2, (8, 4), 3)
    with pytest.raises(ValueError, match=r"token length 12 does not match channels·P·P = 1·2·2 = 4"):
        unpatchify(tokens, 2, (4, 4), 1)
