"""Small checkpoints: the weights in half precision with both configs, the history and the final metrics."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer
from vit_edu.training.config import TrainConfig


# Where the shipped results live (``make checkpoints`` rebuilds them); the chapters and widgets load from here.
CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"


def save_checkpoint(path: str | Path, model: VisionTransformer, cfg: TrainConfig, history: list[dict],
                    metrics: dict) -> None:
    """Weights in half precision (the file stays small), configs, history and final metrics in one file."""
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save({"model_config": model.config.to_dict(), "train_config": dataclasses.asdict(cfg),
                "state_dict": state, "history": history, "metrics": metrics}, path)


def load_checkpoint(path: str | Path) -> tuple[VisionTransformer, dict]:
    """The model (eval mode, float32) and the rest of the checkpoint (configs, history, metrics).

    Torch's global random state is left as it was: building the model draws initial weights, which the
    checkpoint then overwrites, and that must not shift the random numbers of the caller's next experiment.
    """
    data = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):
        model = VisionTransformer(ViTConfig(**data["model_config"]))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in data["state_dict"].items()})
    return model.eval(), {k: v for k, v in data.items() if k != "state_dict"}
