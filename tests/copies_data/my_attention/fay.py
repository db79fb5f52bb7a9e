# Copy of dan: helpers renamed and reordered (one after the main function), variables renamed, comments changed.
def mask_out(logits, keep):
    # keys that keep says False get -inf
    if keep is None:
        return logits
    add = torch.zeros_like(keep, dtype=logits.dtype).masked_fill(~keep, float("-inf"))
    return logits + add.unsqueeze(1).unsqueeze(2)


def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    logits = mask_out(similarity(q, k), keep)
    attn = torch.softmax(logits, dim=-1)

    result = torch.matmul(attn, v)
    return result, attn


def similarity(q, k):
    dim = q.shape[-1]
    return torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dim)
