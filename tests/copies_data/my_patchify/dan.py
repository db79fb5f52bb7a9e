# Independent: explicit loops over the grid.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    B, C, H, W = images.shape
    P = patch_size
    tokens = []
    for top in range(0, H, P):
        for left in range(0, W, P):
            patch = images[:, :, top:top + P, left:left + P]  # (B, C, P, P)
            tokens.append(patch.reshape(B, C * P * P))
    return torch.stack(tokens, dim=1)
