"""The Gradescope zip's grader: ``run_autograder`` runs ``python -m vit_edu.homework.gradescope --assignment NAME``.

The same pipeline as ``make grade`` (:func:`vit_edu.homework.grade.grade_folder`), on the one submission
Gradescope puts in ``/autograder/submission``, with the homework and the secret the zip unpacked into
``/autograder/source/homework`` (root's alone). Each question runs in bubblewrap where the container allows it,
else as an unprivileged user without it; the hidden inputs are drawn for the submitting students' Gradescope ids.
The result goes to ``/autograder/results/results.json`` in Gradescope's format: one test per question, the
student's feedback as its output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from vit_edu.homework.assignment import read_secret
from vit_edu.homework.grade import GRADER_FAULT, Row, feedback_markdown, grade_folder
from vit_edu.homework.sandbox import memory_accounting, sandbox_problem

AUTOGRADER = Path("/autograder")


def student_key(metadata: Path) -> str:
    """Who submitted, as Gradescope names them (their user ids, sorted); "anonymous" when it does not say."""
    try:
        users = json.loads(metadata.read_text()).get("users", [])
        ids = sorted(str(u.get("id") or u.get("email")) for u in users if isinstance(u, dict))
    except (OSError, ValueError, AttributeError):
        ids = []
    return "+".join(ids) or "anonymous"


def results(row: Row) -> dict[str, Any]:
    """Gradescope's results.json for one row: one test per question, the feedback as the overall output."""
    tests = [{"name": q, "score": v["score"], "max_score": v["possible"], "visibility": "visible",
              "output": ("Hidden checks failed: " + ", ".join(v["failed"]) + "." if v["failed"] else "") +
              "".join(f"\nHint: {h}" for h in v["hints"]) + (f"\nPublic check: {v['public']}" if v["public"] else "")}
             for q, v in row.questions.items()]
    return {"score": row.total, "output": feedback_markdown(row), "output_format": "md", "tests": tests,
            "visibility": "visible"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.gradescope", description=__doc__.split("\n")[0])
    p.add_argument("--assignment", required=True)
    args = p.parse_args(argv)
    homework = AUTOGRADER / "source" / "homework"
    out = AUTOGRADER / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    sandboxed = sandbox_problem() is None
    if not sandboxed and os.geteuid() != 0:
        p.exit(2, f"{p.prog}: no sandbox ({sandbox_problem()}) and not root: the questions cannot run apart from "
                  "the judge\n")
    print(f"sandbox: {'bubblewrap' if sandboxed else 'none (the questions run as an unprivileged user)'}; memory "
          f"bounded by {memory_accounting()}", flush=True)
    secret = read_secret(homework / "secret", {})
    student = student_key(AUTOGRADER / "submission_metadata.json")
    with tempfile.TemporaryDirectory(prefix="vit_edu_submission_") as tmp:
        folder = Path(tmp)
        notebooks = sorted((AUTOGRADER / "submission").rglob("*.ipynb"))
        if notebooks:  # the one submitted notebook, under the assignment's name
            shutil.copyfile(notebooks[0], folder / f"{args.assignment}.ipynb")
        try:
            rows = grade_folder(folder, homework, secret, assignment=args.assignment, sandboxed=sandboxed,
                                student_of=lambda _: student)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            rows = [Row(f"{args.assignment}.ipynb", args.assignment, error=GRADER_FAULT, fault="grader")]
    row = rows[0] if rows else Row("(nothing)", args.assignment, error="no .ipynb file was submitted",
                                   fault="submission")
    out.write_text(json.dumps(results(row), indent=1))
    if row.fault == "grader":
        print(f"grading failed: {'; '.join(row.details) or row.error}", file=sys.stderr)
        return 1
    print(f"{row.submission}: {row.total:g}/{row.possible:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
