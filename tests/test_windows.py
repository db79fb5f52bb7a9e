"""vit_edu.variants.windows: window attention is global attention under a mask, and Swin's pieces match torchvision.

Also the helpers of vit_edu.variants.attention_cost and the shipped cost measurement that chapter 14 reads.
"""

import itertools
import json
import math

import pytest
import torch
import torchvision.models.swin_transformer as tv_swin

from vit_edu import MultiHeadSelfAttention
from vit_edu.training import CHECKPOINTS
from vit_edu.variants import (
    PatchMerging,
    SwinBlock,
    SwinBlockConfig,
    WindowAttention,
    cyclic_shift,
    global_window_mask,
    masked_self_attention,
    merge_neighbours,
    receptive_field,
    region_labels,
    shifted_window_mask,
    window_groups,
    window_partition,
    window_reverse,
)
from vit_edu.variants import attention_cost

GRIDS = [(8, 8, 4), (8, 12, 4), (6, 9, 3), (4, 4, 2), (16, 8, 8)]  # (H, W, M)


def reference_global_attention(attn, x, allowed):
    """Plain global attention written out here, (B, N, D) with an (N, N) boolean mask: the test's own reference."""
    b, n, d = x.shape
    h = attn.num_heads
    q, k, v = attn.qkv(x).chunk(3, dim=-1)  # each (B, N, D): Q, then K, then V, heads side by side
    q, k, v = (t.reshape(b, n, h, d // h).transpose(1, 2) for t in (q, k, v))  # (B, h, N, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = scores.softmax(dim=-1) @ v  # (B, h, N, d)
    return attn.proj(out.transpose(1, 2).reshape(b, n, d))


def block_mask(height, width, m):
    """(N, N): True where two tokens lie in the same M×M window of the unshifted grid (block-diagonal by window)."""
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    block = ((rows // m) * (width // m) + cols // m).flatten()
    return block[:, None] == block[None, :]


def swin_mask_on_rolled_grid(height, width, m, s):
    """(N, N) on the ROLLED grid, written from the paper's description: same window, and same region label,
    where along each axis positions < size-M, < size-s and the rest are three different regions."""
    def span(p, size):
        return 0 if p < size - m else 1 if p < size - s else 2

    keys = torch.tensor([((r // m) * (width // m) + c // m, span(r, height), span(c, width))
                         for r in range(height) for c in range(width)])
    return (keys[:, None, :] == keys[None, :, :]).all(dim=-1)


# ---------------------------------------------------------------- partition and reverse

@pytest.mark.parametrize(("height", "width", "m"), GRIDS)
def test_partition_then_reverse_is_the_identity(height, width, m):
    x = torch.randn(2, height, width, 5)
    windows = window_partition(x, m)
    assert windows.shape == (2 * (height // m) * (width // m), m * m, 5)
    assert torch.equal(window_reverse(windows, m, height, width), x)
    assert torch.equal(window_partition(window_reverse(windows, m, height, width), m), windows)


def test_partition_layout_windows_row_by_row_tokens_in_raster_order():
    x = torch.arange(4 * 6).reshape(1, 4, 6, 1)  # token value = its raster index
    windows = window_partition(x, 2)[..., 0]  # (6, 4)
    assert windows[0].tolist() == [0, 1, 6, 7]  # top-left window
    assert windows[1].tolist() == [2, 3, 8, 9]  # its right neighbour
    assert windows[3].tolist() == [12, 13, 18, 19]  # first window of the second window row
    assert torch.equal(window_partition(torch.arange(8).reshape(2, 2, 2, 1), 2)[:, :, 0],
                       torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]]))  # batches stay apart, image 0 first


def test_cyclic_shift_and_its_undo():
    x = torch.arange(16).reshape(1, 4, 4, 1)
    rolled = cyclic_shift(x, 1)
    assert rolled[0, 0, 0, 0] == 5  # token (1, 1) moved to the top-left corner
    assert rolled[0, 3, 3, 0] == 0  # token (0, 0) wrapped around to the bottom-right
    assert torch.equal(cyclic_shift(rolled, 1, undo=True), x)


def test_region_labels_follow_the_paper():
    labels = region_labels(8, 8, 4, 2)
    assert labels.unique().tolist() == list(range(9))
    assert labels[:4, :4].unique().tolist() == [0]  # the windows that never wrapped are one region
    assert labels[4:6, 4:6].unique().tolist() == [4] and labels[6:, 6:].unique().tolist() == [8]
    assert labels[6:, :4].unique().tolist() == [6]  # rows that came from the top, columns that did not wrap
    assert torch.equal(region_labels(8, 8, 4, 0), torch.zeros(8, 8, dtype=torch.long))
    mask = shifted_window_mask(8, 8, 4, 2)  # (4, 16, 16)
    assert mask.shape == (4, 16, 16) and bool(mask[0].all())  # the top-left window: nothing wrapped
    assert int(mask[3].sum()) == 4 * 4**2  # the bottom-right window: four regions of 4 tokens each


# ---------------------------------------------------------------- window attention = masked global attention

@pytest.mark.parametrize(("height", "width", "m"), GRIDS)
def test_window_attention_equals_global_attention_under_a_block_diagonal_mask(height, width, m):
    torch.manual_seed(0)
    layer = WindowAttention(16, 4, m).eval()
    x = torch.randn(2, height, width, 16)
    with torch.no_grad():
        windowed, _ = layer(x)
        reference = reference_global_attention(layer.attn, x.reshape(2, -1, 16), block_mask(height, width, m))
        via_package = masked_self_attention(layer.attn, x.reshape(2, -1, 16), global_window_mask(height, width, m))[0]
    torch.testing.assert_close(windowed.reshape(2, -1, 16), reference)
    torch.testing.assert_close(via_package, reference)
    assert torch.equal(global_window_mask(height, width, m), block_mask(height, width, m))


@pytest.mark.parametrize(("height", "width", "m"), [g for g in GRIDS if g[2] > 1])
def test_shifted_window_attention_equals_global_attention_on_the_rolled_grid(height, width, m):
    s = m // 2
    torch.manual_seed(1)
    layer = WindowAttention(16, 4, m, s).eval()
    x = torch.randn(2, height, width, 16)
    with torch.no_grad():
        shifted, _ = layer(x)
        rolled = cyclic_shift(x, s).reshape(2, -1, 16)
        out = reference_global_attention(layer.attn, rolled, swin_mask_on_rolled_grid(height, width, m, s))
    torch.testing.assert_close(shifted, cyclic_shift(out.reshape(2, height, width, 16), s, undo=True))


@pytest.mark.parametrize(("height", "width", "m"), [g for g in GRIDS if g[2] > 1])
def test_shifted_windows_on_the_image_are_a_grid_moved_by_m_minus_s(height, width, m):
    """Back on the original grid, the shifted windows are the windows of a grid offset by M - s, cut at the border."""
    s = m // 2
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    offset = (((rows + m - s) // m) * (width // m + 1) + (cols + m - s) // m).flatten()
    assert torch.equal(global_window_mask(height, width, m, s), offset[:, None] == offset[None, :])
    groups = window_groups(height, width, m, s)
    assert groups.unique().numel() == (height // m + 1) * (width // m + 1)


def test_shifted_layer_equals_masked_global_attention_with_the_package_mask():
    torch.manual_seed(2)
    layer = WindowAttention(16, 2, 4, 2).eval()
    x = torch.randn(1, 8, 12, 16)
    with torch.no_grad():
        out = masked_self_attention(layer.attn, x.reshape(1, -1, 16), global_window_mask(8, 12, 4, 2))[0]
        torch.testing.assert_close(layer(x)[0].reshape(1, -1, 16), out)


@pytest.mark.parametrize("shift", [0, 2])
def test_explicit_path_equals_fast_path_and_masked_weights_are_zero(shift):
    torch.manual_seed(0)
    layer = WindowAttention(16, 4, 4, shift).eval()
    x = torch.randn(2, 8, 8, 16)
    with torch.no_grad():
        fast, none = layer(x)
        explicit, weights = layer(x, need_weights=True)
    assert none is None and weights.shape == (2 * 4, 4, 16, 16)
    torch.testing.assert_close(explicit, fast)
    torch.testing.assert_close(weights.sum(-1), torch.ones(8, 4, 16))
    allowed = shifted_window_mask(8, 8, 4, shift).repeat(2, 1, 1)[:, None].expand_as(weights) if shift else None
    if allowed is not None:
        assert bool((weights[~allowed] == 0).all()) and bool((weights[allowed] > 0).all())


def test_masked_attention_without_mask_is_the_vit_layer():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(24, 3).eval()
    x = torch.randn(3, 10, 24)
    with torch.no_grad():
        torch.testing.assert_close(masked_self_attention(attn, x)[0], attn(x)[0])
        torch.testing.assert_close(masked_self_attention(attn, x, need_weights=True)[1], attn(x, need_weights=True)[1])


# ---------------------------------------------------------------- against torchvision's Swin

@pytest.mark.parametrize(("shape", "m", "shift"),
                         [((2, 8, 8, 32), 4, 0), ((2, 8, 8, 32), 4, 2), ((1, 12, 6, 32), 3, 1)])
def test_window_attention_matches_torchvision_with_zero_position_bias(shape, m, shift):
    torch.manual_seed(0)
    layer = WindowAttention(32, 4, m, shift).eval()
    x = torch.randn(shape)
    with torch.no_grad():
        expected = tv_swin.shifted_window_attention(
            x, layer.attn.qkv.weight, layer.attn.proj.weight, torch.zeros(4, m * m, m * m), [m, m], 4,
            [shift, shift], qkv_bias=layer.attn.qkv.bias, proj_bias=layer.attn.proj.bias, training=False)
        torch.testing.assert_close(layer(x)[0], expected)


@pytest.mark.parametrize("shift", [0, 2])
def test_swin_block_matches_torchvision_block_with_zeroed_bias_table(shift):
    torch.manual_seed(0)
    ours = SwinBlock(SwinBlockConfig(dim=32, num_heads=4, window_size=4, shift=shift)).eval()
    theirs = tv_swin.SwinTransformerBlock(32, 4, [4, 4], [shift, shift]).eval()
    with torch.no_grad():
        theirs.attn.relative_position_bias_table.zero_()
        for name in ("norm1", "norm2"):
            getattr(theirs, name).load_state_dict(getattr(ours, name).state_dict())
        theirs.attn.qkv.load_state_dict(ours.attn.attn.qkv.state_dict())
        theirs.attn.proj.load_state_dict(ours.attn.attn.proj.state_dict())
        theirs.mlp[0].load_state_dict(ours.mlp.fc1.state_dict())
        theirs.mlp[3].load_state_dict(ours.mlp.fc2.state_dict())
        x = torch.randn(2, 8, 8, 32)
        torch.testing.assert_close(ours(x), theirs(x))


# ---------------------------------------------------------------- patch merging

def test_patch_merging_shapes_and_torchvision():
    torch.manual_seed(0)
    ours = PatchMerging(6)
    x = torch.randn(2, 8, 4, 6)
    assert merge_neighbours(x).shape == (2, 4, 2, 24)
    assert ours(x).shape == (2, 4, 2, 12)
    theirs = tv_swin.PatchMerging(6)
    theirs.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(x), theirs(x))
    assert sum(p.numel() for p in ours.parameters()) == 2 * 24 + 24 * 12  # LayerNorm(4C) + Linear(4C, 2C), no bias


def test_patch_merging_hand_checked_example():
    # A 2×4 grid, one channel, values 1…8 row by row:    1 2 3 4
    #                                                     5 6 7 8
    x = torch.arange(1.0, 9.0).reshape(1, 2, 4, 1)
    merged = merge_neighbours(x)  # (1, 1, 2, 4): two groups, each (top-left, bottom-left, top-right, bottom-right)
    assert merged.shape == (1, 1, 2, 4)
    assert merged[0, 0].tolist() == [[1.0, 5.0, 2.0, 6.0], [3.0, 7.0, 4.0, 8.0]]


# ---------------------------------------------------------------- receptive field through the layers

def test_receptive_field_grows_only_with_the_shift():
    for m in (2, 4):
        still = receptive_field(8, 8, m, 5, 3, 2, shifted=False).sum(dim=(1, 2))
        assert still.tolist() == [m * m] * 5  # never shifted: the window is all a token ever sees
        grows = receptive_field(8, 8, m, 5, 3, 2).sum(dim=(1, 2)).tolist()
        assert grows == sorted(grows) and grows[-1] == 64 and grows[0] == m * m
    assert receptive_field(8, 8, 2, 4, 3, 2).sum(dim=(1, 2)).tolist() == [4, 16, 36, 48]
    assert receptive_field(8, 8, 4, 3, 0, 0).sum(dim=(1, 2)).tolist() == [16, 16, 64]  # a corner waits a layer
    assert receptive_field(8, 8, 8, 1, 5, 5).all()  # one window = the grid: global after one layer


def test_receptive_field_is_the_product_of_the_layer_masks():
    masks = [global_window_mask(8, 8, 2, s).float() for s in (0, 1, 0)]
    product = masks[2] @ masks[1] @ masks[0]  # the last layer first, as seen from the output token
    for token in (0, 19, 63):
        field = receptive_field(8, 8, 2, 3, token // 8, token % 8)[-1]
        assert torch.equal(field.flatten(), product[token] > 0)


# ---------------------------------------------------------------- errors name the offending values

@pytest.mark.parametrize(("call", "message"), [
    (lambda: window_partition(torch.zeros(1, 14, 14, 3), 8), "token grid height 14 is not divisible by window size 8"),
    (lambda: window_partition(torch.zeros(1, 16, 12, 3), 8), "token grid width 12 is not divisible by window size 8"),
    (lambda: window_partition(torch.zeros(14, 14, 3), 7), "x must have 4 dimensions"),
    (lambda: window_partition(torch.zeros(1, 8, 8, 3), 0), "window size must be a positive integer, got 0"),
    (lambda: window_reverse(torch.zeros(3, 16, 2), 4, 8, 8), "do not tile a 8×8 grid with window size 4"),
    (lambda: WindowAttention(16, 4, 4, 4), "0 <= shift < window size 4, got 4"),
    (lambda: WindowAttention(16, 4, 4, -1), "got -1"),
    (lambda: WindowAttention(16, 4, 4)(torch.zeros(1, 6, 8, 16)), "height 6 is not divisible by window size 4"),
    (lambda: region_labels(8, 8, 4, 5), "0 <= shift < window size 4, got 5"),
    (lambda: cyclic_shift(torch.zeros(1, 4, 4, 1), -2), "shift must be a whole number >= 0, got -2"),
    (lambda: merge_neighbours(torch.zeros(1, 7, 8, 3)), "even token grid, got 7×8"),
    (lambda: PatchMerging(4)(torch.zeros(1, 4, 4, 6)), "token width 6 does not match PatchMerging's dim 4"),
    (lambda: SwinBlockConfig(dim=30, num_heads=4), "dim 30 is not divisible by num_heads 4"),
    (lambda: SwinBlockConfig(window_size=7, shift=7), "0 <= shift < window size 7, got 7"),
    (lambda: masked_self_attention(MultiHeadSelfAttention(8, 2), torch.zeros(2, 4, 8),
                                   torch.ones(3, 3, dtype=torch.bool)),
     "mask must be booleans of shape (4, 4)"),
    (lambda: masked_self_attention(MultiHeadSelfAttention(8, 2), torch.zeros(2, 4, 8),
                                   torch.zeros(4, 4, dtype=torch.bool)),
     "a mask row is all False"),
    (lambda: receptive_field(8, 8, 2, 3, 8, 0), "token (row 8, column 0) is outside the 8×8 grid"),
    (lambda: receptive_field(8, 8, 2, 0, 0, 0), "layers must be a positive integer, got 0"),
    (lambda: receptive_field(8, 8, 2, 2, 1.5, 0), "token (row 1.5, column 0) is outside the 8×8 grid"),
])
def test_bad_inputs_raise_and_name_the_values(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


# ---------------------------------------------------------------- the cost measurement

def test_fit_exponent_recovers_a_power_law_and_checks_its_input():
    ns = [196, 1024, 4096]
    assert attention_cost.fit_exponent(ns, [3.0 * n**2 for n in ns]) == pytest.approx(2.0)
    assert attention_cost.fit_exponent(ns, [0.5 * n for n in ns]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two positive"):
        attention_cost.fit_exponent([196], [1.0])


def test_profiled_peak_sees_a_tensor_that_tracemalloc_would_miss():
    def make():
        a = torch.ones(1 << 18)  # 1 MiB of float32
        b = a * 2  # another MiB while a is alive
        return float(b.sum())

    peak = attention_cost.profiled_peak_bytes(make)
    assert 2 * 2**20 <= peak < 3 * 2**20


def test_explicit_peak_holds_two_sets_of_nxn_weights():
    calls = attention_cost.layer_calls(256, dim=64, heads=4, window=8)
    assert set(calls) == set(attention_cost.METHODS)
    assert set(attention_cost.layer_calls(224, dim=64, heads=4)) == {"explicit", "sdpa"}  # 14×14: 8 does not divide
    with torch.no_grad():
        explicit = attention_cost.profiled_peak_bytes(calls["explicit"])
        fast = attention_cost.profiled_peak_bytes(calls["sdpa"])
    nxn = 4 * 256**2 * 4  # heads · N² · 4 bytes
    assert 2 * nxn <= explicit < 2 * nxn + 1.5 * 2**20  # scores and weights, plus the (N, D) tensors
    assert fast < nxn


def test_shipped_cost_measurement_has_what_the_chapter_reads():
    data = json.loads((CHECKPOINTS / "attention_cost.json").read_text())
    s = data["setting"]
    assert (s["patch_size"], s["dim"], s["heads"], s["window"], s["threads"]) == (16, 768, 12, 8, 1)
    assert "thread" in s["timing"] and "profiler" in s["memory"] and s["large_n"] == 1024
    assert {"torch", "cpu_capability"} <= set(data["machine"]) and "4096" in data["nxn_bytes"]
    assert set(data["runs"]) == set(attention_cost.METHODS) == set(data["exponents"])
    for name, runs in data["runs"].items():
        sizes = [r["image_size"] for r in runs]
        assert sizes == sorted(sizes) and sizes[-1] == 1024 and runs[-1]["num_tokens"] == 4096
        assert sizes[0] == (224 if name in ("explicit", "sdpa") else 256)
        assert all(r["seconds"] > 0 and r["peak_bytes"] > 0 for r in runs)
        assert all(r["num_tokens"] == (r["image_size"] // 16) ** 2 for r in runs)
        fits = itertools.product(("time", "memory"), ("all", "large"))
        assert set(data["exponents"][name]) == {f"{what}_{span}" for what, span in fits}
    for row in data["runs"]["explicit"]:  # the explicit layer held at least two sets of N×N weights at once
        assert row["peak_bytes"] >= 2 * data["nxn_bytes"][str(row["num_tokens"])]
    assert data["exponents"]["explicit"]["memory_large"] > 1.8
    assert data["exponents"]["sdpa"]["memory_large"] < 1.2 and data["exponents"]["window"]["time_large"] < 1.3
