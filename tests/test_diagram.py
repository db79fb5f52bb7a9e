"""vit_edu.diagram: chapter 0's architecture picture shows the shapes the model itself produces."""

import matplotlib
import pytest
import torch

from vit_edu import CONFIGS, ViTConfig, VisionTransformer
from vit_edu.diagram import architecture_boxes, draw_vit
from vit_edu.trace import format_shape

matplotlib.use("Agg")

SMALL = ViTConfig(image_size=32, patch_size=8, embed_dim=48, depth=3, num_heads=4, mlp_dim=96, num_classes=5)


def test_boxes_carry_the_traced_shapes_and_the_depth():
    model = VisionTransformer(SMALL).eval()
    boxes, depth = architecture_boxes(model, torch.zeros(2, 3, 32, 32))
    assert depth == 3
    shapes = [b.shape for b in boxes]
    assert shapes[0] == (2, 3, 32, 32) and shapes[1] == (2, 16, 48) and shapes[2] == (2, 17, 48)
    assert (2, 17, 96) in shapes  # the MLP widens to mlp_dim
    assert shapes[-2:] == [(2, 48), (2, 5)]  # the CLS token, then the logits
    assert [b.label for b in boxes].count("LayerNorm") == 2 and "final LayerNorm" in [b.label for b in boxes]
    assert sum(b.residual for b in boxes) == 2 and all(b.in_block for b in boxes if b.residual)
    attention = next(b.label for b in boxes if "self-attention" in b.label)
    assert "4 heads" in attention and "B×4×17×12" in attention and "B×4×17×17" in attention


def test_vit_b16_diagram_is_labelled_with_its_shapes():
    model = VisionTransformer(CONFIGS["vit-b/16"]).eval()
    ax = draw_vit(model, torch.zeros(1, 3, 224, 224))
    texts = [t.get_text() for t in ax.texts]
    for shape in [(1, 3, 224, 224), (1, 196, 768), (1, 197, 3072), (1, 768), (1, 1000)]:
        assert format_shape(shape, batch="B") in texts
    assert "encoder block\n× 12" in texts
    matplotlib.pyplot.close(ax.figure)


@pytest.mark.parametrize("change", [{"norm": "post"}, {"pool": "mean"}])
def test_other_variants_are_refused(change):
    model = VisionTransformer(ViTConfig(**{**SMALL.__dict__, **change}))
    with pytest.raises(ValueError, match="Pre-LN ViT read out through its CLS token"):
        architecture_boxes(model, torch.zeros(1, 3, 32, 32))
