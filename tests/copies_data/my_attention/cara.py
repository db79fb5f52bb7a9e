# Independent: explicit loops over batch and heads.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    out = torch.zeros(B, H, Sq, v.shape[-1])
    weights = torch.zeros(B, H, Sq, Sk)
    for b in range(B):
        for h in range(H):
            s = q[b, h] @ k[b, h].T / D ** 0.5
            if keep is not None:
                s[:, ~keep[b]] = float("-inf")
            w = torch.softmax(s, dim=-1)
            weights[b, h] = w
            out[b, h] = w @ v[b, h]
    return out, weights
