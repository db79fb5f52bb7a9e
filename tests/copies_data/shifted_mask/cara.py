# Independent: where each rolled token came from, loops over the windows.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    height, width = grid
    wh, ww = window
    from_row = (torch.arange(height) + shift[0]) % height  # original row of each rolled row
    from_col = (torch.arange(width) + shift[1]) % width
    region = (from_row < shift[0]).int()[:, None] * 2 + (from_col < shift[1]).int()[None, :]
    masks = []
    for i in range(0, height, wh):
        for j in range(0, width, ww):
            labels = region[i:i + wh, j:j + ww].flatten()
            masks.append(labels[:, None] == labels[None, :])
    return torch.stack(masks)
