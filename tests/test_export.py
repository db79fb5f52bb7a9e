"""vit_edu.book.export: the ONNX file computes what PyTorch computes, for the shipped model and for any ViT."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.book.export import FORMAT, OUTPUTS, class_names, examples, export_onnx, reference_outputs
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain import logit_lens
from vit_edu.training import CHECKPOINTS, load_checkpoint


def run_onnx(path, images: torch.Tensor) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == list(OUTPUTS)
    return dict(zip(OUTPUTS, session.run(None, {"images": images.numpy()})))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    model, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
    return model.eval(), export_onnx(model, tmp_path_factory.mktemp("onnx") / "shapes_vit.onnx")


@pytest.mark.parametrize("batch", [1, 8])
def test_shipped_model_matches_pytorch(shipped, batch):
    model, path = shipped
    images = ShapesDataset("test", size=batch).images
    got, want = run_onnx(path, images), reference_outputs(model, images)
    # Residual-stream tokens reach about 7, where float32 spacing is 5e-7 and kernels that sum in another
    # order (another CPU) differ by ~20 spacings: 1e-5 absolute, plus 1e-5 of the value's size.
    for name in OUTPUTS:
        np.testing.assert_allclose(got[name], want[name].numpy(), atol=1e-5, rtol=1e-5, err_msg=name)
    L, h, S = model.config.depth, model.config.num_heads, model.config.seq_len
    assert got["attentions"].shape == (L, batch, h, S, S)
    assert got["lens_logits"].shape == (L, batch, model.config.num_classes)
    # The lens's last layer is the model's own prediction; attention rows are distributions.
    np.testing.assert_allclose(got["lens_logits"][-1], got["logits"], atol=1e-6)
    np.testing.assert_allclose(got["attentions"].sum(-1), 1.0, atol=1e-5)


def test_half_precision_weights_only_where_lossless(shipped, tmp_path):
    _, path = shipped
    dtypes = {onnx.helper.tensor_dtype_to_np_dtype(i.data_type) for i in onnx.load(str(path)).graph.initializer
              if np.prod(i.dims) >= 64}
    assert dtypes == {np.dtype(np.float16)}  # the checkpoint is stored in half precision: nothing is lost
    assert path.stat().st_size < 1.3e6
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=32, depth=2,
                                        num_heads=2, mlp_dim=64, pool="mean"))
    with torch.no_grad():
        model.head.weight.normal_()  # float32 values float16 cannot hold
    fp32 = export_onnx(model, tmp_path / "random.onnx")
    weights = [i for i in onnx.load(str(fp32)).graph.initializer if np.prod(i.dims) >= 64]
    # Random float32 weights stay float32 (zeros and ones, such as fresh biases and LayerNorm scales, may not).
    assert np.dtype(np.float32) in {onnx.helper.tensor_dtype_to_np_dtype(i.data_type) for i in weights}
    images = torch.rand(3, 3, 16, 16)
    got = run_onnx(fp32, images)
    np.testing.assert_allclose(got["logits"], model.eval()(images).detach().numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got["lens_logits"], logit_lens(model, images).detach().numpy(), atol=1e-5, rtol=1e-5)


def test_examples_are_what_the_page_sees(shipped):
    model, _ = shipped
    page, reference = examples(model, count=3)
    assert len(page["images"]) == len(page["shows"]) == 3 and set(page["shows"]) <= set(CLASS_NAMES)
    assert page["image_size"] == [32, 32] and "classes" not in page  # a model's classes come from its own file
    assert all(len(img) == 32 * 32 * 3 and all(0 <= v <= 255 for v in img) for img in page["images"])
    pixels = torch.tensor(page["images"], dtype=torch.float32).reshape(3, 32, 32, 3).permute(0, 3, 1, 2) / 255
    want = reference_outputs(model, pixels)
    np.testing.assert_allclose(reference["probabilities"], want["probabilities"].numpy(), atol=1e-6)
    np.testing.assert_allclose(np.sum(reference["probabilities"], axis=-1), 1.0, atol=1e-6)


def _metadata(path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


def test_the_file_describes_its_model(shipped, tmp_path):
    model, path = shipped
    meta = _metadata(path)
    c = model.config
    assert meta["format"] == FORMAT and json.loads(meta["classes"]) == list(CLASS_NAMES)
    assert json.loads(meta["image_size"]) == list(c.image_size) and json.loads(meta["patch_size"]) == c.patch_size
    assert (json.loads(meta["num_layers"]), json.loads(meta["num_heads"])) == (c.depth, c.num_heads)
    assert meta["pooling"] == "cls" and json.loads(meta["num_prefix_tokens"]) == 1
    assert json.loads(meta["input_norm"]) == list(c.input_norm) and json.loads(meta["outputs"]) == list(OUTPUTS)
    # Another model, other values: 48×48 images, patch 6, mean pooling, no position table, its own class names.
    other = VisionTransformer(ViTConfig(image_size=48, patch_size=6, num_classes=3, embed_dim=24, depth=3,
                                        num_heads=2, mlp_dim=48, pool="mean", pos_embed="none"))
    meta = _metadata(export_onnx(other, tmp_path / "other.onnx", classes=["a", "b", "c"]))
    assert json.loads(meta["classes"]) == ["a", "b", "c"] and json.loads(meta["image_size"]) == [48, 48]
    assert (meta["pooling"], meta["pos_embed"], json.loads(meta["num_prefix_tokens"])) == ("mean", "none", 0)
    assert json.loads(meta["input_norm"]) is None and json.loads(meta["num_layers"]) == 3


def test_class_names_default_and_bad_ones_are_named():
    assert class_names(4) == list(CLASS_NAMES) and class_names(3) == ["class 0", "class 1", "class 2"]
    with pytest.raises(ValueError, match=r"need 3 distinct.*\['a', 'a', 'b'\]"):
        class_names(3, ["a", "a", "b"])
    with pytest.raises(ValueError, match=r"need 2 .*\['a', 'b', 'c'\]"):
        class_names(2, ["a", "b", "c"])
