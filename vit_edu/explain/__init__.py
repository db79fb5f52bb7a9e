"""Reading a trained ViT: CLS attention, attention rollout, occlusion, localisation scores, attention distance,
position similarity, the logit lens, the CLS token block by block and each patch's contribution to it, occlusion
scored through the logits (chapters 10 and 11); the learned patch-embedding filters (chapter 3), attention
against raw pixel similarity (chapter 5), block ablations by zero and by mean (chapter 7), effective receptive fields
and shift tests against a CNN (chapter 9).

These are measurements, not explanations. Attention weights say how tokens are mixed inside one layer; what the
model does with the mixture (values, MLPs, residual paths) is not in them. The localisation score and occlusion
sensitivity turn "the map looks right" into numbers that can be compared with a baseline.
"""

from vit_edu.explain.ablation import ablation_accuracies, drop_updates, mean_updates, update_means
from vit_edu.explain.attention_maps import HEAD_FUSIONS, attention_rollout, cls_attention, fuse_heads
from vit_edu.explain.cls_token import cls_contributions, cls_states
from vit_edu.explain.distances import mean_attention_distance, patch_distances, position_similarity
from vit_edu.explain.filters import embedding_components, grey_share, spatial_roughness
from vit_edu.explain.localisation import localisation_score, object_fraction, occlusion_sensitivity
from vit_edu.explain.logit_lens import logit_lens
from vit_edu.explain.occlusion import logit_margin, occlusion_logits
from vit_edu.explain.receptive_field import (attention_row_variation, cnn_stage_outputs, effective_receptive_field,
                                             input_gradient_maps, mean_total_variation, receptive_field_stats,
                                             vit_block_outputs)
from vit_edu.explain.shifts import (equivariance_error, prediction_changes, shift_images, unmoved_error,
                                    with_circular_padding)
from vit_edu.explain.similarity import attention_vs_pixel_similarity, spearman_rows

__all__ = [
    "HEAD_FUSIONS",
    "ablation_accuracies",
    "attention_rollout",
    "attention_row_variation",
    "attention_vs_pixel_similarity",
    "cls_attention",
    "cls_contributions",
    "cls_states",
    "cnn_stage_outputs",
    "drop_updates",
    "effective_receptive_field",
    "embedding_components",
    "equivariance_error",
    "fuse_heads",
    "grey_share",
    "input_gradient_maps",
    "localisation_score",
    "logit_lens",
    "logit_margin",
    "mean_attention_distance",
    "mean_total_variation",
    "mean_updates",
    "object_fraction",
    "occlusion_logits",
    "occlusion_sensitivity",
    "patch_distances",
    "position_similarity",
    "prediction_changes",
    "receptive_field_stats",
    "shift_images",
    "spatial_roughness",
    "spearman_rows",
    "unmoved_error",
    "update_means",
    "vit_block_outputs",
    "with_circular_padding",
]
