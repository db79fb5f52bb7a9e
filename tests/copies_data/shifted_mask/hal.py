# Unanswered: the signature re-wrapped by a formatter, pass instead of the ellipsis.
def shifted_mask(
    grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]
) -> torch.Tensor:
    """(nW, mh·mw, mh·mw) booleans: which query-key pairs of each window of the rolled grid may attend."""
    pass
