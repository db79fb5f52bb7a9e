"""Part IV: descendants of the classic ViT. Each module takes one idea of a later model and builds it from the
pieces of Parts I–III: ``windows`` is Swin's window attention, shifted windows and patch merging (chapter 14),
``attention_cost`` measures what global attention costs as the image grows, and what windows save."""

from vit_edu.variants.windows import (
    PatchMerging,
    SwinBlock,
    SwinBlockConfig,
    WindowAttention,
    cyclic_shift,
    global_window_mask,
    masked_self_attention,
    merge_neighbours,
    receptive_field,
    region_labels,
    shifted_window_mask,
    window_groups,
    window_partition,
    window_reverse,
)

__all__ = [
    "PatchMerging",
    "SwinBlock",
    "SwinBlockConfig",
    "WindowAttention",
    "cyclic_shift",
    "global_window_mask",
    "masked_self_attention",
    "merge_neighbours",
    "receptive_field",
    "region_labels",
    "shifted_window_mask",
    "window_groups",
    "window_partition",
    "window_reverse",
]
