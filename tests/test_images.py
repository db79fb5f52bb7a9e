import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from vit_edu import patchify
from vit_edu.book.plotting import patch_strip, show_patch_grid, tile_mosaic
from vit_edu.book.source import show_source
from vit_edu.data import sample_photo


def test_sample_photo_is_a_resized_rgb_tensor():
    photo = sample_photo((64, 48))
    assert photo.shape == (1, 3, 64, 48) and photo.dtype == torch.float32
    assert 0 <= photo.min() and photo.max() <= 1 and photo.std() > 0.1
    with pytest.raises(ValueError, match="size must be a positive integer"):
        sample_photo(0)


def test_patch_grid_lines_fall_on_patch_borders():
    fig, ax = plt.subplots()
    show_patch_grid(ax, torch.rand(1, 3, 32, 48), 16)
    xs = sorted(line.get_xdata()[0] for line in ax.lines if line.get_xdata()[0] == line.get_xdata()[1])
    assert xs == [15.5, 31.5]
    plt.close(fig)


def test_patch_strip_shows_tiles_in_sequence_order():
    image = torch.rand(1, 3, 16, 24)
    fig = patch_strip(image, 8)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == [str(i) for i in range(6)]
    canvas = ax.images[0].get_array()
    tokens = patchify(image, 8)[0]
    _, origins = tile_mosaic(np.zeros((6, 8, 8, 3)), per_row=6, gap=1, label_height=4)
    for i, (y, x) in enumerate(origins):
        tile = torch.tensor(np.asarray(canvas[y : y + 8, x : x + 8]))  # (P, P, C)
        torch.testing.assert_close(tile.permute(2, 0, 1).flatten(), tokens[i])
    plt.close(fig)


def test_tile_mosaic_leaves_white_gaps_and_label_bands():
    tiles = np.zeros((5, 2, 2))
    canvas, origins = tile_mosaic(tiles, per_row=3, gap=1, label_height=2)
    assert canvas.shape == (2 * 5, 3 * 3)
    assert origins == [(2, 0), (2, 3), (2, 6), (7, 0), (7, 3)]
    assert canvas.sum() == canvas.size - 5 * 4  # everything but the tiles is white


def test_show_source_is_the_package_code():
    text = show_source(patchify).data
    assert text.startswith("```python\ndef patchify(") and text.endswith("```")
