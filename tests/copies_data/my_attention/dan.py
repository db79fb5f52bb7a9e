# Independent: helper functions, torch.matmul, the mask as an additive bias.
def _scores(q, k):
    d = q.shape[-1]
    return torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)


def _apply_keep(scores, keep):
    if keep is None:
        return scores
    bias = torch.zeros_like(keep, dtype=scores.dtype).masked_fill(~keep, float("-inf"))
    return scores + bias.unsqueeze(1).unsqueeze(2)  # broadcast over heads and queries


def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    scores = _apply_keep(_scores(q, k), keep)
    weights = torch.softmax(scores, dim=-1)
    out = torch.matmul(weights, v)
    return out, weights
