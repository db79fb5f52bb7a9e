"""Chapter 15's experiment: can a CNN teacher that knows more than the student's labels help a ViT on few labels?

For each seed, one set of ``labelled + unlabelled + teacher`` images is drawn from the shapes task (20,000 by
default) and cut into three disjoint parts: the student's ``labelled`` images (500: the ViT is well below its
ceiling there), ``unlabelled`` images whose labels the student never sees (4,500), and the teacher's own labelled
images (15,000). The teacher is chapter 9's parameter-matched :class:`vit_edu.training.cnn.SmallCNN`, trained on its
part only, so its predictions on the student's images are predictions, not memories. Six students, every one
``--vit-steps`` steps of chapter 9's recipe (AdamW 1e-3, weight decay 0.05, batches of 32, warm-up then cosine):

* ``ViT``: the ``shapes-vit`` preset's model on the labelled images;
* ``two heads, no teacher``: :class:`vit_edu.variants.distill.DistilledViT` with ``kind="none"`` on the labelled
  images (both heads learn the labels: does the second token alone change anything?);
* ``ViT on pseudo-labels``: the plain ViT on the labelled images plus the unlabelled ones with the teacher's top
  class as their label (more, teacher-labelled data, no distillation token);
* ``distilled (hard)``: the DistilledViT on the same images, DeiT's hard distillation (α = ½): the CLS head learns
  the labelled images' labels, the distillation head the teacher's top class on every image;
* ``distilled (soft)``: the same with soft distillation at the paper's α = 0.1 and τ = 3. DeiT chose α = 0.1 for
  ImageNet, where every image also has a label; here the unlabelled images get no label term, so they reach the
  student only through 0.1·τ²·KL, against ½·CE in the hard arm;
* ``distilled (soft, α = 0.5)``: soft distillation with the hard arm's weights (½ labels, ½ teacher), the control
  for that handicap.

Comparing ``distilled`` with ``ViT on pseudo-labels`` separates the token from the extra pseudo-labelled data.
Accuracy is measured on a held-out test split (``--test-size`` images). Every arm starts from
``torch.manual_seed(seed)``, so with one thread an arm's result does not depend on which other arms ran. Seeds can
run as separate processes and ``--merge`` joins their files; ``--models`` runs some students only, and
``--add-to`` adds new students to an existing file of the same setting and seeds (students already in the file are
kept, and their reruns recorded beside the new ones: see :func:`add_to`). The defaults train all six students in
one run. The shipped file was made in two, as ``make checkpoints`` runs them: the first five students, then the
α = 0.5 student, added later together with reruns of the other two distilled students (on another CPU, whose
rounding moved them; chapter 15 compares the α = 0.5 student with the reruns of its own run):

    OMP_NUM_THREADS=1 python -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out $OUT
        --models "ViT" "two heads, no teacher" "ViT on pseudo-labels" "distilled (hard)" "distilled (soft)"
    OMP_NUM_THREADS=1 python -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out $OUT --add-to $OUT
        --models "distilled (hard)" "distilled (soft)" "distilled (soft, α = 0.5)"

with ``OUT=vit_edu/checkpoints/data_efficiency.json`` (each command on one line).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vit_edu.data import ImageSplit, ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, TrainConfig, evaluate, train
from vit_edu.training.cnn import matching_cnn
from vit_edu.variants.distill import UNLABELLED, DistilledViT, teacher_logits, train_distilled

HARD = {"alpha": 0.5}  # DeiT's hard distillation: label and teacher terms weighted ½ and ½
SOFT = {"alpha": 0.1, "tau": 3.0}  # DeiT's soft distillation settings
SOFT_EVEN = {"alpha": 0.5, "tau": 3.0}  # soft distillation with the hard arm's ½ and ½
DISTILLED = {  # the distilled students: name -> (kind, options of train_distilled)
    "distilled (hard)": ("hard", HARD),
    "distilled (soft)": ("soft", SOFT),
    "distilled (soft, α = 0.5)": ("soft", SOFT_EVEN),
}
MODELS = ("ViT", "two heads, no teacher", "ViT on pseudo-labels", *DISTILLED)
BATCH, VAL_SIZE = 32, 100


@dataclass(frozen=True)
class Setting:
    """The experiment's sizes and budgets: the student's labelled and unlabelled images, the teacher's images."""

    labelled: int = 500
    unlabelled: int = 4500
    teacher_size: int = 15000
    vit_steps: int = 800
    cnn_steps: int = 150
    test_size: int = 1000

    def __post_init__(self) -> None:
        if self.labelled < BATCH or self.unlabelled < 0 or self.teacher_size < BATCH:
            raise ValueError(f"need labelled >= {BATCH}, unlabelled >= 0, teacher_size >= {BATCH}; got "
                             f"{self.labelled}, {self.unlabelled}, {self.teacher_size}")
        if min(self.vit_steps, self.cnn_steps) < 2 or self.test_size < 1:
            raise ValueError(f"need at least 2 steps per model and a test set; got vit_steps={self.vit_steps}, "
                             f"cnn_steps={self.cnn_steps}, test_size={self.test_size}")


def recipe(steps: int, size: int, seed: int) -> TrainConfig:
    """Chapter 9's recipe, shortened: ``steps`` steps of 32 images, 10% warm-up, one evaluation at the end."""
    _, preset = PRESETS["shapes-vit"]
    return TrainConfig(steps=steps, batch_size=BATCH, lr=preset.lr, weight_decay=preset.weight_decay,
                       warmup_steps=max(1, steps // 10), label_smoothing=0.0, train_size=size, seed=seed,
                       eval_every=steps)


def _result(model: torch.nn.Module, test: ImageSplit, history: list[dict], extra: float = 0.0) -> dict:
    return {"accuracy": evaluate(model, test.images, test.labels)["accuracy"],
            "seconds": round(history[-1]["seconds"] + extra, 2)}


def one_seed(s: Setting, seed: int, models: tuple[str, ...] = MODELS) -> dict:
    """The teacher and the students named in ``models`` for one seed: test accuracies, seconds and the teacher's
    agreements. Each student starts from ``torch.manual_seed(seed)``, so leaving one out changes no other."""
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown students {unknown}; the students are {list(MODELS)}")
    model_cfg, _ = PRESETS["shapes-vit"]
    n, u = s.labelled, s.unlabelled
    full = ShapesDataset("train", size=n + u + s.teacher_size, seed=seed)
    val = ShapesDataset("val", size=VAL_SIZE, seed=seed)
    test = ShapesDataset("test", size=s.test_size, seed=seed)
    labelled = ImageSplit(full.images[:n], full.labels[:n], full.classes)
    student_images = full.images[: n + u]  # (n + u, C, H, W): labelled first, then unlabelled
    true = full.labels[: n + u]
    teacher_set = ImageSplit(full.images[n + u :], full.labels[n + u :], full.classes)

    torch.manual_seed(seed)
    cnn = matching_cnn(count_parameters(VisionTransformer(model_cfg)), model_cfg.num_classes)
    history = train(cnn, teacher_set, val, recipe(s.cnn_steps, len(teacher_set), seed), progress=False)
    start = time.perf_counter()
    targets = teacher_logits(cnn, student_images)  # (n + u, K): the teacher's logits, once
    teacher_seconds = time.perf_counter() - start
    pseudo = targets.argmax(1)  # (n + u,)
    teacher = {**_result(cnn, test, history), "images": len(teacher_set),
               "agreement_labelled": (pseudo[:n] == true[:n]).float().mean().item(),
               "agreement_unlabelled": (pseudo[n:] == true[n:]).float().mean().item() if u else None}

    out = {}
    if "ViT" in models:
        torch.manual_seed(seed)
        vit = VisionTransformer(model_cfg)
        out["ViT"] = _result(vit, test, train(vit, labelled, val, recipe(s.vit_steps, n, seed), progress=False))
    if "two heads, no teacher" in models:
        torch.manual_seed(seed)
        two = DistilledViT(model_cfg)
        history = train_distilled(two, targets[:n], labelled, val, recipe(s.vit_steps, n, seed), kind="none")
        out["two heads, no teacher"] = _result(two, test, history)
    if "ViT on pseudo-labels" in models:
        pseudo_set = ImageSplit(student_images, torch.cat([true[:n], pseudo[n:]]), full.classes)
        torch.manual_seed(seed)
        vit = VisionTransformer(model_cfg)
        history = train(vit, pseudo_set, val, recipe(s.vit_steps, n + u, seed), progress=False)
        out["ViT on pseudo-labels"] = _result(vit, test, history, teacher_seconds)
    # The distilled students see the labels of the labelled images only; the rest are UNLABELLED for the CLS head.
    mixed = ImageSplit(student_images, torch.cat([true[:n], torch.full((u,), UNLABELLED)]), full.classes)
    for name, (kind, options) in DISTILLED.items():
        if name not in models:
            continue
        torch.manual_seed(seed)
        student = DistilledViT(model_cfg)
        history = train_distilled(student, targets, mixed, val, recipe(s.vit_steps, n + u, seed), kind=kind,
                                  **options)
        out[name] = _result(student, test, history, teacher_seconds)
    return {"seed": seed, "teacher": teacher, "models": out}


def summarise(runs: list[dict]) -> dict:
    """Per model in the runs: mean, min and max test accuracy over the seeds."""
    summary = {}
    for name in runs[0]["models"]:
        accs = [r["models"][name]["accuracy"] for r in runs]
        summary[name] = {"mean": statistics.fmean(accs), "min": min(accs), "max": max(accs), "seeds": len(accs)}
    return summary


def _write(out: Path, setting: dict, runs: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"setting": setting, "runs": runs, "summary": summarise(runs)}, indent=1))


def merge(paths: list[Path], out: Path) -> None:
    """Join result files that differ only in their seeds (one process per seed) into one."""
    parts = [json.loads(p.read_text()) for p in paths]
    ignore = ("seeds", "total_seconds")
    first = {k: v for k, v in parts[0]["setting"].items() if k not in ignore}
    for p, part in zip(paths, parts):
        this = {k: v for k, v in part["setting"].items() if k not in ignore}
        if this != first:
            raise ValueError(f"{p} was run with another setting than {paths[0]}: {this} vs {first}")
    seeds = [s for part in parts for s in part["setting"]["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the files repeat seeds: {seeds}")
    setting = {**parts[0]["setting"], "seeds": seeds,
               "total_seconds": round(sum(part["setting"]["total_seconds"] for part in parts), 1)}
    _write(out, setting, [r for part in parts for r in part["runs"]])


def add_to(base: dict, new: dict) -> tuple[dict, list[dict]]:
    """``base`` (a results file's content) with the students of ``new`` added: same setting, seeds and teacher.
    Returns the joined file's setting and runs.

    ``base``'s results, seconds included, stay as they were. A student in both is a rerun: its results are not
    merged but recorded under ``setting["added"]`` beside the added students' names, the CPU's vector kernels and
    the seconds. With one thread the same seed gives the same weights on the same kind of CPU; on another, rounding
    differs and long runs amplify it, so a rerun there measures how far that moves a student, and the added
    students are best compared with the reruns of their own run.
    """
    keep = ("labelled", "unlabelled", "teacher_size", "vit_steps", "cnn_steps", "test_size", "seeds", "batch_size",
            "threads")
    mine, theirs = ({k: d["setting"].get(k) for k in keep} for d in (base, new))
    if mine != theirs:
        raise ValueError(f"cannot add a run of another setting: {theirs} vs the file's {mine}")
    rerun = [m for m in MODELS if m in base["runs"][0]["models"] and m in new["runs"][0]["models"]]
    added = [m for m in MODELS if m in new["runs"][0]["models"] and m not in base["runs"][0]["models"]]
    if not added:
        raise ValueError(f"nothing to add: every student of the run ({list(new['runs'][0]['models'])}) is in the file")
    runs = []
    for old, run in zip(base["runs"], new["runs"]):
        if any(old["teacher"][k] != run["teacher"][k]
               for k in ("accuracy", "agreement_labelled", "agreement_unlabelled")):
            raise ValueError(f"seed {run['seed']}: the teacher did not reproduce, so its pseudo-labels may differ: "
                             f"{run['teacher']} vs the file's {old['teacher']}")
        both = {**old["models"], **{m: run["models"][m] for m in added}}
        runs.append({**old, "models": {m: both[m] for m in MODELS if m in both}})
    distillation = {**base["setting"]["distillation"],
                    **{m: v for m, v in new["setting"]["distillation"].items() if m in added}}
    record = {"models": added, "rerun": {m: [run["models"][m] for run in new["runs"]] for m in rerun},
              "cpu_capability": new["setting"]["cpu_capability"], "torch": new["setting"]["torch"],
              "total_seconds": new["setting"]["total_seconds"]}
    setting = {**base["setting"], "distillation": distillation, "added": [*base["setting"].get("added", []), record]}
    return setting, runs


def main(argv: list[str] | None = None) -> None:
    defaults = Setting()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--labelled", type=int, default=defaults.labelled)
    parser.add_argument("--unlabelled", type=int, default=defaults.unlabelled)
    parser.add_argument("--teacher-size", type=int, default=defaults.teacher_size)
    parser.add_argument("--vit-steps", type=int, default=defaults.vit_steps)
    parser.add_argument("--cnn-steps", type=int, default=defaults.cnn_steps)
    parser.add_argument("--test-size", type=int, default=defaults.test_size)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--merge", type=Path, nargs="+", help="join these result files (same setting, other seeds)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS),
                        help="train only these students (the teacher always trains)")
    parser.add_argument("--add-to", type=Path, help="add the students to this results file (same setting and seeds)")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge, args.out)
        return
    try:
        s = Setting(args.labelled, args.unlabelled, args.teacher_size, args.vit_steps, args.cnn_steps, args.test_size)
    except ValueError as err:
        parser.error(str(err))
    start = time.perf_counter()
    runs = []
    for seed in args.seeds:
        run = one_seed(s, seed, tuple(args.models))
        runs.append(run)
        t = run["teacher"]
        print(f"seed {seed}: teacher {100 * t['accuracy']:.1f}% (agrees with {100 * t['agreement_labelled']:.1f}% "
              "of the labels), " + ", ".join(f"{k} {100 * v['accuracy']:.1f}% ({v['seconds']:.0f} s)"
                                                 for k, v in run["models"].items()), flush=True)
    distillation = {name: {"kind": kind, **options} for name, (kind, options) in DISTILLED.items()
                    if name in args.models}
    setting = {**asdict(s), "seeds": args.seeds, "batch_size": BATCH, "distillation": distillation,
               "threads": torch.get_num_threads(), "torch": torch.__version__,
               "total_seconds": round(time.perf_counter() - start, 1)}
    if args.add_to:
        setting["cpu_capability"] = torch.backends.cpu.get_cpu_capability()  # the vector kernels, for the record
        _write(args.out, *add_to(json.loads(args.add_to.read_text()), {"setting": setting, "runs": runs}))
    else:
        _write(args.out, setting, runs)
    print(f"{setting['total_seconds']:.0f} s in all → {args.out}")


if __name__ == "__main__":
    main()
