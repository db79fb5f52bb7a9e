"""The patch explorer view over its whole control grid: right numbers, self-explaining bad sizes."""

import itertools

import matplotlib.pyplot as plt
import pytest

from tests.conftest import site_frame_count
from vit_edu.widgets.frames import frame_player
from vit_edu.widgets.patch_explorer import CONTROLS, SITE_CONTROLS, patch_explorer_view, patch_numbers

GRID = list(itertools.product(CONTROLS["image_size"], CONTROLS["patch_size"]))


@pytest.mark.parametrize("image_size,patch_size", GRID)
def test_caption_states_the_right_numbers(image_size, patch_size):
    fig, caption = patch_explorer_view(image_size=image_size, patch_size=patch_size)
    try:
        assert len(fig.axes) == 1
        grid = image_size // patch_size  # whole patches that fit along one side
        n = grid * grid
        s = n + 1
        assert f"N = {n:,} patch" in caption
        assert f"S = N + 1 = {s:,} tokens" in caption
        assert f"C·P·P = 3·{patch_size}·{patch_size} = {3 * patch_size * patch_size:,} numbers" in caption
        assert f"S² = {s * s:,} entries" in caption
        remainder = image_size % patch_size
        ax = fig.axes[0]
        if remainder:
            assert f"{image_size} is not divisible by {patch_size}" in caption
            assert f"{image_size} = {grid}·{patch_size} + {remainder}" in caption
            assert f"remainder of {remainder} pixel" in caption
            assert "vit_edu.patchify</code> refuses it" in caption
            assert f"Cropped to {grid * patch_size}×{grid * patch_size}" in caption
            assert len(ax.patches) == 2  # the right and bottom leftover strips are shaded
            assert "not divisible" in ax.get_title()
        else:
            assert "not divisible" not in caption
            assert len(ax.patches) == 0
            assert f"{grid}×{grid} patches" in ax.get_title()
    finally:
        plt.close(fig)


def test_numbers_match_the_book_examples():
    assert patch_numbers(224, 16) == {
        "grid": 14, "remainder": 0, "cropped": 224, "N": 196, "S": 197, "token_length": 768,
        "attention_entries": 38_809,
    }
    assert patch_numbers(224, 8)["attention_entries"] == patch_numbers(448, 16)["attention_entries"] == 616_225


def test_controls_include_sizes_that_do_not_divide():
    bad = [(s, p) for s, p in GRID if s % p]
    assert (224, 14) not in bad and (225, 16) in bad and (240, 32) in bad


def test_site_controls_are_a_subset_and_small():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 40


def test_no_whole_patch_explains_itself():
    fig, caption = patch_explorer_view(image_size=20, patch_size=32)
    plt.close(fig)
    assert "Not even one whole patch fits" in caption


def test_frame_player_builds_from_the_view():
    small = {"image_size": [64, 65], "patch_size": [16]}
    page = frame_player(patch_explorer_view, small, dpi=30).data
    assert '"sizes":[2,1]' in page  # one frame per image size
    assert "65 is not divisible by 16" in page  # the second frame's caption travels with it
