"""Running a trained ViT at another image size: same patch size, more (or fewer) patches, resampled positions."""

from __future__ import annotations

import dataclasses

from vit_edu._checks import pair
from vit_edu.model import VisionTransformer
from vit_edu.position import interpolate_pos_embed
from vit_edu.relative import resize_bias_table


def change_resolution(model: VisionTransformer, image_size: int | tuple[int, int]) -> VisionTransformer:
    """A copy of ``model`` for ``image_size`` inputs: every weight kept, learned position embeddings resampled.

    The patch size is fixed by the weights, so a larger image means a larger grid. The CLS row is kept as it
    is and only the grid part is interpolated (bicubic, as torchvision does); a sin-cos table is simply
    recomputed for the new grid; relative bias tables have their offsets resampled (bicubic, as Swin does). The
    new image size must divide by the patch size (``ValueError`` otherwise).
    """
    config = dataclasses.replace(model.config, image_size=pair(image_size, "image_size"))
    resized = VisionTransformer(config)
    state = dict(model.state_dict())
    if config.pos_embed == "learned":
        state["pos_embed.embedding"] = interpolate_pos_embed(
            state["pos_embed.embedding"], config.grid_size, old_grid=model.config.grid_size,
            num_prefix_tokens=config.num_prefix_tokens,
        )
    elif config.pos_embed == "relative":
        for name in [k for k in state if k.endswith("relative_bias.table")]:
            state[name] = resize_bias_table(state[name], model.config.grid_size, config.grid_size,
                                            config.num_prefix_tokens)
    resized.load_state_dict(state)
    return resized.train(model.training)
