# Independent: heads flattened into the batch, torch.bmm, torch.where.
def my_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of S_q queries over S_k keys, with an optional key mask; and the weights."""
    *lead, n_q, d = q.shape
    n_k = k.shape[-2]
    qf, kf, vf = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    sim = torch.bmm(qf, kf.transpose(1, 2)).view(*lead, n_q, n_k) * d ** -0.5
    if keep is not None:
        sim = torch.where(keep.view(keep.shape[0], 1, 1, n_k), sim, sim.new_tensor(float("-inf")))
    p = F.softmax(sim, dim=-1)
    return (p.reshape(-1, n_q, n_k) @ vf).view(*lead, n_q, -1), p
