# The published solution: the master notebook's cell, solution markers included.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    # BEGIN SOLUTION
    b, c, h, w = images.shape
    p = patch_size
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, gh, P, gw, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, P, P)
    return x.reshape(b, (h // p) * (w // p), c * p * p)
    # END SOLUTION
