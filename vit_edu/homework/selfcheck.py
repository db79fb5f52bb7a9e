"""Grade a master's own solutions the grader's way, before any student: ``python -m vit_edu.homework.selfcheck hw1_tokens``.

:func:`preflight` runs at the start of every grading run (``make grade``, Gradescope's ``run_autograder``): one
question's sandbox must import torch and ``vit_edu`` and must not open the homework's instructor files, the
checkout or the secret, and the first master must score in full; otherwise the run stops with a clear error, before
any student is graded. For the homework's author, :func:`selfcheck` grades one master question by question, so a
reference list that strips what the solution needs, or a missing ``depends``, shows as lost points.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import nbformat

from vit_edu.homework.grade import Homework, Limits, assignments, grade_questions, master_blocks, package_mount, \
    stripped_packages
from vit_edu.homework.sandbox import probe, sandbox_problem
from vit_edu.homework.strip import PACKAGE, strip_package

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = ("book/homework", "_build", ".git", "README.md")  # what a checkout holds that a sandbox must not read


def selfcheck(homework: Homework, secret: str, sandboxed: bool, limits: Limits = Limits()) -> dict[str, dict]:
    """Question -> the grader's verdict on the master's own solution, hidden inputs drawn for "selfcheck"."""
    questions = homework.questions_for(secret, "selfcheck")
    blocks = master_blocks(nbformat.read(str(homework.source / f"{homework.name}.ipynb"), as_version=4))
    with tempfile.TemporaryDirectory(prefix="vit_edu_selfcheck_") as tmp:
        packages = stripped_packages(questions, Path(tmp))
        return grade_questions(questions, blocks, packages, limits, sandboxed)


def must_not_read(homework_dir: Path, name: str, sandboxed: bool) -> list[Path]:
    """What no question may open: the hidden module and the master, the checkout's instructor files, and (without
    bubblewrap, where nothing is bound over it) the grader's own package."""
    checkout = PACKAGE.parent
    paths = [homework_dir / "source" / "hidden" / f"{name}.py", homework_dir / "source" / f"{name}.ipynb",
             *(checkout / p for p in PRIVATE if (checkout / p).exists())]
    return paths if sandboxed else [*paths, PACKAGE / "__init__.py"]


def preflight(homework_dir: Path, secret: str, sandboxed: bool, limits: Limits = Limits(),
              private: tuple[Path, ...] = ()) -> None:
    """Stop (RuntimeError) unless a question's sandbox works and keeps its secrets, and a master scores in full."""
    name = assignments(homework_dir)[0]
    homework = Homework.load(homework_dir, name)
    with tempfile.TemporaryDirectory(prefix="vit_edu_preflight_") as tmp:
        package = strip_package((), Path(tmp) / "vit_edu")
        problem = probe([*must_not_read(homework_dir, name, sandboxed), *private], sandboxed=sandboxed,
                        **package_mount(package, sandboxed))
    if problem:
        raise RuntimeError(f"the grader's sandbox is not safe here, nothing was graded: {problem}" +
                           ("" if sandboxed else ". Without bubblewrap, make the checkout unreadable to other users "
                                                 "(chmod 700) or install bubblewrap"))
    verdicts = selfcheck(homework, secret, sandboxed, limits)
    lost = {q: v for q, v in verdicts.items() if v["score"] < v["possible"]}
    if lost:
        raise RuntimeError(f"the master of {name} does not score in full on this machine, nothing was graded: " +
                           "; ".join(f"{q}: {'; '.join(v['detail'])[:300]}" for q, v in lost.items()))


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.selfcheck", description=__doc__.split("\n")[0])
    p.add_argument("name", help="the assignment, e.g. hw1_tokens")
    p.add_argument("--homework-dir", type=Path, default=ROOT / "_build" / "homework")
    args = p.parse_args()
    verdicts = selfcheck(Homework.load(args.homework_dir.resolve(), args.name), "selfcheck-secret",
                         sandbox_problem() is None)
    for q, v in verdicts.items():
        print(f"{q}: {v['score']:g}/{v['possible']:g}" + "".join(f"\n    {d}" for d in v["detail"]) +
              (f"\n    public: {v['public']}" if v["public"] else ""))
    total = sum(v["score"] for v in verdicts.values())
    possible = sum(v["possible"] for v in verdicts.values())
    print(f"total {total:g}/{possible:g}")


if __name__ == "__main__":
    main()
