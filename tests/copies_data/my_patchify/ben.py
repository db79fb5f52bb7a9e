# Independent: einops.rearrange.
def my_patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P·P), row-major over the grid, (c, p_h, p_w) inside a token."""
    from einops import rearrange

    _, _, H, W = images.shape
    assert H % patch_size == 0 and W % patch_size == 0, "the image must split into whole patches"
    tokens = rearrange(images, "b c (gh ph) (gw pw) -> b (gh gw) (c ph pw)", ph=patch_size, pw=patch_size)
    return tokens
