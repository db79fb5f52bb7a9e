# Unanswered: the template as handed out.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    ...
