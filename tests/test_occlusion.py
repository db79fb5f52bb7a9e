"""vit_edu.explain.occlusion: the covered images' logits, and the logit margin."""

import pytest
import torch

import vit_edu
from vit_edu.data import make_shapes
from vit_edu.explain import occlusion_sensitivity
from vit_edu.explain.occlusion import logit_margin, occlusion_logits
from vit_edu.training.presets import PRESETS


def small_model() -> vit_edu.VisionTransformer:
    torch.manual_seed(0)
    model = vit_edu.VisionTransformer(PRESETS["shapes-vit"][0]).eval()
    torch.nn.init.normal_(model.head.weight)  # a zero head would give every class the same logit
    return model


@pytest.mark.parametrize("fill", [None, 0.0, 0.5])
def test_probabilities_of_the_covered_logits_give_occlusion_sensitivity(fill):
    model = small_model()
    images, labels, _ = make_shapes(6, seed=3)
    covered = occlusion_logits(model, images, 8, fill)  # (6, 16, 4)
    assert covered.shape == (6, 16, 4)
    with torch.no_grad():
        base = model(images).softmax(-1).gather(1, labels[:, None])  # (6, 1)
    drops = base - covered.softmax(-1).gather(2, labels[:, None, None].expand(-1, 16, 1))[..., 0]
    torch.testing.assert_close(drops, occlusion_sensitivity(model, images, labels, 8, fill))


def test_covered_patch_is_the_row_major_one():
    model = small_model()
    images, _, _ = make_shapes(2, seed=4)
    covered = occlusion_logits(model, images, 8, 0.0)
    manual = images.clone()
    manual[:, :, 8:16, 24:32] = 0.0  # grid row 1, column 3: patch 7
    with torch.no_grad():
        torch.testing.assert_close(covered[:, 7], model(manual))


def test_logit_margin_against_a_loop():
    logits = torch.tensor([[2.0, 5.0, 1.0], [0.5, 0.5, -1.0], [3.0, -2.0, 4.0]])
    classes = torch.tensor([1, 0, 0])
    torch.testing.assert_close(logit_margin(logits, classes), torch.tensor([3.0, 0.0, -1.0]))
    batch = torch.randn(4, 5, 6)
    picks = torch.randint(0, 6, (4, 5))
    expected = torch.tensor([[batch[i, j, picks[i, j]] - max(batch[i, j, c] for c in range(6) if c != picks[i, j])
                              for j in range(5)] for i in range(4)])
    torch.testing.assert_close(logit_margin(batch, picks), expected)
    assert bool((logit_margin(batch, batch.argmax(-1)) >= 0).all())  # the prediction never trails


def test_bad_arguments_raise_value_error_naming_them():
    model = small_model()
    with pytest.raises(ValueError, match=r"\(2, 3, 32\)"):
        occlusion_logits(model, torch.zeros(2, 3, 32), 8)
    with pytest.raises(ValueError, match="30"):
        occlusion_logits(model, torch.zeros(2, 3, 30, 32), 8)
    with pytest.raises(ValueError, match="'grey'"):
        occlusion_logits(model, torch.zeros(2, 3, 32, 32), 8, "grey")
    with pytest.raises(ValueError, match=r"\(3,\)"):
        logit_margin(torch.zeros(2, 4), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[4\]"):
        logit_margin(torch.zeros(1, 4), torch.tensor([4]))
    with pytest.raises(ValueError, match=r"\(2, 1\)"):
        logit_margin(torch.zeros(2, 1), torch.zeros(2, dtype=torch.long))
