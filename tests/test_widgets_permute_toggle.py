"""The permute toggle over every token and both modes: what each token really holds, measured."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from vit_edu.book.plotting import to_hwc
from vit_edu.widgets.permute_toggle import (
    CONTROLS,
    SITE_CONTROLS,
    describe_sources,
    permute_toggle_view,
    photo,
    token_sources,
    token_tile,
    true_patch,
)

TOKENS = CONTROLS["token"]


def _patch_pixels(token):
    row, col = divmod(token, 14)
    return photo()[0, :, 16 * row : 16 * row + 16, 16 * col : 16 * col + 16]


def test_controls_cover_all_196_tokens_and_both_modes():
    assert TOKENS == list(range(196))
    assert CONTROLS["permute"] == ["with permute", "without permute"]
    assert {0, 1, 14} <= set(SITE_CONTROLS["token"]) <= set(TOKENS)
    assert len(SITE_CONTROLS["token"]) * len(SITE_CONTROLS["permute"]) <= 60


def _check_frame(token, permute):
    fig, caption = permute_toggle_view(token=token, permute=permute)
    try:
        assert len(fig.axes) == 3
        drawn_tile = np.asarray(fig.axes[1].images[0].get_array())
        drawn_truth = np.asarray(fig.axes[2].images[0].get_array())
        truth = _patch_pixels(token)  # computed here, independently of the module
        np.testing.assert_array_equal(drawn_truth, to_hwc(truth))
        if permute == "with permute":
            np.testing.assert_array_equal(drawn_tile, to_hwc(truth))
            assert "<b>match</b>" in caption and "all 768 numbers in place" in caption
            assert "red, green and blue channels" in caption and "touching 1 patch" in caption
            assert f"image rows {16 * (token // 14)}–{16 * (token // 14) + 15} in each" in caption
        else:
            # Without permute, token t is simply the t-th run of 768 numbers in memory.
            memory = photo().flatten()[768 * token : 768 * (token + 1)].reshape(3, 16, 16)
            np.testing.assert_array_equal(drawn_tile, to_hwc(memory))
            assert not torch.equal(memory, truth)
            assert "<b>no match</b>" in caption
        assert caption.startswith(f"Token {token}, {permute}:")
        row, col = divmod(token, 14)
        assert f"grid row {row}, column {col}" in caption
    finally:
        plt.close(fig)


def test_view_over_every_token_without_permute():
    # The product of both controls is 392 figures; the view is swept over every token in the mode whose
    # caption varies most, and over every mode on the site's tokens. The data behind every combination is
    # checked in full, without figures, by test_every_combination_of_the_data below.
    for token in TOKENS:
        _check_frame(token, "without permute")


@pytest.mark.parametrize("permute", CONTROLS["permute"])
def test_view_in_both_modes_on_the_site_tokens(permute):
    for token in SITE_CONTROLS["token"]:
        _check_frame(token, permute)


def test_every_combination_of_the_data():
    flat = photo().flatten()
    for token in TOKENS:
        truth = _patch_pixels(token)
        assert torch.equal(token_tile(token, "with permute"), truth)
        assert torch.equal(true_patch(token), truth)
        memory = flat[768 * token : 768 * (token + 1)].reshape(3, 16, 16)
        assert torch.equal(token_tile(token, "without permute"), memory)
        assert not torch.equal(memory, truth)
        assert describe_sources(token, "with permute")["in_place"] == 768
        assert describe_sources(token, "without permute")["in_place"] < 768


def test_token_0_without_permute_is_top_rows_red_only():
    facts = describe_sources(0, "without permute")
    assert facts["channels"] == ["red"]
    assert facts["counts"] == {"red": 768}
    assert facts["rows"] == {"red": (0, 3)}  # 768 = 3·224 + 96: rows 0–2 whole, 96 pixels of row 3
    assert facts["patches"] == list(range(14))  # a stripe from each patch of the top grid row
    assert facts["in_place"] == 16  # only the first pixel row of the first patch lands where it belongs
    src = token_sources(0, "without permute")
    assert src[:, 1].max() < 16 // 2  # nothing from the lower half of any patch
    assert not torch.equal(token_tile(0, "without permute"), true_patch(0))


def _rows_per_channel_from_memory(token):
    """Without permute, token t is memory offsets 768·t … 768·t + 767: decode them here, independently."""
    offsets = torch.arange(768 * token, 768 * (token + 1))
    channel, y = offsets // (224 * 224), offsets % (224 * 224) // 224
    names = ("red", "green", "blue")
    rows = {names[c]: (int(y[channel == c].min()), int(y[channel == c].max())) for c in channel.unique().tolist()}
    counts = {names[c]: int((channel == c).sum()) for c in channel.unique().tolist()}
    return rows, counts


def test_rows_are_reported_per_channel_for_every_token_without_permute():
    for token in TOKENS:
        rows, counts = _rows_per_channel_from_memory(token)
        facts = describe_sources(token, "without permute")
        assert facts["rows"] == rows and facts["counts"] == counts
        assert sum(facts["counts"].values()) == 768


def test_token_65_spans_the_end_of_red_and_the_start_of_green():
    # 65·768 = 49,920: the last 256 red numbers (rows 222–223), then the first 512 green ones (rows 0–2).
    facts = describe_sources(65, "without permute")
    assert facts["channels"] == ["red", "green"]
    assert facts["counts"] == {"red": 256, "green": 512}
    assert facts["rows"] == {"red": (222, 223), "green": (0, 2)}
    fig, caption = permute_toggle_view(token=65, permute="without permute")
    plt.close(fig)
    assert "the red channel (256 numbers, image rows 222–223)" in caption
    assert "the green channel (512 numbers, image rows 0–2)" in caption
    assert "0–223" not in caption  # not one min–max range that suggests the whole image height


def test_with_permute_rows_are_the_patch_rows_in_every_channel():
    for token in (0, 65, 195):
        facts = describe_sources(token, "with permute")
        row = token // 14
        assert facts["rows"] == {name: (16 * row, 16 * row + 15) for name in ("red", "green", "blue")}
        assert facts["counts"] == {"red": 256, "green": 256, "blue": 256}


def test_sources_with_permute_are_the_patch_itself():
    for token in (0, 1, 14, 195):
        row, col = divmod(token, 14)
        src = token_sources(token, "with permute").reshape(3, 16, 16, 3)
        assert torch.equal(src[..., 0], torch.arange(3)[:, None, None].expand(3, 16, 16))
        assert torch.equal(src[..., 1], (16 * row + torch.arange(16))[None, :, None].expand(3, 16, 16))
        assert torch.equal(src[..., 2], (16 * col + torch.arange(16))[None, None, :].expand(3, 16, 16))


def test_bad_inputs_explain_themselves():
    fig, caption = permute_toggle_view(token=196, permute="with permute")
    plt.close(fig)
    assert "does not exist" in caption
    with pytest.raises(ValueError, match="permute must be one of"):
        permute_toggle_view(token=0, permute="sideways")


def test_site_player_does_not_give_away_exercise_3():
    # Exercise 3 asks which tokens mix two channels without the permute; the site must not list them.
    mixed = {t for t in TOKENS if len(describe_sources(t, "without permute")["channels"]) > 1}
    assert mixed == {65, 130}
    assert not mixed & set(SITE_CONTROLS["token"])
