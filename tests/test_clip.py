"""vit_edu.variants.clip: captions true of their images, the contrastive loss as CLIP defines it, zero-shot logic.

Also vit_edu.variants.clip_train's probe and the shipped tiny-CLIP results that chapter 17 reads.
"""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from vit_edu.training import CHECKPOINTS
from vit_edu.variants import clip_train
from vit_edu.variants.clip import (
    COLOURS,
    CONTEXT_LENGTH,
    EOT,
    MAX_LOGIT_SCALE,
    PALETTE,
    SHAPES,
    VOCAB,
    TextEncoder,
    TinyCLIP,
    TinyCLIPConfig,
    all_combos,
    caption,
    causal_mask,
    class_embeddings,
    contrastive_loss,
    make_captioned_shapes,
    prompts,
    task_labels,
    tokenize,
    zero_shot_accuracy,
    zero_shot_probs,
)

SMALL = TinyCLIPConfig(vision_width=32, vision_depth=1, vision_heads=2, text_width=32, text_depth=1, text_heads=2,
                       embed_dim=16)


@pytest.fixture(scope="module")
def data():
    return make_captioned_shapes(64, seed=5)


def test_captions_say_what_the_image_shows(data):
    """The object's pixels have the named colour; the side is where the object is; shapes are vit_edu.data's."""
    from vit_edu.data import make_shapes

    images, labels, masks = make_shapes(64, seed=5)
    assert torch.equal(data.shapes, labels)
    assert torch.equal(data.images[:, :, ~masks.any(0)], images[:, :, ~masks.any(0)])  # the background is untouched
    for i in range(len(data)):
        mean = data.images[i][:, masks[i]].mean(1)
        nearest = min(COLOURS, key=lambda c: (torch.tensor(PALETTE[c]) - mean).norm())
        assert nearest == COLOURS[data.colours[i]]
        cols = masks[i].nonzero()[:, 1].float() + 0.5
        assert (cols.mean() >= 16) == bool(data.sides[i])
    text = data.captions([0])[0]
    assert text.startswith("a ") and SHAPES[data.shapes[0]] in text and COLOURS[data.colours[0]] in text
    assert 0 < data.sizes.float().mean() < 1 and 0 < data.sides.float().mean() < 1  # both words occur


def test_combos_restrict_the_colours():
    held = [("red", "circle"), ("green", "square"), ("blue", "triangle"), ("yellow", "cross")]
    seen = [c for c in all_combos() if c not in held]
    a = make_captioned_shapes(400, seed=1, combos=seen)
    b = make_captioned_shapes(400, seed=1, combos=held)
    pairs_a = {(COLOURS[c], SHAPES[s]) for c, s in zip(a.colours, a.shapes)}
    assert pairs_a == set(seen)
    assert {(COLOURS[c], SHAPES[s]) for c, s in zip(b.colours, b.shapes)} == set(held)
    assert torch.equal(a.combos, a.colours * 4 + a.shapes)
    assert torch.equal(make_captioned_shapes(10, seed=2).images, make_captioned_shapes(10, seed=2).images)
    with pytest.raises(ValueError, match="no colour to the shapes"):
        make_captioned_shapes(10, combos=[("red", "circle")])
    with pytest.raises(ValueError, match="purple"):
        make_captioned_shapes(10, combos=[("purple", "circle")])
    with pytest.raises(ValueError, match="palette"):
        make_captioned_shapes(10, palette="pastel")


def test_palettes_differ_only_in_the_object():
    light, saturated = make_captioned_shapes(20, seed=3), make_captioned_shapes(20, seed=3, palette="saturated")
    assert torch.equal(light.colours, saturated.colours) and torch.equal(light.sizes, saturated.sizes)
    background = light.images == saturated.images
    assert background.any() and not background.all()
    # Light tints: every channel of every tint is at least 0.65, above any background channel (< 0.45 + noise).
    assert min(min(c) for c in PALETTE.values()) >= 0.65


def test_caption_and_tokenize():
    assert caption("circle", "red", "small", "left") == "a small red circle on the left"
    assert caption("cross") == "a cross"
    tokens = tokenize(["a small red circle on the left", "a cross"])
    assert tokens.shape == (2, CONTEXT_LENGTH)
    assert tokens[0].tolist() == [VOCAB.index(w) for w in "a small red circle on the left".split()] + [1]
    assert tokens[1].tolist()[:3] == [VOCAB.index("a"), VOCAB.index("cross"), VOCAB.index(EOT)]
    assert tokens[1, 3:].eq(0).all()
    with pytest.raises(ValueError, match="purple"):
        tokenize(["a purple circle"])
    with pytest.raises(ValueError, match="context_length"):
        tokenize(["a small red circle on the left"], context_length=5)
    with pytest.raises(ValueError, match="list of captions"):
        tokenize("a circle")
    with pytest.raises(ValueError, match="colour"):
        caption("circle", "purple")


def test_contrastive_loss_is_clips_symmetric_cross_entropy():
    torch.manual_seed(0)
    img, txt = torch.randn(6, 8), torch.randn(6, 8)
    scale = torch.tensor(7.0)
    i, t = img / img.norm(dim=1, keepdim=True), txt / txt.norm(dim=1, keepdim=True)
    logits = scale * i @ t.T
    # Written out: -log softmax of the diagonal, over rows and over columns.
    rows = -(logits.diag() - logits.logsumexp(1)).mean()
    cols = -(logits.diag() - logits.logsumexp(0)).mean()
    torch.testing.assert_close(contrastive_loss(img, txt, scale), (rows + cols) / 2)
    # Perfectly matched pairs at a high scale: the loss goes to zero; random ones at scale 0: log B.
    assert contrastive_loss(img, img, 100.0) < 1e-3
    torch.testing.assert_close(contrastive_loss(img, txt, 0.0), torch.tensor(math.log(6)))
    with pytest.raises(ValueError, match="pair up"):
        contrastive_loss(img, txt[:5], scale)


def test_logit_scale_starts_at_clips_temperature_and_is_clamped():
    model = TinyCLIP(SMALL)
    torch.testing.assert_close(model.scale(), torch.tensor(1 / 0.07))
    with torch.no_grad():
        model.logit_scale.fill_(10.0)
    assert model.scale().item() == MAX_LOGIT_SCALE


def test_text_encoder_is_causal_and_reads_the_end_of_text_token():
    torch.manual_seed(0)
    enc = TextEncoder(SMALL).eval()
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    short = tokenize(["a red circle"])
    longer = short.clone()
    longer[0, 4:] = VOCAB.index("left")  # change only what comes after the end-of-text token
    torch.testing.assert_close(enc(short), enc(longer))
    assert not torch.allclose(enc(tokenize(["a red circle"])), enc(tokenize(["a blue circle"])))
    with pytest.raises(ValueError, match="end-of-text"):
        enc(torch.zeros(1, CONTEXT_LENGTH, dtype=torch.long))


def test_model_shapes_and_unit_embeddings(data):
    torch.manual_seed(0)
    model = TinyCLIP(SMALL).eval()
    tokens = tokenize(data.captions(range(5)))
    assert model(data.images[:5], tokens).shape == (5, 5)
    emb = model.encode_image(data.images[:5])
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(5))
    assert model.image_features(data.images[:5]).shape == (5, SMALL.vision_width)


def test_zero_shot_picks_the_closest_prompt_set(data):
    torch.manual_seed(0)
    model = TinyCLIP(SMALL).eval()
    names, sets = prompts("combination")
    assert len(names) == 16 and sets[0] == ["a red circle"]
    assert prompts("shape")[1][0] == [f"a {c} circle" for c in COLOURS]
    classes = class_embeddings(model, sets)
    torch.testing.assert_close(classes.norm(dim=1), torch.ones(16))
    probs = zero_shot_probs(model, data.images, classes)
    torch.testing.assert_close(probs.sum(1), torch.ones(len(data)))
    expected = (model.encode_image(data.images) @ classes.T).argmax(1) == task_labels(data, "combination")
    assert zero_shot_accuracy(model, data, "combination") == pytest.approx(expected.float().mean().item())
    with pytest.raises(ValueError, match="task"):
        prompts("size")
    with pytest.raises(ValueError, match="prompt_sets"):
        class_embeddings(model, ["a red circle"])


def test_a_few_steps_lower_the_loss(data):
    torch.manual_seed(0)
    model = TinyCLIP(SMALL)
    cfg = clip_train.RUN.__class__(steps=30, batch_size=32, lr=2e-3, warmup_steps=0, train_size=64, eval_every=30)
    losses = clip_train.train_clip(model, data, cfg)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5


def test_linear_probe_separates_separable_features():
    torch.manual_seed(0)
    y = torch.arange(200) % 4
    x = F.one_hot(y, 4).float() * 3 + 0.1 * torch.randn(200, 4)
    assert (clip_train.linear_probe(x, y, x, 4) == y).all()


def test_held_out_combinations_are_a_diagonal():
    assert len(clip_train.HELD_OUT) == 4 and len(clip_train.SEEN) == 12
    assert {c for c, _ in clip_train.HELD_OUT} == set(COLOURS) and {s for _, s in clip_train.HELD_OUT} == set(SHAPES)


def test_shipped_results():
    """The shipped run: ≥ 3 seeds, one thread, every accuracy a fraction, and the model loads and matches its record."""
    result = json.loads((CHECKPOINTS / "tiny_clip.json").read_text())
    assert len(result["seeds"]) >= 3 and result["threads"] == 1
    assert [list(c) for c in clip_train.HELD_OUT] == result["held_out"]
    for rec in result["seeds"]:
        for kind in ("zero_shot", "probe"):
            for task in clip_train.TASKS:
                assert set(rec[kind][task]) == {"seen", "held_out"}
                assert all(0 <= v <= 1 for v in rec[kind][task].values())
    path = CHECKPOINTS / "tiny_clip.pt"
    assert path.stat().st_size < 2e6
    model, record = clip_train.load_model(path)
    assert record["seed"] == result["seeds"][0]["seed"]
    seen = make_captioned_shapes(clip_train.TEST_SIZE, seed=2, combos=clip_train.SEEN)  # seed 0's seen test set
    assert zero_shot_accuracy(model, seen, "colour") == pytest.approx(record["zero_shot"]["colour"]["seen"], abs=0.01)
