"""Export a ``VisionTransformer`` to ONNX with everything the book's "Try it" page draws, so a browser can run it.

One graph, four outputs for a batch of ``(B, C, H, W)`` images in [0, 1]:

- ``logits`` ``(B, K)``;
- ``attentions`` ``(L, B, h, S, S)``: every layer's attention weights;
- ``pooled`` ``(L, B, D)``: after each block, the token the head reads (the CLS token, or the mean of the tokens);
- ``lens_logits`` ``(L, B, K)``: :func:`vit_edu.explain.logit_lens`, the final LayerNorm and head applied to it.

The file describes itself: its ``metadata_props`` (:func:`describe`) hold the class names, image and patch size,
channels, layers, heads, pooling and input normalisation, so the page can open any model the package trains.

    python -m vit_edu.book.export --out shapes_vit.onnx --examples examples.json --reference reference.json
    python -m vit_edu.book.export --checkpoint mine.pt --out mine.onnx [--classes cat,dog,...]
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import torch
from torch import nn

from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain import attention_rollout
from vit_edu.model import VisionTransformer
from vit_edu.training import CHECKPOINTS, load_checkpoint

OUTPUTS = ("logits", "attentions", "pooled", "lens_logits")
OPSET = 18
FORMAT = "vit_edu.tryit/1"  # the metadata's format and version: the page refuses a file without it


def class_names(num_classes: int, given: list[str] | None = None) -> list[str]:
    """The names the page shows: ``given``, else the shapes task's for a 4-class model, else "class 0", ..."""
    if given is not None:
        if len(given) != num_classes or len(set(given)) != len(given) or not all(n.strip() for n in given):
            raise ValueError(f"need {num_classes} distinct, non-empty class names for this model, got {given}")
        return list(given)
    return list(CLASS_NAMES) if num_classes == len(CLASS_NAMES) else [f"class {k}" for k in range(num_classes)]


def describe(model: VisionTransformer, classes: list[str] | None = None) -> dict[str, str]:
    """The ONNX file's ``metadata_props``: what the page needs to draw the model, every value a string."""
    c = model.config
    values = {
        "format": FORMAT,
        "classes": class_names(c.num_classes, classes),
        "image_size": list(c.image_size), "patch_size": c.patch_size, "in_channels": c.in_channels,
        "num_layers": c.depth, "num_heads": c.num_heads, "embed_dim": c.embed_dim,
        "pooling": c.pool, "num_prefix_tokens": c.num_prefix_tokens, "pos_embed": c.pos_embed,
        "input_norm": None if c.input_norm is None else list(c.input_norm),  # applied inside the graph
        "input": "images (B, C, H, W), float32 in [0, 1]",
        "outputs": list(OUTPUTS),
    }
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


class Explained(nn.Module):
    """``model``'s forward pass with the per-layer views as extra outputs (explicit attention, no SDPA)."""

    def __init__(self, model: VisionTransformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        m = self.model
        hidden, attentions = m.forward_layers(images)  # L × (B, S, D), L × (B, h, S, S)
        pooled = torch.stack([m.pool(m.norm(h)) for h in hidden])  # (L, B, D)
        lens = m.head(pooled)  # (L, B, K)
        return lens[-1], torch.stack(attentions), torch.stack([m.pool(h) for h in hidden]), lens


def export_onnx(model: VisionTransformer, path: Path, classes: list[str] | None = None) -> Path:
    """Write ``model`` (in eval mode) to ``path`` as ONNX with :data:`OUTPUTS`, a dynamic batch size and its
    description (:func:`describe`) in the file's metadata."""
    description = describe(model, classes)
    config = model.config
    example = torch.rand(2, config.in_channels, *config.image_size)  # batch 2: a batch of 1 would be fixed
    was_training = model.training
    model.eval()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)  # the input-size checks, traced for one size
            torch.onnx.export(Explained(model).eval(), (example,), str(path), input_names=["images"],
                              output_names=list(OUTPUTS), dynamic_shapes={"images": {0: torch.export.Dim("batch")}},
                              opset_version=OPSET, dynamo=True, external_data=False, verbose=False)
    finally:
        model.train(was_training)
    _compact(path, description)
    return path


def _compact(path: Path, description: dict[str, str]) -> None:
    """Make the file smaller for the web without changing a single output.

    Each float32 weight that float16 holds exactly (a checkpoint saved in half precision) is stored as float16,
    with a Cast node that turns it back into float32 when the session loads; weights that float16 would round
    stay float32. The exporter's per-node debugging metadata (source lines, stack traces) is dropped; the
    model's ``description`` becomes the file's own metadata.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    for node in graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    for init in list(graph.initializer):
        weights = numpy_helper.to_array(init)
        if weights.dtype != np.float32 or weights.size < 64:
            continue
        half = weights.astype(np.float16)
        if not np.array_equal(half.astype(np.float32), weights):
            continue
        graph.initializer.remove(init)
        graph.initializer.append(numpy_helper.from_array(half, f"{init.name}_fp16"))
        graph.node.insert(0, helper.make_node("Cast", [f"{init.name}_fp16"], [init.name], to=TensorProto.FLOAT))
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, description)
    onnx.save(model, str(path))


def reference_outputs(model: VisionTransformer, images: torch.Tensor) -> dict[str, torch.Tensor]:
    """What PyTorch computes for the exported outputs, plus softmax probabilities and mean-fusion rollout."""
    with torch.no_grad():
        logits, attentions, pooled, lens = Explained(model.eval())(images)
    return {
        "logits": logits, "attentions": attentions, "pooled": pooled, "lens_logits": lens,
        "probabilities": logits.softmax(dim=-1), "lens_probabilities": lens.softmax(dim=-1),
        "rollout": attention_rollout(list(attentions)),  # (B, S, S)
    }


def examples(model: VisionTransformer, count: int = 8) -> tuple[dict, dict]:
    """Test images for the page to offer (what each shows, not what a model predicts), and the shipped model's
    PyTorch outputs for them (the browser test's parity fixture).

    The images go through 8-bit pixels first, as a canvas holds them, so PyTorch sees what the page sees.
    """
    test = ShapesDataset("test", size=count)
    pixels = test.images.mul(255).round()  # (B, C, H, W), whole numbers 0..255
    page = {
        "image_size": list(test.images.shape[-2:]),
        "images": [img.permute(1, 2, 0).to(torch.uint8).flatten().tolist() for img in pixels],  # HWC, RGB
        "shows": [CLASS_NAMES[k] for k in test.labels.tolist()],
    }
    reference = {name: value.tolist() for name, value in reference_outputs(model, pixels / 255).items()}
    return page, reference


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, default=CHECKPOINTS / "shapes_vit.pt")
    p.add_argument("--out", type=Path, required=True, help="the .onnx file to write")
    p.add_argument("--examples", type=Path, help="also write test images for the page, as JSON")
    p.add_argument("--reference", type=Path, help="and PyTorch's outputs for them, as JSON")
    p.add_argument("--classes", type=lambda s: [n.strip() for n in s.split(",")],
                   help="the class names, comma-separated (default: the shapes task's for 4 classes, else class 0, ...)")
    args = p.parse_args(argv)
    model, _ = load_checkpoint(args.checkpoint)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export_onnx(model, args.out, args.classes)
    written = [args.out]
    if args.examples or args.reference:
        for path, data in zip((args.examples, args.reference), examples(model)):
            if path:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(data, separators=(",", ":")))
                written.append(path)
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
