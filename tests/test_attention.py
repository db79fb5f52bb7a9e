import pytest
import torch
import torch.nn.functional as F

from vit_edu import MultiHeadSelfAttention, attention_weights


def test_explicit_path_equals_sdpa_path():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(32, 4).eval()
    x = torch.randn(2, 9, 32)
    fast, none = attn(x)
    explicit, weights = attn(x, need_weights=True)
    assert none is None
    assert weights.shape == (2, 4, 9, 9)
    torch.testing.assert_close(explicit, fast, atol=1e-6, rtol=1e-5)


def test_weights_are_softmax_of_scaled_scores_without_mask():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)
    w = attention_weights(q, k)
    expected = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1)
    torch.testing.assert_close(w, expected)
    assert (w > 0).all()  # no causal mask: every token sees every token
    v = torch.randn(2, 3, 5, 8)
    torch.testing.assert_close(w @ v, F.scaled_dot_product_attention(q, k, v))


def test_qkv_layout_is_q_then_k_then_v_by_heads():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, 2)
    x = torch.randn(1, 3, 8)
    _, weights = attn(x, need_weights=True)
    w_q, w_k = attn.qkv.weight[:8], attn.qkv.weight[8:16]
    q = (x @ w_q.T).reshape(1, 3, 2, 4).transpose(1, 2)
    k = (x @ w_k.T).reshape(1, 3, 2, 4).transpose(1, 2)
    torch.testing.assert_close(weights, attention_weights(q, k))


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="embed_dim 30 is not divisible by num_heads 4"):
        MultiHeadSelfAttention(30, 4)
    attn = MultiHeadSelfAttention(32, 4)
    with pytest.raises(ValueError, match="token width 16 does not match the attention width 32"):
        attn(torch.zeros(1, 5, 16))
    with pytest.raises(ValueError, match=r"3 dimensions \(B, S, D\), got 2"):
        attn(torch.zeros(5, 32))
