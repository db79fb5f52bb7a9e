"""Pictures that ship with installed packages, so no chapter downloads anything."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from vit_edu._checks import pair


def sample_photo(size: int | tuple[int, int] = 224) -> torch.Tensor:
    """Matplotlib's ``grace_hopper.jpg`` as a ``(1, 3, H, W)`` float tensor in [0, 1], resized (antialiased).

    The photo is 512×600 (H×W); it is resized without cropping, so the aspect ratio changes slightly.
    """
    import matplotlib.image as mpimg  # here, not at the top: vit_edu.data should not pull in matplotlib
    from matplotlib import cbook

    height, width = pair(size, "size")
    with cbook.get_sample_data("grace_hopper.jpg") as f:
        pixels = mpimg.imread(f, format="jpg")  # (512, 600, 3) uint8
    image = torch.from_numpy(np.array(pixels)).permute(2, 0, 1)[None].float() / 255  # (1, 3, h, w)
    image = F.interpolate(image, size=(height, width), mode="bilinear", align_corners=False, antialias=True)
    return image.clamp(0, 1)
