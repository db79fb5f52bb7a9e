"""Part IV: descendants of the classic ViT. Each module takes one idea of a later model and builds it from the
pieces of Parts I–III:

* chapter 14: ``windows`` (Swin's window attention, shifted windows, patch merging) and ``attention_cost`` (what
  global attention costs as the image grows, and what windows save);
* chapter 15: ``distill`` (DeiT's distillation token and loss), with the experiments ``data_efficiency`` and
  ``distill_bench``;
* chapter 16: ``mae`` (masked autoencoder: random masking, encoder on visible tokens, light decoder), with the
  experiment ``mae_pretrain``;
* chapter 17: ``clip`` (a tiny CLIP on captioned shapes) with ``clip_train``, and ``bridge`` (LLaVA's projector
  from patch tokens to a language model's width, on real configurations).

Experiments are scripts (``python -m vit_edu.variants.<name>``) that write the small results shipped in
``vit_edu/checkpoints``; ``make checkpoints`` reruns them."""

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
