import torch

from vit_edu import CONFIGS, VisionTransformer, count_parameters, shape_table, trace_shapes
from vit_edu.trace import record, recording


def test_vit_b16_trace_is_seed_000_shape_table():
    with torch.device("meta"):
        model = VisionTransformer(CONFIGS["vit-b/16"])
    trace = dict(trace_shapes(model, torch.empty(2, 3, 224, 224, device="meta")))
    assert trace["input image"] == (2, 3, 224, 224)
    assert trace["patch tokens (projected)"] == (2, 196, 768)
    assert trace["with CLS token"] == (2, 197, 768)
    assert trace["with position embedding"] == (2, 197, 768)
    for name in ("Q", "K", "V"):
        assert trace[f"block 1: {name} per head"] == (2, 12, 197, 64)
    assert trace["block 1: attention weights"] == (2, 12, 197, 197)
    assert trace["block 1: attention output"] == (2, 197, 768)
    assert trace["block 1: MLP hidden"] == (2, 197, 3072)
    assert trace["block 1: block output"] == (2, 197, 768)
    assert trace["final CLS"] == (2, 768)
    assert trace["logits"] == (2, 1000)
    assert not any(stage.startswith("block 2:") for stage in trace)


def test_all_blocks_and_order(small_model):
    trace = trace_shapes(small_model, torch.randn(1, 3, 32, 48), all_blocks=True)
    stages = [s for s, _ in trace]
    assert stages[0] == "input image" and stages[-1] == "logits"
    assert stages.index("block 1: block output") < stages.index("block 2: Q per head")


def test_recording_is_off_outside_the_context():
    with recording() as log:
        record("x", torch.zeros(2, 3))
    record("ignored", torch.zeros(1))
    assert log == [("x", (2, 3))]


def test_shape_table_and_count_parameters(small_model):
    table = shape_table([("patch tokens", (2, 196, 768))])
    assert table.splitlines()[-1] == "| patch tokens | B × 196 × 768 |"
    total = sum(p.numel() for p in small_model.parameters())
    assert count_parameters(small_model) == total
    small_model.head.requires_grad_(False)
    assert count_parameters(small_model, trainable_only=True) == total - 32 * 7 - 7
