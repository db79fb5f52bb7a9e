"""Reading a trained ViT: CLS attention, attention rollout, occlusion, localisation scores, attention distance,
position similarity, the logit lens (chapters 10 and 11); the learned patch-embedding filters (chapter 3), block
ablations (chapter 7), effective receptive fields and shift tests against a CNN (chapter 9).

These are measurements, not explanations. Attention weights say how tokens are mixed inside one layer; what the
model does with the mixture (values, MLPs, residual paths) is not in them. The localisation score and occlusion
sensitivity turn "the map looks right" into numbers that can be compared with a baseline.
"""

from vit_edu.explain.ablation import ablation_accuracies, drop_updates
from vit_edu.explain.attention_maps import HEAD_FUSIONS, attention_rollout, cls_attention, fuse_heads
from vit_edu.explain.distances import mean_attention_distance, patch_distances, position_similarity
from vit_edu.explain.filters import embedding_components, grey_share, spatial_roughness
from vit_edu.explain.localisation import localisation_score, object_fraction, occlusion_sensitivity
from vit_edu.explain.logit_lens import logit_lens
from vit_edu.explain.receptive_field import (attention_row_variation, cnn_stage_outputs, effective_receptive_field,
                                             input_gradient_maps, mean_total_variation, receptive_field_stats,
                                             vit_block_outputs)
from vit_edu.explain.shifts import equivariance_error, prediction_changes, shift_images, with_circular_padding

__all__ = [
    "HEAD_FUSIONS",
    "ablation_accuracies",
    "attention_rollout",
    "attention_row_variation",
    "cls_attention",
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
    "mean_attention_distance",
    "mean_total_variation",
    "object_fraction",
    "occlusion_sensitivity",
    "patch_distances",
    "position_similarity",
    "prediction_changes",
    "receptive_field_stats",
    "shift_images",
    "spatial_roughness",
    "vit_block_outputs",
    "with_circular_padding",
]
