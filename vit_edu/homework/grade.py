"""Grade a folder of homework notebooks with otter-grader: one CSV row per submission, one column per question.

``python -m vit_edu.grade SUBMISSIONS --autograder-dir _build/homework/autograder --out grades.csv``
(``make grade SUBMISSIONS=dir`` after ``make homework``). Each notebook is graded by ``otter run``'s own code
(``otter.run.main``: no Docker) against ``<assignment>.zip``; what otter does not do is wrapped around it:

- Submissions are only read: each is copied into a fresh temporary folder and graded there.
- Each submission is graded in its own worker process (``python -m vit_edu.grade --worker``), in its own
  session, with a wall-clock timeout and an address-space limit (``RLIMIT_AS``) that the Jupyter kernel
  inherits, so an endless loop or a huge allocation fails that submission's cell, never the grader.
- Per-cell timeout: otter runs the notebook with nbconvert's ``ExecutePreprocessor`` and no timeout. The
  worker swaps in a subclass that interrupts a cell after ``--cell-timeout`` seconds and records which
  cell is running. A cell that kills the kernel (a crash, ``os.kill``) or ignores the interrupt is replaced
  in the copy by a ``raise`` and the submission is graded again (at most ``Limits.retries`` times).
- Per-test time limit: otter runs the test cases in the kernel with no limit, and a ``SystemExit`` or
  ``KeyboardInterrupt`` raised in a test escapes and loses every result. A first cell inserted into the copy
  calls :func:`install_guards`, which runs each test case under ``SIGALRM`` (``--test-timeout``), scores any
  exception as a failed test case, turns ``os._exit`` into ``SystemExit`` and keeps the kernel alive after
  ``exit()`` or ``quit()``.

Not a sandbox: a submission runs as the grading user and can read or write any file that user can.
Grade untrusted work as a user that owns nothing else (or in a container).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from vit_edu.launch import TAG as SETUP_TAG

INDEX_KEY = "vit_edu_grade_index"  # cell metadata: the cell's index in the submission as handed in
PRELUDE = (
    "# Inserted by vit_edu.grade, not part of the submission.\n"
    "from vit_edu.grade import install_guards\n"
    "install_guards({test_timeout})\n"
)


@dataclass(frozen=True)
class Limits:
    """Time and memory limits for grading one submission."""

    timeout: float = 300.0  # wall clock for one grading attempt, kernel start-up included
    cell_timeout: int = 60  # one notebook cell
    test_timeout: float = 20.0  # one test case
    memory_mb: int = 6144  # address space of the worker and its kernel (PyTorch alone maps ~3.5 GB)
    retries: int = 2  # regrades after removing a cell that killed the kernel or ignored the interrupt


@dataclass
class Row:
    """One submission's grading result: one CSV row."""

    submission: str
    assignment: str = ""
    status: str = "failed"
    error: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    possible: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


# ---------------------------------------------------------------- inside the grading kernel


class TestTimeout(Exception):
    """A test case ran past the per-test time limit."""


def install_guards(test_timeout: float) -> None:
    """In the grading kernel: a time limit per test case, any exception a failed case, ``os._exit`` an error."""
    from otter.test_files.abstract_test import TestCaseResult
    from otter.test_files.exception_test import ExceptionTestFile

    def _no_exit(*args: Any) -> None:
        raise SystemExit(f"os._exit{args} is not allowed while grading")

    os._exit = _no_exit  # type: ignore[assignment]
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:  # exit() and quit() would end the kernel after the cell: make them do nothing
        shell.ask_exit = lambda: None

    def run(self: ExceptionTestFile, global_environment: dict[str, Any]) -> None:
        self.test_case_results = []
        for tc in self.test_cases:
            passed, message = run_test_case(tc.body, global_environment, test_timeout)
            self.test_case_results.append(TestCaseResult(test_case=tc, message=message, passed=passed))

    ExceptionTestFile.run = run


def run_test_case(case: Any, env: dict[str, Any], seconds: float) -> tuple[bool, str]:
    """Run one otter ``test_case`` under ``SIGALRM``; return ``(passed, message)``, never raise."""

    def _alarm(signum: int, frame: Any) -> None:
        raise TestTimeout(f"the test ran longer than {seconds:g} s: is there an endless loop?")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        case.call_func(env)
        return True, "✅ Test case passed"
    except BaseException as e:  # noqa: BLE001 — SystemExit, KeyboardInterrupt: a failed case, not a lost run
        return False, f"❌ Test case failed\n{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- the worker process


def _worker(notebook: str, autograder: str, result_path: str, progress_path: str, cell_timeout: int) -> None:
    """Grade one prepared notebook with ``otter.run.main``; write scores (or the error) as JSON."""
    import nbconvert.preprocessors as preprocessors
    from traitlets import Integer

    base = preprocessors.ExecutePreprocessor

    class LimitedExecutePreprocessor(base):  # type: ignore[misc, valid-type]
        """nbconvert's executor with a per-cell timeout that interrupts the kernel; notes the running cell."""

        timeout = Integer(cell_timeout, allow_none=True).tag(config=True)

        last_cell: int | None = None  # the last submission cell started (otter adds cells of its own)

        def preprocess_cell(self, cell: Any, resources: Any, index: int) -> Any:
            pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
            if cell.cell_type == "code" and isinstance(cell.metadata.get(INDEX_KEY), int):
                self.last_cell = cell.metadata[INDEX_KEY]
            Path(progress_path).write_text(json.dumps({"cell": self.last_cell, "kernel_pid": pid}))
            return super().preprocess_cell(cell, resources, index)

    LimitedExecutePreprocessor.interrupt_on_timeout = True
    preprocessors.ExecutePreprocessor = LimitedExecutePreprocessor  # otter imports it at call time
    from otter.run import main as otter_run

    out: dict[str, Any] = {}
    try:
        results = otter_run(notebook, autograder=autograder, output_dir=None, no_logo=True)
        if results.has_catastrophic_failure():
            out["error"] = f"otter could not grade: {results.summary()}"
        out["questions"] = {
            name: {
                "score": float(tf.score),
                "possible": float(tf.possible),
                "failed": [r.message for r in tf.test_case_results if not r.passed],
            }
            for name, tf in results.results.items()
        }
    except BaseException as e:  # noqa: BLE001 — report any failure to the parent
        out["error"] = f"{type(e).__name__}: {e}".strip()
        progress = json.loads(Path(progress_path).read_text()) if Path(progress_path).exists() else {}
        out["cell"] = progress.get("cell")
    Path(result_path).write_text(json.dumps(out))


# ---------------------------------------------------------------- the parent


def assignment_of(notebook: Path, assignments: list[str]) -> str | None:
    """The assignment a notebook belongs to: otter's metadata name, else the longest name in the file name."""
    try:
        name = json.loads(notebook.read_text()).get("metadata", {}).get("otter", {}).get("assignment_name")
    except (ValueError, UnicodeDecodeError, AttributeError):
        name = None
    if name in assignments:
        return name
    matches = [a for a in assignments if a in notebook.stem]
    return max(matches, key=len) if matches else None


def prepare(source: Path, dest: Path, assignment: str, test_timeout: float) -> nbformat.NotebookNode:
    """Copy a submission to ``dest``: cells tagged with their index, the guard cell first, the assignment named.

    A notebook without otter's assignment name (a master) gets ``assignment``; one with another name keeps
    it, and otter refuses to grade it against the wrong autograder.
    """
    nb = nbformat.read(str(source), as_version=4)
    nb.metadata.setdefault("otter", {}).setdefault("assignment_name", assignment)
    for i, cell in enumerate(nb.cells):
        cell.metadata[INDEX_KEY] = i
    guard = nbformat.v4.new_code_cell(PRELUDE.format(test_timeout=test_timeout))
    nb.cells.insert(0, guard)
    nbformat.write(nb, str(dest))
    return nb


def _limit_memory(megabytes: int) -> None:
    """``preexec_fn``: cap the address space of the worker and everything it starts."""
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _kill(proc: subprocess.Popen, progress: Path) -> None:
    """Kill the worker's process group and the kernel it started (a session of its own)."""
    groups = [proc.pid]
    try:
        pid = json.loads(progress.read_text()).get("kernel_pid")
        if isinstance(pid, int):
            groups.append(pid)
    except (OSError, ValueError):
        pass
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()


def _attempt(notebook: Path, autograder: Path, work: Path, limits: Limits) -> dict[str, Any]:
    """Run one worker; return its JSON result, or a timeout/crash description with the running cell."""
    result, progress, log = work / "result.json", work / "progress.json", work / "worker.log"
    for path in (result, progress):
        path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "vit_edu.grade", "--worker", str(notebook), str(autograder), str(result),
           str(progress), str(limits.cell_timeout)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=lambda: _limit_memory(limits.memory_mb))
        try:
            proc.wait(timeout=limits.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc, progress)
            cell = json.loads(progress.read_text()).get("cell") if progress.exists() else None
            return {"error": f"grading ran past {limits.timeout:g} s", "cell": cell, "timeout": True}
    if result.exists():
        return json.loads(result.read_text())
    tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
    return {"error": f"the grading process exited with status {proc.returncode}: {tail}"}


def grade_one(submission: Path, autograder: Path, limits: Limits) -> Row:
    """Grade one notebook in a temporary copy; never raises, never touches ``submission``."""
    row = Row(submission=submission.name, assignment=autograder.stem)
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="vit_edu_grade_"))
    try:
        copy = work / "submission" / submission.name
        copy.parent.mkdir()
        try:
            nb = prepare(submission, copy, autograder.stem, limits.test_timeout)
        except Exception as e:  # noqa: BLE001 — not JSON, not a notebook: this row fails, the others go on
            row.error = f"not a readable notebook: {type(e).__name__}: {e}"
            return row
        removed: list[str] = []
        for _ in range(limits.retries + 1):
            out = _attempt(copy, autograder, work, limits)
            cell = out.get("cell")
            if "questions" in out or not isinstance(cell, int):
                break
            why = "ran past the time limit" if out.get("timeout") else "stopped the kernel"
            removed.append(f"cell {cell} {why}")
            target = next(c for c in nb.cells if c.metadata.get(INDEX_KEY) == cell)
            target.cell_type, target.outputs = "code", []
            target.source = f"raise RuntimeError('vit_edu.grade removed this cell: it {why}')"
            nbformat.write(nb, str(copy))
        for name, q in out.get("questions", {}).items():
            row.scores[name], row.possible[name] = q["score"], q["possible"]
        notes = [f"removed {', '.join(removed)}"] if removed else []
        if "questions" in out and "error" not in out:
            row.status = "graded"
        else:
            notes.append(out.get("error", "unknown error"))
        row.error = "; ".join(notes)
        return row
    finally:
        row.seconds = round(time.monotonic() - start, 1)
        shutil.rmtree(work, ignore_errors=True)


def grade_folder(folder: Path, autograder_dir: Path, *, assignment: str | None = None,
                 limits: Limits = Limits(), jobs: int = 1) -> list[Row]:
    """Grade every ``*.ipynb`` in ``folder`` (sorted, not recursive) against ``autograder_dir/<name>.zip``."""
    zips = {z.stem: z.resolve() for z in sorted(autograder_dir.glob("*.zip"))}  # the worker runs elsewhere
    if not zips:
        raise FileNotFoundError(f"no autograder zips in {autograder_dir}: run `make homework` first")
    if assignment is not None and assignment not in zips:
        raise ValueError(f"no autograder for assignment {assignment!r}; have {sorted(zips)}")

    def one(notebook: Path) -> Row:
        name = assignment or assignment_of(notebook, list(zips))
        if name is None:
            row = Row(notebook.name, error=f"cannot tell which homework this is ({', '.join(zips)}): "
                                           f"pass --assignment")
        else:
            row = grade_one(notebook, zips[name], limits)
        print(f"{row.submission}: {sum(row.scores.values()):g}/{sum(row.possible.values()):g} "
              f"{row.status} {row.error} ({row.seconds:g} s)", flush=True)
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each job waits on its own worker process
        return list(pool.map(one, sorted(folder.glob("*.ipynb"))))


def write_csv(rows: list[Row], path: Path) -> None:
    """One row per submission: name, assignment, status, error, one column per question, total, possible."""
    questions = sorted({q for r in rows for q in r.possible})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "assignment", "status", "error", *questions, "total", "possible", "seconds"])
        for r in rows:
            cells = [f"{r.scores[q]:g}" if q in r.scores else "" for q in questions]
            writer.writerow([r.submission, r.assignment, r.status, r.error, *cells,
                             f"{sum(r.scores.values()):g}", f"{sum(r.possible.values()):g}", r.seconds])


def build_homework(masters: Path, out: Path) -> list[str]:
    """``otter assign`` every ``masters/hw*.ipynb``: ``out/student/<name>.ipynb`` and ``out/autograder/<name>.zip``."""
    names = []
    for master in sorted(masters.glob("hw*.ipynb")):
        name = master.stem
        dist = out / "dist" / name
        shutil.rmtree(dist, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "otter", "assign", str(master.resolve()), str(dist.resolve())],
                       check=True, stdout=subprocess.DEVNULL)
        for sub, pattern, target in (("student", f"{name}.ipynb", f"{name}.ipynb"),
                                     ("autograder", f"{name}-autograder_*.zip", f"{name}.zip")):
            (found,) = sorted((dist / sub).glob(pattern))
            (out / sub).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found, out / sub / target)
        student = out / "student" / f"{name}.ipynb"
        nb = nbformat.read(str(student), as_version=4)
        # The page opens with the title and instructions, then the set-up cell (it installs otter where it is
        # missing), then otter's init cell, which otter assign puts first.
        init = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Initialize Otter"))
        setup = next(c for c in nb.cells if SETUP_TAG in c.metadata.get("tags", []))
        nb.cells.remove(init)
        nb.cells.insert(nb.cells.index(setup) + 1, init)
        nbformat.write(nb, str(student))
        names.append(name)
    if not names:
        raise FileNotFoundError(f"no hw*.ipynb masters in {masters}")
    return names


def main(argv: list[str] | None = None) -> None:
    """Command line: grade a folder and write the CSV (or build the homework with ``--build``)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        notebook, autograder, result, progress, cell_timeout = argv[1:6]
        _worker(notebook, autograder, result, progress, int(cell_timeout))
        return
    if argv[:1] == ["--build"]:
        masters, out = map(Path, argv[1:3])
        names = build_homework(masters, out)
        print(f"{', '.join(names)}: student notebooks in {out / 'student'}, autograders in {out / 'autograder'}")
        return
    p = argparse.ArgumentParser(prog="python -m vit_edu.grade", description=__doc__.split("\n")[0])
    p.add_argument("submissions", type=Path, help="folder of .ipynb submissions (never modified)")
    p.add_argument("--autograder-dir", type=Path, default=Path("_build/homework/autograder"))
    p.add_argument("--assignment", help="grade every notebook as this assignment (default: from the notebook)")
    p.add_argument("--out", type=Path, default=Path("grades.csv"))
    d = Limits()
    p.add_argument("--timeout", type=float, default=d.timeout, help="seconds per grading attempt")
    p.add_argument("--cell-timeout", type=int, default=d.cell_timeout, help="seconds per notebook cell")
    p.add_argument("--test-timeout", type=float, default=d.test_timeout, help="seconds per test case")
    p.add_argument("--memory-mb", type=int, default=d.memory_mb, help="address-space limit per submission")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at the same time")
    args = p.parse_args(argv)
    if not args.submissions.is_dir():
        p.error(f"{args.submissions} is not a folder")
    limits = Limits(args.timeout, args.cell_timeout, args.test_timeout, args.memory_mb)
    rows = grade_folder(args.submissions, args.autograder_dir, assignment=args.assignment, limits=limits,
                        jobs=args.jobs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out)
    print(f"{len(rows)} submissions graded into {args.out}")


if __name__ == "__main__":
    main()
