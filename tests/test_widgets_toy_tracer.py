"""The toy tracer (chapter 2): every control setting, checked against where vit_edu really puts each pixel."""

import itertools
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

import vit_edu  # noqa: E402
from vit_edu.widgets.toy_tracer import (  # noqa: E402
    _HIGHLIGHT,
    CONTROLS,
    SITE_CONTROLS,
    locate,
    token_sources,
    toy_tracer_view,
    trace_figure,
)

CAPTION = re.compile(r"pixel \((\d), (\d)\) with value (\d+) → token (\d+), position (\d+)")
ALL = list(itertools.product(*CONTROLS.values()))
RED = to_rgb(_HIGHLIGHT)


def _where(tokens: torch.Tensor, value: int) -> tuple[int, int]:
    """(token, position) of ``value`` in ``(1, N, L)`` tokens; the toy's values are all different."""
    hits = (tokens[0] == value).nonzero()
    assert len(hits) == 1
    return int(hits[0, 0]), int(hits[0, 1])


def test_controls_cover_the_brief():
    assert CONTROLS["row"] == [0, 1, 2, 3] and CONTROLS["col"] == [0, 1, 2, 3]
    assert set(CONTROLS["method"]) == {"permute", "without permute"}
    assert {1, 2, 4} <= set(CONTROLS["patch_size"])
    n_frames = 1
    for values in SITE_CONTROLS.values():
        n_frames *= len(values)
    assert n_frames <= 60
    for name, values in SITE_CONTROLS.items():
        assert set(values) <= set(CONTROLS[name]) and len(values) > 1  # no dead control on the site


@pytest.mark.parametrize("row,col,patch_size,method", ALL)
def test_every_setting_lands_where_vit_edu_puts_the_value(row, col, patch_size, method):
    image = vit_edu.toy_image()
    fig, caption = toy_tracer_view(row=row, col=col, patch_size=patch_size, method=method)
    try:
        if 4 % patch_size:
            assert "not divisible" in caption and str(patch_size) in caption
            assert "→ token" not in caption
            return
        found = CAPTION.search(caption)
        assert found, caption
        r, c, value, token, position = map(int, found.groups())
        assert (r, c) == (row, col)
        assert value == int(image[0, 0, row, col]) == 4 * row + col + 1
        cut = vit_edu.patchify if method == "permute" else vit_edu.patchify_without_permute
        assert (token, position) == _where(cut(image, patch_size), value)
        # two red frames: the pixel in the image (y = row) and its entry in the token matrix (y = token)
        frames = sorted(p.get_y() + 0.5 for p in fig.axes[0].patches if p.get_edgecolor()[:3] == RED)
        assert frames == sorted([row, token])
        if method == "permute":  # the closed form the caption spells out
            p = patch_size
            assert token == (row // p) * (4 // p) + col // p
            assert position == (row % p) * p + col % p
        else:
            assert (token, position) == divmod(4 * row + col, patch_size**2)
    finally:
        plt.close(fig)


def test_wrong_reshape_says_it_mixes_patches():
    fig, caption = toy_tracer_view(row=0, col=2, patch_size=2, method="without permute")
    plt.close(fig)
    assert "token 0, position 2" in caption and "mixes pixels of patches 0, 1" in caption


@pytest.mark.parametrize("bad", [dict(row=4), dict(col=-1), dict(method="einops")])
def test_bad_controls_explain_themselves(bad):
    fig, caption = toy_tracer_view(**bad)
    plt.close(fig)
    assert "→ token" not in caption and len(caption) > 20


def test_two_channel_tokens_and_sources():
    toy = vit_edu.toy_image()
    image = torch.cat([toy, toy + 100], dim=1)  # (1, 2, 4, 4)
    tokens, sources = token_sources(image, 2)
    assert tokens[0].tolist() == [1, 2, 5, 6, 101, 102, 105, 106]
    for t, k in itertools.product(range(4), range(8)):  # every entry says where it came from
        c, r, col = sources[t, k].tolist()
        assert tokens[t, k] == image[0, c, r, col]
    fig = trace_figure(image, 2, highlight=(1, 3, 3))
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"image, channel 0", "image, channel 1", "106", "116"} <= texts
    plt.close(fig)
    assert locate(3, 3, 2) == (3, 3)


def test_live_widget_redraws_on_every_control():
    import ipywidgets as widgets

    from vit_edu.widgets import control_title, live

    box = live(toy_tracer_view, CONTROLS, start={"patch_size": 2})
    controls, picture, caption, _note = box.children
    assert isinstance(picture, widgets.Image) and bytes(picture.value).startswith(b"\x89PNG")
    assert [c.description for c in controls.children] == [control_title(n) for n in CONTROLS]
    assert "patch size" in [c.description for c in controls.children]  # words, not identifiers
    assert "pixel (0, 0) with value 1 → token 0, position 0" in caption.value
    controls.children[0].value = 3  # row 3
    assert "pixel (3, 0) with value 13 → token 2, position 2" in caption.value
    assert plt.get_fignums() == []  # every figure closed
