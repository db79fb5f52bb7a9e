# Independent: torch.roll of a coordinate map, F.unfold into windows.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    ys, xs = torch.meshgrid(torch.arange(grid[0]), torch.arange(grid[1]), indexing="ij")
    ys = torch.roll(ys, shifts=(-shift[0], -shift[1]), dims=(0, 1))
    xs = torch.roll(xs, shifts=(-shift[0], -shift[1]), dims=(0, 1))
    group = torch.stack([ys < shift[0], xs < shift[1]]).float()  # (2, H, W): wrapped down, wrapped right
    cells = F.unfold(group[None], kernel_size=window, stride=window)  # (1, 2·mh·mw, nW)
    cells = cells.view(2, window[0] * window[1], -1).permute(2, 1, 0)  # (nW, mh·mw, 2)
    return (cells[:, :, None, :] == cells[:, None, :, :]).all(dim=-1)
