import json
import re

import matplotlib.pyplot as plt
import pytest

from vit_edu.widgets.frames import frame_player


def _view(size, mode):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{size}-{mode}")
    return fig, f"<b>{size}</b> {mode}"


def _data(html):
    return json.loads(re.search(r'class="vit-frames-data">(.*?)</script>', html).group(1).replace("<\\/", "</"))


def test_one_frame_per_combination_in_mixed_radix_order():
    html = frame_player(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}).data
    data = _data(html)
    assert data["sizes"] == [3, 2]
    assert [caption for _, caption in data["frames"]] == [
        f"<b>{s}</b> {m}" for s in (8, 16, 32) for m in ("a", "b")
    ]
    assert len({png for png, _ in data["frames"]}) == 6  # every picture differs
    assert data["kinds"] == ["range", "select"]  # numbers get a slider, words a menu
    assert data["titles"] == ["size", "mode"]
    assert "http" not in html  # self-contained: nothing to fetch


def test_start_picks_the_first_frame_and_output_is_deterministic():
    controls = {"size": [8, 16], "mode": ["a", "b"]}
    a = frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert a == frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert '<div class="vit-frames-caption"><b>16</b> b</div>' in a
    assert _data(a)["start"] == [1, 1]
    assert "data-control" not in a.split("<script")[0]  # controls come from the script: none dead without it
    assert "vit-frames-note" in a


def test_titles_are_words_and_unknown_start_values_raise():
    data = _data(frame_player(lambda patch_size: _view(patch_size, "a"), {"patch_size": [8, 16]}).data)
    assert data["titles"] == ["patch size"]
    with pytest.raises(ValueError, match="not among"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"size": 9})


def test_bad_controls_raise():
    with pytest.raises(ValueError, match="at least one value"):
        frame_player(_view, {"size": [], "mode": ["a"]})
    with pytest.raises(ValueError, match="unknown controls"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"colour": 1})
