# Independent: Tensor.unfold twice, permute, view.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    n_rows = images.shape[2] // patch_size
    n_cols = images.shape[3] // patch_size
    grid = images.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)  # (B, C, gh, gw, P, P)
    grid = grid.permute(0, 2, 3, 1, 4, 5).contiguous()
    return grid.view(images.shape[0], n_rows * n_cols, -1)
