"""An assignment's questions as data: what each grades, what it may not use, its public examples, its hidden checks.

The instructor's module ``book/homework/hidden/<assignment>.py`` defines ``make(draw)``, which returns an
:class:`Assignment` whose examples it computes with the book's references; ``draw(label)`` gives the seed of a
hidden input, derived from the course's secret (:func:`drawer`), so the repository alone tells nobody a hidden
input. The build writes two files from it: the public examples (``vit_edu/homework/public/<name>.json``, shipped
with the package) and the whole assignment (inside the instructor's autograder zip).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from vit_edu.homework.checks import Example

SECRET_ENV = "HOMEWORK_SECRET"


@dataclass
class Check:
    """One hidden check: a name students see, its points, the examples it runs."""

    name: str
    points: float
    examples: list[Example]


@dataclass
class Question:
    """One question: the names it grades, the references its process lacks, the questions its answer builds on."""

    name: str
    answers: tuple[str, ...]
    references: tuple[str, ...] = ()  # vit_edu functions stripped, other libraries' functions taken away
    depends: tuple[str, ...] = ()  # questions whose cells run before this one's (a value computed with them)
    public: list[Example] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    cell_seconds: float = 60.0  # an experiment question's cells may train a model

    def check(self, name: str, examples: list[Example], points: float = 1) -> None:
        """Add a hidden check."""
        self.checks.append(Check(name, float(points), examples))

    @property
    def points(self) -> float:
        return sum(c.points for c in self.checks)


class Assignment:
    """The questions of one homework, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.questions: dict[str, Question] = {}

    def question(self, name: str, answers: tuple[str, ...], **kwargs: Any) -> Question:
        q = Question(name, answers, **kwargs)
        self.questions[name] = q
        return q

    def public_data(self) -> dict[str, Any]:
        """What ships with the package: each question's public examples."""
        return {"assignment": self.name, "questions": {
            q.name: {"public": [e.to_data() for e in q.public]} for q in self.questions.values()}}

    def data(self) -> dict[str, Any]:
        """Everything the grader needs (instructor only): questions, references, dependencies, hidden checks."""
        return {"assignment": self.name, "questions": {q.name: {
            "answers": list(q.answers), "references": list(q.references), "depends": list(q.depends),
            "cell_seconds": q.cell_seconds, "public": [e.to_data() for e in q.public],
            "checks": [{"name": c.name, "points": c.points, "examples": [e.to_data() for e in c.examples]}
                       for c in q.checks]} for q in self.questions.values()}}


def drawer(secret: str, assignment: str) -> Callable[[str], int]:
    """``draw(label)``: a 62-bit seed from the secret, the assignment and the label (HMAC-SHA256)."""
    if not secret:
        raise ValueError(f"no homework secret: set {SECRET_ENV}=... (or --secret-file FILE outside the repository)")

    def draw(label: str) -> int:
        digest = hmac.new(secret.encode(), f"{assignment}/{label}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") >> 2

    return draw


def read_secret(secret_file: Path | None, env: dict[str, str]) -> str:
    """The course's secret: the file's first line, else ``$HOMEWORK_SECRET``; a clear error when neither is set."""
    if secret_file is not None:
        secret = secret_file.read_text().strip()
    else:
        secret = env.get(SECRET_ENV, "").strip()
    if len(secret) < 8:
        raise ValueError(f"the homework secret is missing or shorter than 8 characters: set {SECRET_ENV}=... or pass "
                         f"--secret-file FILE (keep it outside the repository; every hidden input derives from it)")
    return secret


def load_data(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def seeded(*shape: int, seed: int) -> torch.Tensor:
    """Standard normal numbers of ``shape`` from their own generator: the same wherever they are drawn."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
