"""Grading throughput, memory per submission and the sandbox's start-up cost (a benchmark, not a test).

``make bench-grade`` (after ``make homework``). Grades the same folder with ``--jobs 1`` and ``--jobs 2``: every
master as handed in and every untouched student notebook, twice. Then times ``bwrap … true`` against ``true`` and
a kernel's start-up (to its first reply) inside and outside the sandbox, in the same run.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from vit_edu.homework.grade import grade_folder
from vit_edu.homework.sandbox import SandboxKernelManager, sandbox_argv

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "_build" / "homework"


def submissions(folder: Path, copies: int = 2) -> int:
    for master in sorted((ROOT / "book" / "homework").glob("hw*.ipynb")):
        for i in range(copies):
            shutil.copyfile(master, folder / f"master{i}_{master.name}")
            shutil.copyfile(BUILT / "student" / master.name, folder / f"untouched{i}_{master.name}")
    return len(list(folder.glob("*.ipynb")))


def kernel_start(sandboxed: bool) -> float:
    """Seconds from nothing to a kernel's first reply (nbclient's start-up: kernel_info answered)."""
    with tempfile.TemporaryDirectory() as tmp:
        km = SandboxKernelManager(Path(tmp), sandboxed=sandboxed)
        client = NotebookClient(nbformat.v4.new_notebook(), km=km, startup_timeout=120)
        start = time.monotonic()
        with client.setup_kernel(**km.launch_options(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            seconds = time.monotonic() - start
            os.killpg(km.provisioner.pid, signal.SIGKILL)  # nbclient leaves a kernel it was handed running
        return seconds


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n = submissions(folder)
        for jobs in (1, 2):
            start = time.monotonic()
            rows = grade_folder(folder, BUILT / "autograder", jobs=jobs)
            minutes = (time.monotonic() - start) / 60
            assert all(r.status == "graded" for r in rows), [r.error for r in rows if r.status != "graded"]
            peaks = [r.peak_mb for r in rows]
            print(f"--jobs {jobs}: {n} submissions in {minutes * 60:.0f} s = {n / minutes:.1f} per minute; "
                  f"seconds each: median {statistics.median(r.seconds for r in rows):.1f}; kernel peak memory: "
                  f"median {statistics.median(peaks):.0f} MB, max {max(peaks):.0f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        plain, boxed = [], []
        for _ in range(20):
            t = time.monotonic()
            subprocess.run(["true"], check=True)
            plain.append(time.monotonic() - t)
            t = time.monotonic()
            subprocess.run([*sandbox_argv(Path(tmp)), "true"], check=True)
            boxed.append(time.monotonic() - t)
    print(f"start a process: plain {statistics.median(plain) * 1e3:.1f} ms, in bwrap "
          f"{statistics.median(boxed) * 1e3:.1f} ms (median of 20; +{(statistics.median(boxed) - statistics.median(plain)) * 1e3:.1f} ms)")
    plain_k = statistics.median(kernel_start(False) for _ in range(3))
    boxed_k = statistics.median(kernel_start(True) for _ in range(3))
    print(f"start a kernel to its first reply: plain {plain_k:.2f} s, in the sandbox {boxed_k:.2f} s "
          f"(median of 3; ratio {boxed_k / plain_k:.2f})")


if __name__ == "__main__":
    main()
