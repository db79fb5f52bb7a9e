"""Images that ship with the code, so no chapter downloads anything.

* ``shapes``: the generated shapes task that every trained model in the book learns (with object masks);
* ``scenes``: Part V's scenes of 0–4 shapes, with each shape's class, box and mask (segmentation, detection);
* ``clips``: Part V's short clips of a moving shape, labelled by its direction (video);
* ``photos``: a real photo for the chapters that show patches of one;
* ``cifar``: CIFAR-10 from a local copy, for readers who have it (the book never needs it).
"""

from vit_edu.data.cifar import ImageSplit, load_cifar10
from vit_edu.data.photos import sample_photo
from vit_edu.data.shapes import (
    CLASS_NAMES,
    DEFAULT_SIZES,
    MIN_IMAGE_SIZE,
    SPLITS,
    ShapesDataset,
    make_shapes,
    split_seed,
)

__all__ = [
    "CLASS_NAMES",
    "DEFAULT_SIZES",
    "MIN_IMAGE_SIZE",
    "SPLITS",
    "ImageSplit",
    "ShapesDataset",
    "load_cifar10",
    "make_shapes",
    "sample_photo",
    "split_seed",
]
