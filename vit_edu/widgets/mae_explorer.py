"""Chapter 16's widget: pick a mask ratio, a mask seed and a test image, and see which patches the MAE's encoder
sees and what the shipped, pre-trained MAE reconstructs from them.

Three panels: the image, what the encoder sees (hidden patches grey), and the reconstruction (visible patches
copied, hidden ones predicted, outlined in red). The shipped MAE (``vit_edu/checkpoints/shapes_mae.pt``, trained
at 75% masking with the per-patch normalised pixel loss) predicts each hidden patch's pattern; its brightness and
contrast come from the true patch's mean and standard deviation (:meth:`MaskedAutoencoder.reconstruct`).
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.training import CHECKPOINTS
from vit_edu.variants.mae import MaskedAutoencoder, load_mae, masked_patch_loss, normalized_patches
from vit_edu.widgets.frames import problem_frame

CHECKPOINT = CHECKPOINTS / "shapes_mae.pt"
IMAGES = 6  # the first test images of seed 0
CONTROLS: dict[str, list] = {
    "mask_ratio": [0.25, 0.5, 0.75, 0.9],
    "mask_seed": list(range(8)),
    "image": list(range(IMAGES)),
}
SITE_CONTROLS: dict[str, list] = {"mask_ratio": [0.5, 0.75, 0.9], "mask_seed": [0, 1], "image": [0, 1]}
START = {"mask_ratio": 0.75, "mask_seed": 0, "image": 0}
GREY = 0.5


@lru_cache(maxsize=1)
def shipped_mae() -> MaskedAutoencoder:
    """The pre-trained MAE of chapter 16, loaded once."""
    return load_mae(CHECKPOINT)[0]


@lru_cache(maxsize=1)
def test_images() -> tuple[torch.Tensor, tuple[str, ...]]:
    """``(IMAGES, 3, 32, 32)`` and class names: the first test images of the shapes task (seed 0)."""
    data = ShapesDataset("test", seed=0)
    return data.images[:IMAGES].clone(), tuple(CLASS_NAMES[i] for i in data.labels[:IMAGES])


def masked_view(mask_ratio: float, mask_seed: int, image: int) -> dict:
    """Everything the view draws, as numbers: the image, the mask (N,), the seen and reconstructed images, the loss."""
    mae = shipped_mae()
    images, _ = test_images()
    x = images[image:image + 1]  # (1, 3, H, W)
    rec, mask = mae.reconstruct(x, mask_ratio, generator=torch.Generator().manual_seed(mask_seed))
    with torch.no_grad():
        out = mae(x, mask_ratio, generator=torch.Generator().manual_seed(mask_seed))
        loss = float(masked_patch_loss(out.pred, normalized_patches(x, mae.config.encoder.patch_size), out.mask))
    cfg = mae.config.encoder
    gh, gw = cfg.grid_size
    p = cfg.patch_size
    hidden = mask.reshape(gh, gw).repeat_interleave(p, 0).repeat_interleave(p, 1) > 0  # (H, W) pixels hidden
    seen = torch.where(hidden[None], torch.full_like(x[0], GREY), x[0])
    return {"image": x[0], "mask": mask[0], "seen": seen, "reconstruction": rec[0], "loss": loss,
            "visible": int((mask[0] == 0).sum()), "patches": int(mask.shape[1]), "grid": (gh, gw), "patch": p,
            "prefix": cfg.num_prefix_tokens, "trained_ratio": mae.config.mask_ratio}


def _problem(mask_ratio: object, mask_seed: object, image: object) -> str | None:
    if mask_ratio not in CONTROLS["mask_ratio"]:
        return f"mask ratio must be one of {CONTROLS['mask_ratio']}; got {mask_ratio!r}."
    if mask_seed not in CONTROLS["mask_seed"]:
        return f"mask seed must be a whole number from 0 to {len(CONTROLS['mask_seed']) - 1}; got {mask_seed!r}."
    if image not in CONTROLS["image"]:
        return f"image must be a whole number from 0 to {IMAGES - 1}; got {image!r}."
    if not CHECKPOINT.exists():
        return f"the pre-trained MAE {CHECKPOINT.name} is missing: run python -m vit_edu.variants.mae_pretrain."
    return None


def _picture(ax, img: torch.Tensor, title: str) -> None:
    ax.imshow(img.permute(1, 2, 0).numpy(), interpolation="nearest")
    ax.set_title(title, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def mae_explorer_view(mask_ratio: float = 0.75, mask_seed: int = 0, image: int = 0) -> tuple[Figure, str]:
    """The image, what the encoder sees, and the shipped MAE's reconstruction of the hidden patches."""
    problem = _problem(mask_ratio, mask_seed, image)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.0))
    v = masked_view(mask_ratio, mask_seed, image)
    _, names = test_images()
    fig, axes = plt.subplots(1, 3, figsize=(6.3, 2.4))
    _picture(axes[0], v["image"], f"test image {image} ({names[image]})")
    _picture(axes[1], v["seen"], f"the encoder sees {v['visible']} of {v['patches']}")
    _picture(axes[2], v["reconstruction"], "reconstruction")
    (gh, gw), p = v["grid"], v["patch"]
    for k in np.nonzero(v["mask"].numpy() > 0)[0]:  # outline each predicted patch
        r, c = divmod(int(k), gw)
        axes[2].add_patch(plt.Rectangle((c * p - 0.5, r * p - 0.5), p, p, fill=False, ec="tab:red", lw=0.8))
    for ax in axes[:2]:  # the patch grid
        for t in range(1, gh):
            ax.axhline(t * p - 0.5, color="white", lw=0.4)
        for t in range(1, gw):
            ax.axvline(t * p - 0.5, color="white", lw=0.4)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.86, wspace=0.06)
    tokens, full = v["visible"] + v["prefix"], v["patches"] + v["prefix"]
    caption = (
        f"Test image {image} ({names[image]}), mask ratio {round(100 * mask_ratio)}%, mask seed {mask_seed}: "
        f"the encoder sees <b>{v['visible']}</b> of "
        f"{v['patches']} patches, {tokens} tokens with the CLS token instead of {full}. Masked loss on this image "
        f"<b>{v['loss']:.2f}</b> (mean squared error on the hidden patches, in per-patch normalised pixels; about 1 for "
        f"a flat guess). The hidden patches' brightness and contrast are the true patch's; the pattern is the "
        f"model's. The MAE was trained at {round(100 * v['trained_ratio'])}% masking."
    )
    return fig, caption
