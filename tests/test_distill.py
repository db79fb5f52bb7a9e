"""vit_edu.variants.distill: the distillation token's model, the DeiT loss (hard and soft), the teacher's logits and a
short distilled training run; and the shapes of the shipped results that chapter 15 reads."""

import dataclasses
import json
import math

import pytest
import torch
import torch.nn.functional as F

from vit_edu.config import ViTConfig
from vit_edu.data import ImageSplit
from vit_edu.model import VisionTransformer
from vit_edu.training import CHECKPOINTS, TrainConfig
from vit_edu.variants.distill import (
    UNLABELLED,
    DistilledViT,
    distillation_loss,
    label_term,
    soft_distillation_term,
    teacher_logits,
    train_distilled,
)
from vit_edu.variants.distill_bench import GOAL, MODELS, STUDENT

TINY = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=2, mlp_dim=32)


def model() -> DistilledViT:
    torch.manual_seed(0)
    m = DistilledViT(TINY)
    for head in (m.head, m.head_dist):  # heads start at zero; give them weights so the two heads differ
        torch.nn.init.normal_(head.weight, std=0.5)
    return m


def test_two_prefix_tokens_and_two_heads():
    m, x = model(), torch.rand(5, 3, 16, 16)
    assert m.seq_len == TINY.num_patches + 2 == 6
    assert m.pos_embed.embedding.shape == (1, 6, 16)
    m.train()
    cls_logits, dist_logits = m(x)
    assert cls_logits.shape == dist_logits.shape == (5, 3)
    assert not torch.allclose(cls_logits, dist_logits)
    m.eval()
    heads = m.forward_heads(x)
    torch.testing.assert_close(m(x), (heads[0] + heads[1]) / 2)  # test time: the average of the two heads
    hidden, attentions = m.forward_layers(x)
    assert hidden[-1].shape == (5, 6, 16) and attentions[0].shape == (5, 2, 6, 6)


def test_a_fresh_student_predicts_zero_logits_and_has_one_token_more_than_the_vit():
    torch.manual_seed(0)
    student, vit = DistilledViT(TINY).eval(), VisionTransformer(TINY)
    assert torch.equal(student(torch.rand(2, 3, 16, 16)), torch.zeros(2, 3))
    extra = sum(p.numel() for p in student.parameters()) - sum(p.numel() for p in vit.parameters())
    assert extra == 16 + 16 + (16 * 3 + 3)  # dist token, its position row, the second head


def test_the_distillation_token_is_read_by_its_own_head():
    """Changing the distillation head changes only the distillation logits."""
    m, x = model(), torch.rand(2, 3, 16, 16)
    before = m.forward_heads(x)
    with torch.no_grad():
        m.head_dist.bias += 1.0
    after = m.forward_heads(x)
    torch.testing.assert_close(after[0], before[0])
    torch.testing.assert_close(after[1], before[1] + 1.0)


def test_sincos_and_no_position_embedding():
    import dataclasses

    for kind in ("sincos", "none"):
        m = DistilledViT(dataclasses.replace(TINY, pos_embed=kind)).eval()
        assert m(torch.rand(1, 3, 16, 16)).shape == (1, 3)
    table = DistilledViT(dataclasses.replace(TINY, pos_embed="sincos")).pos_embed.embedding
    assert table.shape == (1, 6, 16) and torch.equal(table[0, :2], torch.zeros(2, 16))


def test_mean_pooling_is_refused():
    import dataclasses

    with pytest.raises(ValueError, match="pool='cls'"):
        DistilledViT(dataclasses.replace(TINY, pool="mean"))


def logits(seed=0, b=6, k=4):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, k, generator=g) * 2, torch.randn(b, k, generator=g) * 2, torch.randint(0, k, (b,), generator=g),
            torch.randn(b, k, generator=g) * 3)


def test_hard_distillation_is_half_label_half_teacher_argmax():
    c, d, y, t = logits()
    expected = 0.5 * F.cross_entropy(c, y) + 0.5 * F.cross_entropy(d, t.argmax(1))
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="hard"), expected)
    # A teacher that always agrees with the labels turns hard distillation into plain cross-entropy.
    teacher = F.one_hot(y, 4).float() * 10
    torch.testing.assert_close(distillation_loss(c, c, y, teacher, kind="hard"), F.cross_entropy(c, y))


def test_soft_distillation_matches_the_formula():
    c, d, y, t = logits(1)
    for tau in (0.5, 1.0, 3.0):
        p_t = F.softmax(t / tau, 1)
        kl = (p_t * (p_t.log() - F.log_softmax(d / tau, 1))).sum(1).mean()
        expected = 0.3 * F.cross_entropy(c, y) + 0.7 * tau**2 * kl
        torch.testing.assert_close(distillation_loss(c, d, y, t, kind="soft", alpha=0.7, tau=tau), expected)
    assert soft_distillation_term(t, t, 2.0).abs() < 1e-6  # a student equal to its teacher pays nothing
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="soft", alpha=0.0), F.cross_entropy(c, y))


def test_no_teacher_is_the_mean_of_two_label_losses():
    c, d, y, t = logits(2)
    expected = (F.cross_entropy(c, y) + F.cross_entropy(d, y)) / 2
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="none"), expected)


def test_unlabelled_rows_learn_from_the_teacher_only():
    """Rows labelled UNLABELLED add only the teacher term; every image weighs 1/B in the label terms."""
    c, d, y, t = logits(4)
    y = y.clone()
    y[3:] = UNLABELLED  # the first 3 of 6 images are labelled: the label terms are 3/6 of their labelled mean
    kl = soft_distillation_term(d, t, 3.0)
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="soft", alpha=0.1, tau=3.0),
                               0.9 * F.cross_entropy(c[:3], y[:3]) / 2 + 0.1 * kl)
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="hard"),
                               0.5 * F.cross_entropy(c[:3], y[:3]) / 2 + 0.5 * F.cross_entropy(d, t.argmax(1)))
    torch.testing.assert_close(distillation_loss(c, d, y, t, kind="none"),
                               (F.cross_entropy(c[:3], y[:3]) + F.cross_entropy(d[:3], y[:3])) / 4)
    torch.testing.assert_close(label_term(c, y), F.cross_entropy(c[:3], y[:3], reduction="sum") / 6)
    # A batch with no label at all: the CLS head gets no gradient, the distillation head still learns.
    c, d = c.clone().requires_grad_(), d.clone().requires_grad_()
    none = torch.full_like(y, UNLABELLED)
    assert label_term(c, none) == 0.0
    distillation_loss(c, d, none, t, kind="hard").backward()
    assert torch.count_nonzero(c.grad) == 0 and torch.count_nonzero(d.grad) > 0
    with pytest.raises(ValueError, match=r"labels must be class indices 0..3 or -1 \(unlabelled\), got \[-2, 4\]"):
        distillation_loss(c, d, torch.tensor([0, 1, -2, 4, 0, 0]), t)


def test_with_alpha_one_the_cls_head_gets_no_gradient():
    c, d, y, t = (v.requires_grad_() if v.is_floating_point() else v for v in logits(3))
    distillation_loss(c, d, y, t, kind="soft", alpha=1.0, tau=2.0).backward()
    assert c.grad is None or torch.count_nonzero(c.grad) == 0
    assert torch.count_nonzero(d.grad) > 0
    assert t.grad is None  # the teacher is a constant target


@pytest.mark.parametrize("kwargs, message", [({"kind": "medium"}, "kind must be"), ({"alpha": 1.5}, "alpha must"),
                                             ({"kind": "soft", "tau": 0.0}, "tau must be > 0")])
def test_bad_settings_are_named(kwargs, message):
    c, d, y, t = logits()
    with pytest.raises(ValueError, match=message):
        distillation_loss(c, d, y, t, **kwargs)


def test_mismatched_shapes_are_named():
    c, d, y, t = logits()
    with pytest.raises(ValueError, match="teacher_logits has shape"):
        distillation_loss(c, d, y, t[:, :3])
    with pytest.raises(ValueError, match="5 labels for 6 rows"):
        distillation_loss(c, d, y[:5], t)
    with pytest.raises(ValueError, match="cls_logits must have 2 dimensions"):
        distillation_loss(c[0], d, y, t)


def test_teacher_logits_are_the_eval_mode_outputs_and_keep_the_mode():
    torch.manual_seed(0)
    teacher = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                  torch.nn.LazyLinear(3))
    x = torch.rand(7, 3, 16, 16)
    teacher(x)  # initialise the lazy layer; BatchNorm's running statistics move
    teacher.train()
    out = teacher_logits(teacher, x, batch_size=3)
    assert teacher.training
    teacher.eval()
    with torch.no_grad():
        torch.testing.assert_close(out, teacher(x))


def test_short_distilled_training_learns_the_teacher():
    """Three separable classes (bright red, green or blue images), 60 steps: the student ends above chance."""
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (96,), generator=g)
    images = 0.2 * torch.rand(96, 3, 16, 16, generator=g)
    images[torch.arange(96), labels] += 0.8
    data = ImageSplit(images, labels, ("r", "g", "b"))
    targets = F.one_hot(labels, 3).float() * 5  # a perfect teacher
    torch.manual_seed(0)
    student = DistilledViT(TINY)
    token_before = student.dist_token.detach().clone()
    cfg = TrainConfig(steps=60, batch_size=16, lr=3e-3, warmup_steps=5, label_smoothing=0.0, train_size=96,
                      eval_every=30)
    history = train_distilled(student, targets, data, data, cfg, kind="hard")
    assert [row["step"] for row in history] == [30, 60]
    assert history[-1]["val_accuracy"] > 0.9 and not student.training
    assert not torch.equal(student.dist_token, token_before)  # the token learns
    with pytest.raises(ValueError, match="targets must have shape"):
        train_distilled(student, targets[:10], data, data, cfg)
    with pytest.raises(ValueError, match="mix='none'"):
        train_distilled(student, targets, data, data, TrainConfig(mix="cutmix", train_size=96))
    with pytest.raises(ValueError, match="student must be a DistilledViT"):
        train_distilled(VisionTransformer(TINY), targets, data, data, cfg)


def test_shipped_data_efficiency_results():
    from vit_edu.variants.data_efficiency import DISTILLED, MODELS, SOFT, SOFT_EVEN

    data = json.loads((CHECKPOINTS / "data_efficiency.json").read_text())
    setting, runs = data["setting"], data["runs"]
    assert len(setting["seeds"]) >= 3 and [r["seed"] for r in runs] == setting["seeds"]
    assert SOFT == {"alpha": 0.1, "tau": 3.0} and SOFT_EVEN == {"alpha": 0.5, "tau": 3.0} and setting["threads"] == 1
    assert setting["distillation"] == {name: {"kind": kind, **options} for name, (kind, options) in DISTILLED.items()}
    for added in setting.get("added", []):  # students added by a later run, with that run's reruns of shipped ones
        assert added["models"] and added["total_seconds"] > 0
        assert all(len(results) == len(runs) for results in added["rerun"].values())
    for run in runs:
        assert list(run["models"]) == list(MODELS)
def test_data_efficiency_runs_every_arm_on_a_tiny_budget(tmp_path):
    """The experiment end to end, shrunk: every arm trains, and the teacher is scored on the student's images."""
    from vit_edu.variants.data_efficiency import MODELS, main

    out = tmp_path / "eff.json"
    main(["--seeds", "0", "--labelled", "32", "--unlabelled", "32", "--teacher-size", "64", "--vit-steps", "2",
          "--cnn-steps", "2", "--test-size", "8", "--out", str(out)])
    data = json.loads(out.read_text())
    (run,) = data["runs"]
    assert list(run["models"]) == list(MODELS) and set(data["summary"]) == set(MODELS)
    assert all(0 <= r["accuracy"] <= 1 and r["seconds"] >= 0 for r in run["models"].values())
    assert 0 <= run["teacher"]["agreement_labelled"] <= 1 and run["teacher"]["images"] == 64
    with pytest.raises(SystemExit):
        main(["--labelled", "8", "--out", str(out)])  # fewer labelled images than a batch


def test_shipped_bench_result_is_consistent():
    data = json.loads((CHECKPOINTS / "distill_bench.json").read_text())
    setting, runs = data["setting"], data["runs"]
    assert [run["seed"] for run in runs] == setting["seeds"] and len(runs) >= 3
    assert setting["goal_accuracy"] == GOAL == 0.995
    assert setting["student"] == {"embed_dim": STUDENT.embed_dim, "depth": STUDENT.depth,
                                  "num_heads": STUDENT.num_heads, "mlp_dim": STUDENT.mlp_dim}
    for run in runs:
        res, goal = run["results"], run["goal"]
        assert set(res) == set(MODELS)
        assert res["CNN"]["steps"] == setting["cnn_steps"]
        assert res["narrow ViT"]["parameters"] < res["ViT"]["parameters"]
        assert res["distilled ViT"]["parameters"] > res["narrow ViT"]["parameters"]  # the token and the second head
        assert goal["accuracy_met"] == (res["distilled ViT"]["accuracy"] >= GOAL)
        assert goal["time_met"] == (res["distilled ViT"]["seconds"] <= res["CNN"]["seconds"])
        assert goal["met"] == (goal["accuracy_met"] and goal["time_met"])


def test_bench_runs_every_model_on_a_tiny_budget(monkeypatch, tmp_path):
    """The bench end to end, shrunk: a few steps on a few images, and the JSON the chapter reads."""
    from vit_edu.variants import distill_bench

    small = dataclasses.replace(distill_bench.RECIPE, train_size=64, warmup_steps=1, batch_size=8)
    monkeypatch.setattr(distill_bench, "RECIPE", small)
    monkeypatch.setattr(distill_bench, "seconds_per_step", lambda model, train_set, cfg: 1.0)
    out = tmp_path / "bench.json"
    distill_bench.main(["--seeds", "0", "--cnn-steps", "3", "--out", str(out)])
    (run,) = json.loads(out.read_text())["runs"]
    assert set(run["results"]) == set(MODELS)
    assert all(r["steps"] == 3 and 0 <= r["accuracy"] <= 1 for r in run["results"].values())
    assert 0 <= run["teacher_agreement"] <= 1
    assert run["teacher_seconds"] >= 0 and set(run["goal"]) == {"accuracy_met", "time_met", "met"}


def _result_file(path, seeds, vit_steps=800, models=None, seconds=1.0):
    """A results file as data_efficiency writes it, with made-up accuracies, for the merge."""
    from vit_edu.variants.data_efficiency import DISTILLED, MODELS, summarise

    models = MODELS if models is None else models
    runs = [{"seed": s, "teacher": {"accuracy": 1.0, "agreement_labelled": 1.0, "agreement_unlabelled": 0.9},
             "models": {m: {"accuracy": 0.5 + 0.01 * s + 0.05 * MODELS.index(m), "seconds": seconds} for m in models}}
            for s in seeds]
    setting = {"labelled": 500, "unlabelled": 4500, "teacher_size": 15000, "seeds": seeds, "vit_steps": vit_steps,
               "cnn_steps": 150, "test_size": 1000, "batch_size": 32, "threads": 1, "torch": "x",
               "distillation": {m: {"kind": DISTILLED[m][0], **DISTILLED[m][1]} for m in models if m in DISTILLED},
               "total_seconds": 10.0}
    path.write_text(json.dumps({"setting": setting, "runs": runs, "summary": summarise(runs)}))
    return path


def test_adding_a_student_keeps_the_file_and_records_the_reruns(tmp_path):
    """add_to: the new student joins each seed in MODELS order; the file's own results, seconds included, stay, and
    the run's other students are recorded as reruns."""
    from vit_edu.variants.data_efficiency import MODELS, add_to

    new_arm, check_arm = "distilled (soft, α = 0.5)", "distilled (soft)"
    base = json.loads(_result_file(tmp_path / "base.json", [0, 1, 2], models=MODELS[:-1]).read_text())
    run = _result_file(tmp_path / "new.json", [0, 1, 2], models=(check_arm, new_arm), seconds=7.0)
    run = json.loads(run.read_text())
    for r in run["runs"]:
        r["models"][check_arm]["accuracy"] += 0.01  # another CPU: the rerun moved
    run["setting"]["cpu_capability"] = "AVX2"
    setting, runs = add_to(base, run)
    for joined, old, new in zip(runs, base["runs"], run["runs"]):
        assert list(joined["models"]) == list(MODELS)
        assert {m: joined["models"][m] for m in old["models"]} == old["models"]  # the file's results stay
        assert joined["models"][new_arm] == new["models"][new_arm] and joined["teacher"] == old["teacher"]
    rerun = {check_arm: [r["models"][check_arm] for r in run["runs"]]}  # recorded, not merged
    assert setting["added"] == [{"models": [new_arm], "rerun": rerun, "cpu_capability": "AVX2", "torch": "x",
                                 "total_seconds": 10.0}]
    assert set(setting["distillation"]) == {"distilled (hard)", check_arm, new_arm}
    assert setting["total_seconds"] == base["setting"]["total_seconds"]

    moved = json.loads(json.dumps(run))
    moved["runs"][0]["teacher"]["agreement_unlabelled"] = 0.5
    with pytest.raises(ValueError, match="seed 0: the teacher did not reproduce"):
        add_to(base, moved)
    other = json.loads(_result_file(tmp_path / "o.json", [0, 1], models=(new_arm,)).read_text())
    with pytest.raises(ValueError, match="another setting"):
        add_to(base, other)  # other seeds
    with pytest.raises(ValueError, match="nothing to add"):
        add_to(base, json.loads(_result_file(tmp_path / "n.json", [0, 1, 2], models=(check_arm,)).read_text()))


def test_one_seed_names_unknown_students():
    from vit_edu.variants.data_efficiency import Setting, one_seed

    with pytest.raises(ValueError, match=r"unknown students \['distilled \(warm\)'\]"):
        one_seed(Setting(labelled=32, unlabelled=0, teacher_size=32, vit_steps=2, cnn_steps=2, test_size=4), 0,
                 ("ViT", "distilled (warm)"))


def test_models_and_add_to_from_the_command_line(tmp_path):
    """Training one student with --add-to a file of the others gives the file of all of them (tiny budget)."""
    from vit_edu.variants.data_efficiency import MODELS, main

    tiny = ["--seeds", "0", "--labelled", "32", "--unlabelled", "32", "--teacher-size", "64", "--vit-steps", "2",
            "--cnn-steps", "2", "--test-size", "8"]
    main([*tiny, "--models", "ViT", "distilled (hard)", "--out", str(tmp_path / "a.json")])
    main([*tiny, "--models", "distilled (hard)", "distilled (soft)", "--add-to", str(tmp_path / "a.json"),
          "--out", str(tmp_path / "b.json")])
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert list(a["runs"][0]["models"]) == ["ViT", "distilled (hard)"]
    assert list(b["runs"][0]["models"]) == [m for m in MODELS if m in ("ViT", "distilled (hard)", "distilled (soft)")]
    assert b["runs"][0]["models"]["distilled (hard)"] == a["runs"][0]["models"]["distilled (hard)"]
    added = b["setting"]["added"][0]
    assert added["models"] == ["distilled (soft)"] and set(b["summary"]) == set(b["runs"][0]["models"])
    # One thread, same machine, same seed: the rerun is the same model.
    assert added["rerun"]["distilled (hard)"][0]["accuracy"] == a["runs"][0]["models"]["distilled (hard)"]["accuracy"]


def test_merging_seed_files_equals_one_run_of_all_seeds(tmp_path):
    from vit_edu.variants.data_efficiency import main

    a, b = _result_file(tmp_path / "a.json", [0]), _result_file(tmp_path / "b.json", [1, 2])
    main(["--merge", str(a), str(b), "--out", str(tmp_path / "m.json")])
    merged = json.loads((tmp_path / "m.json").read_text())
    whole = json.loads(_result_file(tmp_path / "w.json", [0, 1, 2]).read_text())
    assert merged["summary"] == whole["summary"] and merged["setting"]["seeds"] == [0, 1, 2]
    assert merged["runs"] == whole["runs"]
    assert merged["setting"]["total_seconds"] == 20.0  # the two files' seconds
    with pytest.raises(ValueError, match="another setting"):
        main(["--merge", str(a), str(_result_file(tmp_path / "c.json", [3], vit_steps=10)), "--out", str(tmp_path / "x.json")])
    with pytest.raises(ValueError, match="repeat seeds"):
        main(["--merge", str(a), str(a), "--out", str(tmp_path / "x.json")])
