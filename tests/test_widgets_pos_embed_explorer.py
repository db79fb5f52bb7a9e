"""Chapter 11's widget: sweep every patch and table, and check the map and the caption against the package."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import vit_edu
from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.explain import position_similarity
from vit_edu.training import load_checkpoint
from vit_edu.widgets import pos_embed_explorer as pex
from vit_edu.widgets.pos_embed_explorer import CONTROLS, GRID, SITE_CONTROLS, TABLES, pos_embed_explorer_view

needs_checkpoint = pytest.mark.skipif(not pex.CHECKPOINT.exists(), reason="shipped checkpoint not built yet")


def _numbers(caption: str) -> list[float]:
    return [float(x) for x in re.findall(r"<b>(-?[0-9.]+)</b>", caption)]


def _cells(caption: str) -> list[tuple[int, int]]:
    return [(int(r), int(c)) for r, c in re.findall(r"\((\d), (\d)\)", caption)]


def _reference(table: str) -> torch.Tensor:
    """The patch rows of each table, built here independently of the widget's helpers."""
    model, info = load_checkpoint(pex.CHECKPOINT)
    cfg = model.config
    if table == "trained":
        return model.pos_embed.embedding.detach()[0, 1:]
    if table == "sin-cos":
        return vit_edu.sincos_2d(cfg.grid_size, cfg.embed_dim)
    torch.manual_seed(info["train_config"]["seed"])
    return vit_edu.VisionTransformer(cfg).pos_embed.embedding.detach()[0, 1:]


def test_controls_cover_the_grid_and_fit_the_site():
    assert CONTROLS["row"] == CONTROLS["col"] == [0, 1, 2, 3]
    assert CONTROLS["table"] == list(TABLES)
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 50


@needs_checkpoint
def test_checkpoint_grid_matches_the_widget():
    model, _ = load_checkpoint(pex.CHECKPOINT)
    assert model.config.grid_size == (GRID, GRID)
    assert model.config.pos_embed == "learned" and model.config.num_prefix_tokens == 1


@needs_checkpoint
@pytest.mark.parametrize(("row", "col", "table"), list(itertools.product(*CONTROLS.values())))
def test_every_setting(row, col, table):
    fig, caption = pos_embed_explorer_view(row=row, col=col, table=table)
    try:
        sims = position_similarity(_reference(table))  # (16, 16)
        expected = sims[row * GRID + col].reshape(GRID, GRID)
        # The picture is exactly that row of the similarity matrix, and the chosen patch has similarity 1.
        image_ax = fig.axes[0]
        assert len(fig.axes) == 1
        shown = np.asarray(image_ax.images[0].get_array())
        np.testing.assert_allclose(shown, expected.numpy(), atol=1e-6)
        assert shown[row, col] == pytest.approx(1.0, abs=1e-5)
        (box,) = image_ax.patches
        assert box.get_xy() == (col - 0.5, row - 0.5)
        assert len(image_ax.texts) == GRID * GRID
        # The caption: chosen cell, most and least similar other cell, their values, the two means.
        assert f"Patch ({row}, {col}), {table} table" in caption
        numbers = _numbers(caption)
        assert len(numbers) == 4
        others = expected.clone()
        others[row, col] = float("nan")
        flat = others.flatten()
        best_value = float(flat.nan_to_num(-2).max())
        worst_value = float(flat.nan_to_num(2).min())
        # Every cell tied for the most (least) similar is named, in row-major order, and no other.
        best = _cells(re.search(r"Most similar other patch: (.*?), cosine", caption).group(1))
        worst = _cells(re.search(r"least similar: (.*?), <b>", caption).group(1))
        cells = [(r, c) for r in range(GRID) for c in range(GRID) if (r, c) != (row, col)]
        assert best == [x for x in cells if float(expected[x]) >= best_value - 1e-5]
        assert worst == [x for x in cells if float(expected[x]) <= worst_value + 1e-5]
        assert ("(tied)" in caption) == (len(best) > 1 or len(worst) > 1)
        assert image_ax.images[0].get_clim() == pytest.approx((worst_value, best_value), abs=1e-6)
        assert numbers[0] == pytest.approx(best_value, abs=5e-4)
        assert numbers[1] == pytest.approx(worst_value, abs=5e-4)
        near = [(r, c) for r, c in [(row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)]
                if 0 <= r < GRID and 0 <= c < GRID]
        far = [(r, c) for r in range(GRID) for c in range(GRID) if (r, c) not in near and (r, c) != (row, col)]
        assert f"{len(near)} grid neighbours" in caption and f"other {len(far)} patches" in caption
        assert numbers[2] == pytest.approx(float(np.mean([float(expected[x]) for x in near])), abs=5e-4)
        assert numbers[3] == pytest.approx(float(np.mean([float(expected[x]) for x in far])), abs=5e-4)
    finally:
        plt.close(fig)


@needs_checkpoint
def test_tables_behave_as_the_chapter_says():
    """Untrained: near-orthogonal noise. Sin-cos: every pair positive, neighbours closer than the rest."""
    off = ~torch.eye(GRID * GRID, dtype=torch.bool)
    untrained = pex.similarity("untrained")[off]
    assert float(untrained.abs().max()) < 0.5
    sincos = pex.summary(1, 1, "sin-cos")
    assert float(pex.similarity("sin-cos").min()) > 0
    assert sincos["near_mean"] > sincos["far_mean"]
    torch.testing.assert_close(pex.patch_table("trained"), _reference("trained"))


@needs_checkpoint
def test_untrained_table_is_where_training_started_and_rng_is_untouched():
    pex.patch_table.cache_clear()
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    table = pex.patch_table("untrained")
    after = torch.rand(3)
    torch.testing.assert_close(before, after)  # building the table did not consume the caller's random numbers
    torch.testing.assert_close(table, _reference("untrained"))
    assert float(table.std()) == pytest.approx(0.02, rel=0.15)  # N(0, 0.02²) initialisation


@pytest.mark.parametrize(("row", "col", "table"), [(4, 0, "trained"), (-1, 2, "sin-cos"), (1.5, 0, "trained"),
                                                   (0, True, "untrained"), (0, 0, "learned")])
def test_bad_settings_explain_themselves(row, col, table):
    assert_explains_problem(pos_embed_explorer_view(row=row, col=col, table=table), "table must be one of",
                            "whole number from 0 to 3")


def test_missing_checkpoint_explains_itself(monkeypatch, tmp_path):
    monkeypatch.setattr(pex, "CHECKPOINT", tmp_path / "nowhere.pt")
    fig, caption = pos_embed_explorer_view(row=0, col=0, table="trained")
    plt.close(fig)
    assert "Nothing to show" in caption and "checkpoint" in caption


@needs_checkpoint
def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(pos_embed_explorer_view, CONTROLS, start={"row": 1, "col": 2})
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Patch (1, 2), trained table" in caption.value
    first = picture.value
    row_slider, col_slider, table_menu = controls.children
    table_menu.value = "sin-cos"
    assert "Patch (1, 2), sin-cos table" in caption.value
    assert picture.value != first
    row_slider.value = 3
    assert "Patch (3, 2), sin-cos table" in caption.value
