import pytest
import torch

from vit_edu import add_position_embedding, prepend_cls


def test_prepend_cls_shares_one_vector_across_the_batch():
    tokens = torch.randn(3, 4, 6)
    cls = torch.randn(1, 1, 6)
    out = prepend_cls(tokens, cls)
    assert out.shape == (3, 5, 6)
    for b in range(3):
        assert torch.equal(out[b, 0], cls[0, 0])
        assert torch.equal(out[b, 1:], tokens[b])


def test_position_embedding_is_added_not_concatenated():
    tokens, pos = torch.randn(2, 197, 768), torch.randn(1, 197, 768)
    out = add_position_embedding(tokens, pos)
    assert out.shape == (2, 197, 768)
    torch.testing.assert_close(out, tokens + pos)


def test_off_by_one_position_embedding_says_why():
    with pytest.raises(ValueError, match=r"196 positions but the sequence has 197 tokens \(off by one.*CLS"):
        add_position_embedding(torch.zeros(1, 197, 8), torch.zeros(1, 196, 8))
    with pytest.raises(ValueError, match="width 4 does not match token width 8"):
        add_position_embedding(torch.zeros(1, 5, 8), torch.zeros(1, 5, 4))


def test_cls_width_mismatch_says_why():
    with pytest.raises(ValueError, match="CLS token width 512 does not match token width 768"):
        prepend_cls(torch.zeros(1, 196, 768), torch.zeros(1, 1, 512))
    with pytest.raises(ValueError, match=r"cls_token must have shape \(1, 1, D\)"):
        prepend_cls(torch.zeros(1, 196, 768), torch.zeros(2, 1, 768))
