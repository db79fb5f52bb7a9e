"""Grading throughput, the cost of the per-question processes and memory per submission (a benchmark, not a test).

``make bench-grade``. Builds the homework, times the start-up self-check once, then grades the same folder with
``--jobs 1`` and ``--jobs 2`` (hidden inputs from a throwaway secret): every homework answered with its master's
solutions and every untouched student notebook. For each run it prints submissions per minute, and, per
submission, the seconds spent in the per-question processes (one zygote's sandbox in bubblewrap) against the
seconds of the whole notebook's run, and the peak memory of its largest sandbox.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from vit_edu.homework.build import build_homework
from vit_edu.homework.grade import grade_folder
from vit_edu.homework.sandbox import memory_accounting, sandbox_problem
from vit_edu.homework.selfcheck import preflight

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "homework"
SECRET = "a throwaway secret for the benchmark"
sys.path.insert(0, str(Path(__file__).parent))
from homework_helpers import answered  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        built, folder = Path(tmp) / "built", Path(tmp) / "subs"
        build_homework(MASTERS, built)
        folder.mkdir()
        for master in sorted(MASTERS.glob("hw*.ipynb")):
            student = built / "student" / master.name
            nbformat.write(answered(student, master), str(folder / f"solved_{master.name}"))
            (folder / f"untouched_{master.name}").write_bytes(student.read_bytes())
        n = len(list(folder.glob("*.ipynb")))
        start = time.monotonic()
        preflight(built, SECRET, sandbox_problem() is None)
        print(f"start-up self-check (once per run): {time.monotonic() - start:.0f} s; memory bounded by "
              f"{memory_accounting()}")
        for jobs in (1, 2):
            start = time.monotonic()
            rows = grade_folder(folder, built, SECRET, jobs=jobs, preflight=False)
            minutes = (time.monotonic() - start) / 60
            assert all(r.status == "graded" for r in rows), [r.error for r in rows if r.status != "graded"]
            print(f"--jobs {jobs}: {n} submissions in {minutes * 60:.0f} s = {n / minutes:.2f} per minute")
            for r in rows:
                print(f"  {r.submission:32s} {r.seconds:6.1f} s: questions {r.question_seconds:6.1f} s "
                      f"({len(r.questions)} processes), whole notebook {r.notebook_seconds:5.1f} s, "
                      f"questions / notebook {r.question_seconds / max(r.notebook_seconds, 0.1):.1f}; "
                      f"peak {r.peak_mb:.0f} MB")
            print(f"  median peak memory {statistics.median(r.peak_mb for r in rows):.0f} MB, "
                  f"max {max(r.peak_mb for r in rows):.0f} MB")


if __name__ == "__main__":
    main()
