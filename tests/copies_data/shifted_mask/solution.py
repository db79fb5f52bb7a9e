# The published solution: the master notebook's cell, solution markers included.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    # BEGIN SOLUTION
    (h, w), (sh, sw) = grid, shift
    wrapped_rows = torch.arange(h) >= h - sh  # (H,): the last sh rows of the rolled grid came from the top
    wrapped_cols = torch.arange(w) >= w - sw  # (W,): the last sw columns came from the left edge
    side = 2 * wrapped_rows[:, None].long() + wrapped_cols[None, :].long()  # (H, W): 4 kinds of token
    per_window = partition_windows(side.reshape(1, h * w, 1), grid, window)[..., 0]  # (nW, mh·mw)
    return per_window[:, :, None] == per_window[:, None, :]  # same kind <=> may attend
    # END SOLUTION
