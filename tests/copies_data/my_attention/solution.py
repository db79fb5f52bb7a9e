# The published solution: the master notebook's cell, solution markers included.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    # BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (B, h, S_q, S_k)
    if keep is not None:
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))  # (B, 1, 1, S_k) over heads, rows
    weights = scores.softmax(dim=-1)
    return weights @ v, weights
    # END SOLUTION
