"""Hidden checks of homework 3 (instructor only: built into the autograder zip, never into ``vit_edu``).

Each check's probe runs in the student's kernel and returns plain data; its judge runs in the grader with the
public ``expect_*`` of :mod:`vit_edu.homework.feedback.hw3` on these inputs. The experiments' reference numbers
and the answers to the readings and the diagnosis come from the answer key (``hw3_training_key.json`` and what
``hw3_training_key.py`` computes), which the judges receive as ``key``. 32 points: 16 for code, 12 for the
experiments and their readings, 4 for the warm-ups and the diagnosis.
"""

from vit_edu.homework.cases import Cases, call, value
from vit_edu.homework.feedback import hw3
from vit_edu.homework.feedback.common import seeded

cases = Cases("hw3_training")

# Tolerances of the experiments: wide enough for another CPU and thread count, narrow enough to tell the
# recipe asked for from a neighbouring one.
LR_TOL = 0.02  # one validation accuracy on 400 images: 8 images
SCORE_TOL = 0.003  # a mean localisation score over 500 images
FLIP_TOL, TV_TOL = 0.0012, 0.0006  # over 5000 (image, permutation) pairs
ACC_TOL = 0.0101  # an accuracy on 400 scenes: 4 scenes
GROWTH_TOL = 0.1  # relative, a ratio of weight sizes

# ---------------------------------------------------------------- chapter 9

cases.question("ch09_decay_split", answers=("decay_split",), public="check_decay_split",
               references=("vit_edu.training.parameter_groups", "vit_edu.training.make_optimizer"))
DECAY_MODELS = [
    {"pool": "mean", "pos_embed": "learned", "depth": 2, "seed": 31},
    {"pool": "cls", "pos_embed": "sincos", "qkv_bias": False, "frozen": ("blocks.0", "cls_token"), "seed": 32},
    {"pool": "cls", "pos_embed": "learned", "frozen": ("head", "norm", "blocks.0.attn"), "depth": 2, "seed": 33},
]


@cases.add("ch09_decay_split", "mean pooling and two blocks")
def _(ns):
    return call(ns, "decay_split", hw3.decay_model(**DECAY_MODELS[0]))


_.judge(lambda got, key: hw3.expect_decay_split(got, hw3.decay_model(**DECAY_MODELS[0])))


@cases.add("ch09_decay_split", "frozen parameters with sin-cos positions and no qkv bias")
def _(ns):
    return [call(ns, "decay_split", hw3.decay_model(**kw)) for kw in DECAY_MODELS[1:]]


@_.judge
def _(got, key):
    for kw, out in zip(DECAY_MODELS[1:], got, strict=True):
        hw3.expect_decay_split(out, hw3.decay_model(**kw))


cases.question("ch09_lr_schedule", answers=("lr_at",), public="check_lr_schedule",
               references=("vit_edu.training.make_optimizer", "torch.optim.lr_scheduler.LinearLR",
                           "torch.optim.lr_scheduler.CosineAnnealingLR", "torch.optim.lr_scheduler.SequentialLR"))
SCHEDULES = [(3e-4, 10, 50, 2e-5), (5e-4, 0, 25, 0.0), (2e-3, 7, 16, 0.0)]


@cases.add("ch09_lr_schedule", "another warm-up length and floor")
def _(ns):
    base, w, t, floor = SCHEDULES[0]
    return [call(ns, "lr_at", s, base, w, t, floor) for s in range(t)]


_.judge(lambda got, key: hw3.expect_lr_schedule(got, *SCHEDULES[0]))


@cases.add("ch09_lr_schedule", "no warm-up or a floor of 0")
def _(ns):
    return [[call(ns, "lr_at", s, base, w, t, floor) for s in range(t)] for base, w, t, floor in SCHEDULES[1:]]


@_.judge
def _(got, key):
    for args, out in zip(SCHEDULES[1:], got, strict=True):
        hw3.expect_lr_schedule(out, *args)


cases.question("ch09_lr_seeds", answers=("lr_runs",), public="check_lr_runs")

for _lr in hw3.LR_GRID:

    @cases.add("ch09_lr_seeds", f"the three runs at lr {_lr:g}")
    def _(ns):
        return value(ns, "lr_runs")

    _.judge(lambda got, key, lr=_lr: hw3.expect_lr_runs(got, lr, key["lr_runs"][hw3.LR_GRID.index(lr)], LR_TOL))

cases.question("ch09_lr_reading", answers=("lr_reading",), public="check_lr_reading")


@cases.add("ch09_lr_reading", "what the six runs support")
def _(ns):
    return value(ns, "lr_reading")


_.judge(lambda got, key: hw3.expect_reading(got, key["lr_reading"], "lr_reading"))

# ---------------------------------------------------------------- chapter 10

cases.question("ch10_rollout", answers=("my_rollout",), public="check_rollout",
               references=("vit_edu.explain.attention_rollout", "vit_edu.explain.fuse_heads"))
ROLLOUTS = [(2, 2, 3, 4, 41, "mean", 2.0), (3, 2, 3, 5, 42, "max", 0.5), (4, 1, 2, 6, 43, "max", 3.0)]


def _rollout_inputs(i):
    layers, b, h, s, seed, fusion, residual = ROLLOUTS[i]
    return hw3.random_attentions(layers, b, h, s, seed=seed), fusion, residual


@cases.add("ch10_rollout", "mean fusion with weight 2 on a batch of 2", points=1)
def _(ns):
    return call(ns, "my_rollout", *_rollout_inputs(0))


_.judge(lambda got, key: hw3.expect_rollout(got, *_rollout_inputs(0)))


@cases.add("ch10_rollout", "max fusion with weight 0.5 on a batch of 2 and weight 3 on one image", points=2)
def _(ns):
    return [call(ns, "my_rollout", *_rollout_inputs(i)) for i in (1, 2)]


@_.judge
def _(got, key):
    for i, out in zip((1, 2), got, strict=True):
        hw3.expect_rollout(out, *_rollout_inputs(i))


cases.question("ch10_cls_map", answers=("cls_map",), public="check_cls_map",
               references=("vit_edu.explain.cls_attention",))
CLS_MAPS = [(3, 2, 2, 2 + 6, 44, (2, 3), 0, 2), (2, 3, 4, 1 + 6, 45, (3, 2), -1, 1)]


def _cls_map_inputs(i):
    layers, b, h, s, seed, grid, layer, prefix = CLS_MAPS[i]
    return hw3.random_attentions(layers, b, h, s, seed=seed), grid, layer, prefix


@cases.add("ch10_cls_map", "two prefix tokens in the first layer on a 2×3 grid")
def _(ns):
    return call(ns, "cls_map", *_cls_map_inputs(0))


_.judge(lambda got, key: hw3.expect_cls_map(got, *_cls_map_inputs(0)))


@cases.add("ch10_cls_map", "one CLS token in the last layer on a 3×2 grid")
def _(ns):
    return call(ns, "cls_map", *_cls_map_inputs(1))


_.judge(lambda got, key: hw3.expect_cls_map(got, *_cls_map_inputs(1)))

cases.question("ch10_rollout_scores", answers=("rollout_scores",), public="check_rollout_scores",
               references=("vit_edu.explain.attention_rollout",))


@cases.add("ch10_rollout_scores", "mean and max fusion at both residual weights")
def _(ns):
    return value(ns, "rollout_scores")


_.judge(lambda got, key: hw3.expect_rollout_scores(got, key["rollout_scores"], SCORE_TOL, hw3.FUSIONS))


@cases.add("ch10_rollout_scores", "the baseline")
def _(ns):
    return value(ns, "rollout_scores")


_.judge(lambda got, key: hw3.expect_rollout_scores(got, key["rollout_scores"], SCORE_TOL, ("baseline",)))

cases.question("ch10_rollout_reading", answers=("rollout_reading",), public="check_rollout_reading")


@cases.add("ch10_rollout_reading", "what the four scores say")
def _(ns):
    return value(ns, "rollout_reading")


_.judge(lambda got, key: hw3.expect_reading(got, key["rollout_reading"], "rollout_reading"))

# ---------------------------------------------------------------- chapter 11

cases.question("ch11_centred_similarity", answers=("centred_similarity",), public="check_centred_similarity",
               references=("vit_edu.explain.position_similarity",))
TABLES = [(0, 9, 8, 51), (2, 6, 5, 52)]  # prefix rows, patches, width, seed


@cases.add("ch11_centred_similarity", "no prefix row and 9 patches")
def _(ns):
    prefix, n, d, seed = TABLES[0]
    return call(ns, "centred_similarity", hw3.position_table(prefix, n, d, seed), prefix)


_.judge(lambda got, key: hw3.expect_centred_similarity(got, hw3.position_table(*TABLES[0]), TABLES[0][0]))


@cases.add("ch11_centred_similarity", "two prefix rows")
def _(ns):
    prefix, n, d, seed = TABLES[1]
    return call(ns, "centred_similarity", hw3.position_table(prefix, n, d, seed), prefix)


_.judge(lambda got, key: hw3.expect_centred_similarity(got, hw3.position_table(*TABLES[1]), TABLES[1][0]))

cases.question("ch11_centre_distances", answers=("centre_distances",), public="check_centre_distances",
               references=("vit_edu.explain.patch_distances", "vit_edu.explain.mean_attention_distance"))
GRIDS = [((3, 5), 6), ((4, 1), 16), ((2, 7), 3)]


@cases.add("ch11_centre_distances", "a 3×5 grid of 6-pixel patches")
def _(ns):
    grid, p = GRIDS[0]
    return call(ns, "centre_distances", grid, p)


_.judge(lambda got, key: hw3.expect_centre_distances(got, *GRIDS[0]))


@cases.add("ch11_centre_distances", "one column and a 2×7 grid")
def _(ns):
    return [call(ns, "centre_distances", grid, p) for grid, p in GRIDS[1:]]


@_.judge
def _(got, key):
    for (grid, p), out in zip(GRIDS[1:], got, strict=True):
        hw3.expect_centre_distances(out, grid, p)


cases.question("ch11_tile_flips", answers=("tile_flips",), public="check_tile_flips")


@cases.add("ch11_tile_flips", "share of changed predictions")
def _(ns):
    return value(ns, "tile_flips")


_.judge(lambda got, key: hw3.expect_tile_flips(got, key["tile_flips"], "flips", FLIP_TOL))


@cases.add("ch11_tile_flips", "mean total variation distance")
def _(ns):
    return value(ns, "tile_flips")


_.judge(lambda got, key: hw3.expect_tile_flips(got, key["tile_flips"], "tv", TV_TOL))

# ---------------------------------------------------------------- chapter 12

cases.question("ch12_new_table_shape", answers=("new_table_shape",), public="check_new_table_shape",
               references=("vit_edu.config.ViTConfig",))
SHAPES = [(96, 160, 16, 384, 2), (40, 24, 8, 64, 0), (224, 224, 14, 1024, 1)]


@cases.add("ch12_new_table_shape", "non-square images with 0 to 2 prefix tokens")
def _(ns):
    return [call(ns, "new_table_shape", *args) for args in SHAPES]


@_.judge
def _(got, key):
    for args, out in zip(SHAPES, got, strict=True):
        hw3.expect_new_table_shape(out, *args)


cases.question("ch12_interpolate", answers=("my_interpolate",), public="check_interpolate",
               references=("vit_edu.position.interpolate_pos_embed", "vit_edu.resolution.change_resolution"))
INTERPOLATIONS = [((3, 4), (5, 6), 2, 7, 61), ((4, 4), (2, 3), 0, 5, 62), ((2, 5), (4, 3), 1, 3, 63)]


def _interpolate_inputs(i):
    old, new, prefix, d, seed = INTERPOLATIONS[i]
    return seeded(1, prefix + old[0] * old[1], d, seed=seed), old, new, prefix


@cases.add("ch12_interpolate", "two prefix rows from a 3×4 grid to 5×6", points=2)
def _(ns):
    return call(ns, "my_interpolate", *_interpolate_inputs(0))


_.judge(lambda got, key: hw3.expect_interpolate(got, *_interpolate_inputs(0)))


@cases.add("ch12_interpolate", "no prefix row to a smaller grid and non-square grids")
def _(ns):
    return [call(ns, "my_interpolate", *_interpolate_inputs(i)) for i in (1, 2)]


@_.judge
def _(got, key):
    for i, out in zip((1, 2), got, strict=True):
        hw3.expect_interpolate(out, *_interpolate_inputs(i))


cases.question("ch12_resized_acc", answers=("resized_acc",), public="check_resized_acc",
               references=("vit_edu.position.interpolate_pos_embed", "vit_edu.resolution.change_resolution"))

for _size in hw3.NEW_SIZES:

    @cases.add("ch12_resized_acc", f"accuracy at {_size}×{_size}")
    def _(ns):
        return value(ns, "resized_acc")

    _.judge(lambda got, key, size=_size: hw3.expect_resized_acc(
        got, size, key["resized_acc"][hw3.NEW_SIZES.index(size)], ACC_TOL))

# ---------------------------------------------------------------- chapter 13

cases.question("ch13_first_loss", answers=("first_loss",), public="check_first_loss")
FIRST_LOSSES = [(10, 0.1), (1000, 0.0), (3, 0.3)]


@cases.add("ch13_first_loss", "with and without label smoothing for 3 to 1000 classes")
def _(ns):
    return [call(ns, "first_loss", k, eps) for k, eps in FIRST_LOSSES]


@_.judge
def _(got, key):
    for (k, eps), out in zip(FIRST_LOSSES, got, strict=True):
        hw3.expect_first_loss(out, k, eps)


cases.question("ch13_diagnose", answers=("diagnosis",), public="check_diagnosis")

for _symptoms in (hw3.SYMPTOMS[:3], hw3.SYMPTOMS[3:]):

    @cases.add("ch13_diagnose", f"symptoms {_symptoms[0]} to {_symptoms[-1]}")
    def _(ns):
        return value(ns, "diagnosis")

    _.judge(lambda got, key, s=_symptoms: hw3.expect_diagnosis(got, key["diagnosis"], s))

cases.question("ch13_decay_growth", answers=("decay_growth",), public="check_decay_growth")


def _growth_key(key):
    return {lr: key["decay_growth"][i] for i, lr in enumerate(hw3.DECAY_LRS)}


@cases.add("ch13_decay_growth", "lr 60 and 100 (decay factor below −1)")
def _(ns):
    return value(ns, "decay_growth")


_.judge(lambda got, key: hw3.expect_decay_growth(got, _growth_key(key), hw3.DECAY_LRS[1:], GROWTH_TOL))


@cases.add("ch13_decay_growth", "lr 30")
def _(ns):
    return value(ns, "decay_growth")


_.judge(lambda got, key: hw3.expect_decay_growth(got, _growth_key(key), hw3.DECAY_LRS[:1], GROWTH_TOL))
