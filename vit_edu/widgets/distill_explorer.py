"""Chapter 15's widget: pick a temperature τ, a weight α and a student, and see the soft distillation loss of one image.

The image is a circle (class 0 of the shapes task); the teacher's logits are fixed, and so are three students'.
The left panel shows the teacher's and the student's class probabilities softened at temperature τ, the right panel
the two terms of :func:`vit_edu.variants.distill.distillation_loss` (``kind="soft"``) and their sum. The same
student logits stand for both heads (the CLS head that learns the label, the distillation head that learns the
teacher), so the picture is that of classic knowledge distillation with one head.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from vit_edu.data import CLASS_NAMES
from vit_edu.variants.distill import distillation_loss, soft_distillation_term
from vit_edu.widgets.frames import problem_frame

LABEL = 0  # the image is a circle
TEACHER = (5.0, 2.5, 0.5, -1.0)  # sure of "circle", and sees more of a square than of a cross in it
STUDENTS: dict[str, tuple[float, ...]] = {
    "agrees with the teacher": TEACHER,
    "right class, rest ranked wrongly": (5.0, -1.0, 0.5, 2.5),
    "wrong class": (1.0, 3.0, 0.0, -0.5),
}
CONTROLS: dict[str, list] = {
    "temperature": [0.5, 1.0, 2.0, 4.0, 8.0],
    "alpha": [0.0, 0.1, 0.25, 0.5, 0.75, 1.0],
    "student": list(STUDENTS),
}
# The website's player: three temperatures, DeiT's soft α = 0.1 and α = ½, the three students (18 frames).
SITE_CONTROLS: dict[str, list] = {"temperature": [1.0, 2.0, 4.0], "alpha": [0.1, 0.5], "student": list(STUDENTS)}
START = {"temperature": 2.0, "alpha": 0.5, "student": "right class, rest ranked wrongly"}


def loss_terms(temperature: float, alpha: float, student: str) -> dict[str, float]:
    """The weighted label term (1 − α)·CE, the weighted teacher term α·τ²·KL, and their sum, for the example."""
    s, t = torch.tensor([STUDENTS[student]]), torch.tensor([TEACHER])  # (1, K)
    y = torch.tensor([LABEL])
    label = (1 - alpha) * F.cross_entropy(s, y).item()
    teacher = alpha * soft_distillation_term(s, t, temperature).item()
    total = distillation_loss(s, s, y, t, kind="soft", alpha=alpha, tau=temperature).item()
    return {"label": label, "teacher": teacher, "total": total}


def loss_sum_text(terms: dict[str, float]) -> str:
    """'label + teacher = total' at three decimals; '≈' where the rounded terms do not add up to the rounded total."""
    label, teacher, total = (round(terms[k], 3) for k in ("label", "teacher", "total"))
    sign = "=" if round(label + teacher, 3) == total else "≈"
    return f"{label:.3f} (labels) + {teacher:.3f} (teacher) {sign} <b>{total:.3f}</b>"


def _problem(temperature: object, alpha: object, student: object) -> str | None:
    if temperature not in CONTROLS["temperature"]:
        return f"temperature must be one of {CONTROLS['temperature']}; got {temperature!r}."
    if alpha not in CONTROLS["alpha"]:
        return f"alpha must be one of {CONTROLS['alpha']}; got {alpha!r}."
    if student not in STUDENTS:
        return f"student must be one of: {', '.join(STUDENTS)}; got {student!r}."
    return None


def distill_explorer_view(temperature: float = 2.0, alpha: float = 0.5,
                          student: str = START["student"]) -> tuple[Figure, str]:
    """Softened probabilities of teacher and student (left) and the soft distillation loss's terms (right)."""
    problem = _problem(temperature, alpha, student)
    if problem is not None:
        return problem_frame(problem, figsize=(6, 2.2))
    p_teacher = F.softmax(torch.tensor(TEACHER) / temperature, dim=0).numpy()
    p_student = F.softmax(torch.tensor(STUDENTS[student]) / temperature, dim=0).numpy()
    terms = loss_terms(temperature, alpha, student)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 2.8), width_ratios=[1.4, 1])
    x = np.arange(len(CLASS_NAMES))
    left.bar(x - 0.2, p_teacher, 0.4, label="teacher", color="tab:orange")
    left.bar(x + 0.2, p_student, 0.4, label="student", color="tab:blue")
    left.set_xticks(x, CLASS_NAMES)
    left.set_ylim(0, 1)
    left.set_ylabel("probability")
    left.set_title(f"softmax(logits / τ), τ = {temperature:g}", fontsize=9)
    left.legend(fontsize=8)
    names = ["(1−α)·CE\nlabel", "α·τ²·KL\nteacher", "total"]
    values = [terms["label"], terms["teacher"], terms["total"]]
    right.bar(names, values, color=["tab:green", "tab:orange", "tab:gray"])
    right.set_ylim(0, max(1.0, 1.15 * max(values)))
    right.set_title(f"loss, α = {alpha:g}", fontsize=9)
    for i, v in enumerate(values):
        right.text(i, v, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    caption = (
        f"τ = {temperature:g}, α = {alpha:g}, student: {student}. "
        f"The teacher gives the circle <b>{p_teacher[LABEL]:.2f}</b> and the square {p_teacher[1]:.2f} at this "
        f"temperature. Loss = {loss_sum_text(terms)}."
    )
    return fig, caption
