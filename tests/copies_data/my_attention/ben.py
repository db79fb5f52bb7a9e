# Independent: einsum, the dtype's minimum instead of -inf.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    scale = 1.0 / math.sqrt(q.size(-1))
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if keep is not None:
        logits = logits.masked_fill(keep[:, None, None, :].logical_not(), torch.finfo(logits.dtype).min)
    attn = logits.softmax(-1)
    return torch.einsum("bhqk,bhkd->bhqd", attn, v), attn
