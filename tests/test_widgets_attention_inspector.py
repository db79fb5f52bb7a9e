"""The chapter 6 widget: every layer, head and query token; the drawn weights must be the model's."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.widgets import attention_inspector as ai
from vit_edu.widgets.attention_inspector import CONTROLS, SITE_CONTROLS, attention_inspector_view, attention_maps


def _check_frame(layer, head, query):
    fig, caption = attention_inspector_view(layer=layer, head=head, query=query)
    try:
        weights = attention_maps()[layer - 1, head]  # heads count from 0
        row = weights[query]
        assert len(fig.axes) == 2
        ax_img, ax_mat = fig.axes
        # Right: the full S×S matrix, every row a probability distribution.
        matrix = np.asarray(ax_mat.images[0].get_array())
        assert matrix.shape == (ai.SEQ_LEN, ai.SEQ_LEN)
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(matrix, weights.numpy())
        # Left: the photo, then the query's weights on the 6×6 patch grid (CLS weight left out).
        overlay = np.asarray(ax_img.images[1].get_array())
        assert overlay.shape == (ai.GRID, ai.GRID)
        np.testing.assert_allclose(overlay.ravel(), row[1:].numpy())
        assert overlay.sum() + float(row[0]) == pytest.approx(1.0, abs=1e-5)
        # Caption: names the setting, labels token 0 as CLS, states the real numbers.
        assert f"Layer {layer}, head {head}" in caption
        if query == 0:
            assert "query CLS (token 0)" in caption
        else:
            r, c = divmod(query - 1, ai.GRID)
            assert f"query patch token {query} (row {r}, column {c})" in caption
        assert "sums to 1.0000" in caption
        assert f"weight on CLS is {float(row[0]):.4f}" in caption
        assert re.search(r"<b>([0-9.]+)</b>", caption).group(1) == f"{float(row.max()):.4f}"
        assert ai.token_name(int(row.argmax())) in caption
        assert "Random weights" in caption
    finally:
        plt.close(fig)


def test_maps_shape_and_rows():
    maps = attention_maps()
    assert maps.shape == (ai.DEPTH, ai.HEADS, ai.SEQ_LEN, ai.SEQ_LEN)
    assert bool((maps >= 0).all())
    torch.testing.assert_close(maps.sum(-1), torch.ones(ai.DEPTH, ai.HEADS, ai.SEQ_LEN))
    assert attention_maps() is maps, "computed once, then cached"


def test_maps_are_not_flat():
    # QKV_SCALE exists so that the maps show structure: the average largest weight is far above uniform.
    assert float(attention_maps().amax(-1).mean()) > 5 / ai.SEQ_LEN


@pytest.mark.parametrize(("layer", "head"), list(itertools.product(CONTROLS["layer"], CONTROLS["head"])))
def test_every_layer_and_head(layer, head):
    for query in (0, 1, ai.SEQ_LEN - 1):
        _check_frame(layer, head, query)


@pytest.mark.parametrize("query", CONTROLS["query"])
def test_every_query(query):
    _check_frame(1, 0, query)


def test_heads_count_from_zero_as_in_the_code():
    assert CONTROLS["head"] == list(range(ai.HEADS)) == SITE_CONTROLS["head"]
    fig, caption = attention_inspector_view(layer=1, head=0, query=0)
    plt.close(fig)
    assert "Layer 1, head 0" in caption


def test_site_controls_are_a_small_subset():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 60
    assert 0 in SITE_CONTROLS["query"], "the site shows the CLS query"


@pytest.mark.parametrize(
    ("layer", "head", "query", "expected"),
    [
        (0, 0, 0, "layer = 0 is out of range"),
        (ai.DEPTH + 1, 0, 0, "this model has 4 blocks"),
        (1, -1, 0, "head = -1 is out of range"),
        (1, ai.HEADS, 0, "each block has 4 heads, numbered 0 to 3"),
        (1, 0, ai.SEQ_LEN, "the sequence has 37 tokens"),
        (1, 0, -1, "query = -1 is out of range"),
        (1, 0, 2.5, "query must be a whole number"),
    ],
)
def test_out_of_range_explains_itself(layer, head, query, expected):
    assert_explains_problem(attention_inspector_view(layer=layer, head=head, query=query), expected)
