"""Part III: training the ViT on a CPU, and the experiments that train it.

* the loop: ``config`` (:class:`TrainConfig`), ``augment`` (crop-flip, CutMix/MixUp), ``loop`` (:func:`train`,
  :func:`evaluate`, the AdamW groups and schedule), ``checkpoint`` (the small shipped checkpoints, in
  :data:`CHECKPOINTS`), ``presets`` (named model + training settings, :func:`fit_preset`);
* the baseline: ``cnn`` (a CNN matched to a ViT's parameter count);
* the experiments of chapters 7, 9 and 11: ``norm_placement``, ``bench`` (ViT against CNN at equal seconds),
  ``regularisation``, ``pos_embed_ablation``.

``python -m vit_edu.training --config shapes-vit --out FILE`` trains a preset; each experiment is a script too
(``python -m vit_edu.training.<name>``), and ``make checkpoints`` reruns them all.
"""

from vit_edu.training.augment import crop_flip, make_mixer
from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint, save_checkpoint
from vit_edu.training.config import TrainConfig
from vit_edu.training.loop import evaluate, make_optimizer, parameter_groups, train
from vit_edu.training.presets import DATA, PRESETS, cifar10_splits, fit_preset, shapes_splits

__all__ = [
    "CHECKPOINTS",
    "DATA",
    "PRESETS",
    "TrainConfig",
    "cifar10_splits",
    "crop_flip",
    "evaluate",
    "fit_preset",
    "load_checkpoint",
    "make_mixer",
    "make_optimizer",
    "parameter_groups",
    "save_checkpoint",
    "shapes_splits",
    "train",
]
