import matplotlib.pyplot as plt
import pytest
import torch

from vit_edu.images import sample_photo
from vit_edu.plotting import patch_strip, show_patch_grid
from vit_edu.source import show_source
from vit_edu import patchify


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
    shown = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in shown] == [str(i) for i in range(6)]
    tile = torch.tensor(shown[4].images[0].get_array())  # (P, P, C): grid row 1, column 1
    torch.testing.assert_close(tile.permute(2, 0, 1).flatten().float(), patchify(image, 8)[0, 4])
    plt.close(fig)


def test_show_source_is_the_package_code():
    text = show_source(patchify).data
    assert text.startswith("```python\ndef patchify(") and text.endswith("```")
