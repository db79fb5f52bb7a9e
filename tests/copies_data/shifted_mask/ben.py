# Independent: Swin's recipe, regions labelled by slices, windows cut by reshape and permute.
def shifted_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    H, W = grid
    mh, mw = window
    sh, sw = shift
    img = torch.zeros(H, W)
    cnt = 0
    for hs in (slice(0, -mh), slice(-mh, -sh), slice(-sh, None)):
        for ws in (slice(0, -mw), slice(-mw, -sw), slice(-sw, None)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.reshape(H // mh, mh, W // mw, mw).permute(0, 2, 1, 3).reshape(-1, mh * mw)
    return win.unsqueeze(1) == win.unsqueeze(2)
