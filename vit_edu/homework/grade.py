"""Grade a folder of homework notebooks: one CSV row and one feedback file per submission.

``python -m vit_edu.homework.grade SUBMISSIONS --autograder-dir _build/homework/autograder --out grades.csv``
(``make grade SUBMISSIONS=dir`` after ``make homework``). Each submission is graded in a worker process of its own:

1. The folder is snapshot first: every notebook is read into a private copy, and grading reads only that copy.
2. The notebook is read without running it (:mod:`~vit_edu.homework.scan`): tampering flags the submission, an
   answer that names its reference scores 0 for that question.
3. Its cells run in a Jupyter kernel inside a bubblewrap sandbox (:mod:`~vit_edu.homework.sandbox`), with time
   limits per cell and per submission and a memory limit. A cell that runs past its limit or stops the kernel is
   replaced by a ``raise`` and the notebook runs again (at most ``Limits.retries`` times).
4. After the last cell the grader sends one more cell, the hidden probes (their source never lies on the
   sandbox's disk), and takes the plain data they return from that cell's output.
5. The judges compare that data with the reference in the worker's own process, with the answer key, which
   never enters the sandbox (:mod:`~vit_edu.homework.cases`).

``--no-sandbox`` runs the kernel as a plain process (for machines without bubblewrap): then a submission can read
and write whatever the grading user can.
"""

from __future__ import annotations

import argparse
import base64
import csv
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat

from vit_edu.homework import cases as cases_module
from vit_edu.homework import scan
from vit_edu.homework.sandbox import SandboxKernelManager, bwrap_problem

PROBE_MIME = "application/vnd.vit-edu.probe+base64"
# otter's own cells in a student notebook: the grader's probe runs the public checks itself, under its time limit.
OTTER_CHECK = re.compile(r'grader\.check\("\w+"\)|grader\.check_all\(\)|grader\.export\(.*\)')
# Run before the submission's first cell: `exit()`/`quit()` would end the kernel after their cell (and blame the
# next one), `os._exit` would kill it; make them raise instead, so only their own cell fails.
PRELUDE = (
    "# Sent by vit_edu.homework.grade before the submission's cells.\n"
    "import os as _os\n"
    "def _no_exit(*args):\n"
    "    raise SystemExit(f'os._exit{args} is not allowed while grading')\n"
    "_os._exit = _no_exit\n"
    "get_ipython().ask_exit = lambda: None\n"
)


@dataclass(frozen=True)
class Limits:
    """Time and memory limits for grading one submission."""

    timeout: float = 300.0  # wall clock for one run of the notebook, kernel start-up included
    cell_timeout: int = 60  # one notebook cell
    test_timeout: float = 20.0  # one hidden check
    memory_mb: int = 6144  # address space of the sandbox (PyTorch alone maps ~3.5 GB)
    retries: int = 2  # runs again after removing a cell that ran past its limit or stopped the kernel
    file_mb: int = 256  # the largest file the submission may write


@dataclass
class Row:
    """One submission's grading result: one CSV row, one feedback file."""

    submission: str
    assignment: str = ""
    status: str = "failed"
    error: str = ""
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    peak_mb: float = 0.0  # the kernel's largest resident memory, as it reports it (a figure for tuning limits)

    @property
    def total(self) -> float:
        return sum(q["score"] for q in self.questions.values())

    @property
    def possible(self) -> float:
        return sum(q["possible"] for q in self.questions.values())


# ---------------------------------------------------------------- an assignment's hidden checks


@dataclass
class Assignment:
    """The hidden checks of one assignment, read from its autograder zip into the grader's own memory."""

    name: str
    module: ModuleType
    source: str
    key: Any

    @property
    def cases(self) -> cases_module.Cases:
        return self.module.cases

    @classmethod
    def from_zip(cls, path: Path) -> Assignment:
        name = path.stem
        with zipfile.ZipFile(path) as z:
            source = z.read(f"files/hidden_{name}.py").decode()
            key_name = f"files/hidden_{name}_key.json"
            key = json.loads(z.read(key_name)) if key_name in z.namelist() else None
        return cls(name, load_module(f"hidden_{name}", source), source, key)


def load_module(name: str, source: str) -> ModuleType:
    """A module made from ``source`` (not registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def probe_cell(assignment: Assignment, test_timeout: float) -> str:
    """The cell the grader runs after the submission's last cell: the probes, sent as source, data back."""
    cases_source = Path(cases_module.__file__).read_text()
    return (
        "# Sent by vit_edu.homework.grade after the submission's cells.\n"
        "import base64 as _b64, io as _io, resource as _resource, sys as _sys, types as _types\n"
        "import torch as _torch\n"
        "from IPython.display import display as _display\n"
        "def _grading_module(_name, _source):\n"
        "    _m = _types.ModuleType(_name)\n"
        "    _sys.modules[_name] = _m\n"
        "    exec(compile(_source, '<' + _name + '>', 'exec'), _m.__dict__)\n"
        "    return _m\n"
        f"_grading_module('vit_edu.homework.cases', {cases_source!r})\n"
        f"_hidden = _grading_module({'hidden_' + assignment.name!r}, {assignment.source!r})\n"
        "_buffer = _io.BytesIO()\n"
        f"_result = _hidden.cases.probe_all(globals(), {test_timeout!r})\n"
        "_result['peak_mb'] = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "_torch.save(_result, _buffer)\n"
        f"_display({{{PROBE_MIME!r}: _b64.b64encode(_buffer.getvalue()).decode()}}, raw=True)\n"
    )


# ---------------------------------------------------------------- running a notebook in the sandbox


def _client_class() -> type:
    """nbclient's client, keeping no output but the probe's (a flood of prints costs time, never memory)."""
    from nbclient import NotebookClient

    class QuietClient(NotebookClient):  # type: ignore[misc, valid-type]
        def output(self, outs, msg, display_id, cell_index):  # type: ignore[no-untyped-def]
            data = msg.get("content", {}).get("data", {})
            if msg["msg_type"] == "display_data" and PROBE_MIME in data:
                return super().output(outs, msg, display_id, cell_index)
            return None

    return QuietClient


def _kill_group(pid: int) -> None:
    """Kill a process group (the sandbox and all in it: bwrap's PID namespace ends with it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_notebook(nb: nbformat.NotebookNode, probe: str, work: Path, limits: Limits,
                 sandboxed: bool) -> tuple[dict[str, Any] | None, int | None, str]:
    """Run every code cell, then the probe: ``(probe data, index of a cell to remove, why)``."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    import torch

    km = SandboxKernelManager(work, sandboxed=sandboxed, memory_mb=limits.memory_mb, file_mb=limits.file_mb)
    cells = [nbformat.v4.new_code_cell(PRELUDE), *nb.cells, nbformat.v4.new_code_cell(probe)]
    run = nbformat.from_dict({**nb, "cells": cells})  # the submission's cell i is run's cell i + 1
    client = _client_class()(run, km=km, allow_errors=True, interrupt_on_timeout=False, startup_timeout=120)
    start = time.monotonic()
    with client.setup_kernel(**km.launch_options()):
        # Whatever the kernel does (a hang inside the protocol included), the whole run ends at its deadline.
        pid = km.provisioner.pid
        watchdog = threading.Timer(limits.timeout, _kill_group, args=(pid,))
        watchdog.start()
        try:
            for i, cell in enumerate(run.cells):
                if cell.cell_type != "code" or OTTER_CHECK.fullmatch(cell.source.strip()):
                    continue
                left = limits.timeout - (time.monotonic() - start)
                is_probe = i == len(run.cells) - 1
                where = None if i == 0 or is_probe else i - 1
                if left <= 1:
                    return None, where, f"was reached after {limits.timeout:g} s, the limit for the notebook"
                client.timeout = int(left if is_probe else min(left, limits.cell_timeout))
                try:
                    client.execute_cell(cell, i)
                except CellTimeoutError:
                    return None, where, f"ran past {client.timeout} s"
                except DeadKernelError:
                    if not watchdog.is_alive():
                        return None, where, f"was running when the notebook reached {limits.timeout:g} s"
                    return None, where, "stopped the kernel"
        finally:
            watchdog.cancel()
            # nbclient leaves a kernel it was handed running: end it, and everything in its session, now.
            _kill_group(pid)
    for out in run.cells[-1].outputs:
        if PROBE_MIME in out.get("data", {}):
            raw = base64.b64decode(out["data"][PROBE_MIME])
            return torch.load(io.BytesIO(raw), weights_only=True), None, ""
    return None, None, "the grading step returned nothing"


def grade_notebook(path: Path, assignment: Assignment, limits: Limits, sandboxed: bool) -> Row:
    """Scan, run and judge one notebook (in a worker process); never raises."""
    row = Row(submission=path.name, assignment=assignment.name)
    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 — not JSON, not a notebook
        row.error = f"not a readable notebook: {type(e).__name__}: {str(e)[:200]}"
        return row
    named = nb.metadata.get("otter", {}).get("assignment_name", assignment.name)
    if named != assignment.name:
        row.error = f"this notebook is homework {named!r}, not {assignment.name!r}"
        return row
    cases = assignment.cases
    row.flags = [str(f) for f in scan.tampering(nb)]
    disqualified = {q: "; ".join(str(f) for f in found) for q, found in
                    scan.reference_uses(nb, cases.answers, cases.references).items()}
    probe = probe_cell(assignment, limits.test_timeout)
    probed: dict[str, Any] | None = None
    removed: list[str] = []
    why = ""
    work = Path(tempfile.mkdtemp(prefix="vit_edu_grade_"))
    try:
        for _ in range(0 if row.flags else limits.retries + 1):  # a flagged notebook is not run: it scores 0
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            nbformat.write(nb, str(work / f"{assignment.name}.ipynb"))  # otter's init cell reads it
            probed, cell, why = run_notebook(nb, probe, work, limits, sandboxed)
            if probed is not None or cell is None:
                break
            removed.append(f"cell {cell} {why}")
            nb.cells[cell].source = f"raise RuntimeError('vit_edu.homework.grade removed this cell: it {why}')"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if removed:
        row.notes.append(f"removed {', '.join(removed)}")
    if probed is None and not row.flags:
        row.error = f"could not grade: {why}"
    probed = probed or {}
    if row.flags:
        disqualified = {q: "flagged for review: " + "; ".join(row.flags) for q in cases.questions()}
    verdicts = cases.judge_all(probed, assignment.key, disqualified)
    peak = probed.get("peak_mb")
    row.peak_mb = round(float(peak), 1) if isinstance(peak, (int, float)) else 0.0
    row.questions = {q: asdict(v) for q, v in verdicts.items()}
    if not row.flags:
        row.notes += [f"{q}: {m}" for q, m in disqualified.items()]
        row.notes += [f"{q}: {d.split(': ', 1)[1]}" for q, v in verdicts.items() for d in v.detail
                      if "called the book's reference" in d]
    row.status = "flagged" if row.flags else "graded" if probed else "failed"
    return row


# ---------------------------------------------------------------- the parent


def assignment_of(notebook: Path, names: list[str]) -> str | None:
    """The assignment a notebook belongs to: otter's metadata name, else the longest name in the file name."""
    try:
        name = json.loads(notebook.read_text()).get("metadata", {}).get("otter", {}).get("assignment_name")
    except (ValueError, UnicodeDecodeError, AttributeError):
        name = None
    if name in names:
        return name
    matches = [a for a in names if a in notebook.stem]
    return max(matches, key=len) if matches else None


def _worker_cmd(notebook: Path, autograder: Path, out: Path, limits: Limits, sandboxed: bool) -> list[str]:
    return [sys.executable, "-m", "vit_edu.homework.grade", "--worker", str(notebook), str(autograder), str(out),
            json.dumps(asdict(limits)), "1" if sandboxed else "0"]


def grade_one(notebook: Path, autograder: Path, limits: Limits, sandboxed: bool = True) -> Row:
    """Grade one (snapshot) notebook in a worker process of its own; never raises."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vit_edu_worker_") as tmp:
        out = Path(tmp) / "row.json"
        budget = (limits.timeout + 30) * (limits.retries + 1) + 60
        try:
            proc = subprocess.run(_worker_cmd(notebook, autograder, out, limits, sandboxed), cwd=tmp,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=budget)
            row = Row(**json.loads(out.read_text())) if out.exists() else Row(
                notebook.name, autograder.stem, error=f"the grader's worker failed: "
                f"{proc.stderr.decode(errors='replace')[-400:]}")
        except subprocess.TimeoutExpired:
            row = Row(notebook.name, autograder.stem, error=f"grading ran past {budget:g} s")
    row.seconds = round(time.monotonic() - start, 1)
    return row


def snapshot(folder: Path, dest: Path) -> list[tuple[str, Path]]:
    """Copy every ``*.ipynb`` of ``folder`` (sorted, not recursive) to ``dest`` under safe names, before grading."""
    copies = []
    for i, path in enumerate(sorted(folder.glob("*.ipynb"))):
        if not path.is_file():
            continue
        safe = dest / f"{i:04d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', path.name)}"
        safe.write_bytes(path.read_bytes())
        copies.append((path.name, safe))
    return copies


def grade_folder(folder: Path, autograder_dir: Path, *, assignment: str | None = None, limits: Limits = Limits(),
                 jobs: int = 1, sandboxed: bool = True) -> list[Row]:
    """Grade every ``*.ipynb`` in ``folder`` against ``autograder_dir/<assignment>.zip``; the folder is never changed."""
    zips = {z.stem: z.resolve() for z in sorted(autograder_dir.glob("*.zip"))}
    if not zips:
        raise FileNotFoundError(f"no autograder zips in {autograder_dir}: run `make homework` first")
    if assignment is not None and assignment not in zips:
        raise ValueError(f"no autograder for assignment {assignment!r}; have {sorted(zips)}")
    if sandboxed and (problem := bwrap_problem()):
        raise RuntimeError(f"cannot grade in a sandbox: {problem}. Install bubblewrap, or pass --no-sandbox to "
                           f"grade without one (a submission can then read and write what you can)")
    with tempfile.TemporaryDirectory(prefix="vit_edu_snapshot_") as tmp:
        copies = snapshot(folder, Path(tmp))

        def one(item: tuple[str, Path]) -> Row:
            original, copy = item
            name = assignment or assignment_of(copy, list(zips))
            if name is None:
                row = Row(original, error=f"cannot tell which homework this is ({', '.join(zips)}): pass --assignment")
            else:
                row = grade_one(copy, zips[name], limits, sandboxed)
                row.submission = original
            print(f"{row.submission}: {row.total:g}/{row.possible:g} {row.status} {row.error} ({row.seconds:g} s)",
                  flush=True)
            return row

        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each job waits on its own worker process
            return list(pool.map(one, copies))


def write_csv(rows: list[Row], path: Path) -> None:
    """One row per submission: status, flags, notes, one column per question, total, possible, seconds."""
    questions = sorted({q for r in rows for q in r.questions})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "assignment", "status", "error", "flags", "notes", *questions, "total",
                         "possible", "seconds", "peak_mb"])
        for r in rows:
            cells = [f"{r.questions[q]['score']:g}" if q in r.questions else "" for q in questions]
            writer.writerow([r.submission, r.assignment, r.status, r.error, "; ".join(r.flags), "; ".join(r.notes),
                             *cells, f"{r.total:g}", f"{r.possible:g}", r.seconds, r.peak_mb])


def feedback_markdown(row: Row) -> str:
    """What a student may see: scores, public messages, the names of failed hidden checks (never their inputs)."""
    lines = [f"# {row.assignment or 'Homework'}: feedback for {row.submission}", "",
             f"**Score: {row.total:g} / {row.possible:g}**", ""]
    if row.error:
        lines += [f"The grader could not run everything: {row.error}.", ""]
    if row.flags:
        lines += ["Your notebook was set aside for your instructor to review, and scores 0 until then, because it "
                  "reaches into what grading relies on:", "", *[f"- {f}" for f in row.flags], ""]
    lines += ["| question | score | possible |", "|---|---|---|"]
    lines += [f"| {q} | {v['score']:g} | {v['possible']:g} |" for q, v in row.questions.items()]
    for q, v in row.questions.items():
        if v["score"] == v["possible"] and not v["public"]:
            continue
        lines += ["", f"## {q}"]
        if v["public"]:
            lines += ["", "Public check: " + v["public"].replace("\n", " ")]
        if v["failed"]:
            lines += ["", "Hidden checks failed: " + ", ".join(v["failed"]) + "."]
        for note in row.notes:
            if note.startswith(f"{q}: "):
                lines += ["", "Why: " + note.split(": ", 1)[1]]
    return "\n".join(lines) + "\n"


def write_feedback(rows: list[Row], folder: Path) -> list[Path]:
    """One Markdown feedback file per row, named after the submission."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, row in enumerate(rows):
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(row.submission).stem) or "submission"
        path = folder / f"{i:03d}_{stem}.md"
        path.write_text(feedback_markdown(row))
        paths.append(path)
    return paths


def _worker(argv: list[str]) -> None:
    """``--worker NOTEBOOK ZIP OUT LIMITS SANDBOXED``: grade one notebook, write its row as JSON."""
    notebook, autograder, out, limits, sandboxed = argv
    row = grade_notebook(Path(notebook), Assignment.from_zip(Path(autograder)), Limits(**json.loads(limits)),
                         sandboxed == "1")
    Path(out).write_text(json.dumps(asdict(row)))


def main(argv: list[str] | None = None) -> None:
    """Command line: grade a folder into a CSV and feedback files."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker(argv[1:])
        return
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.grade", description=__doc__.split("\n")[0])
    p.add_argument("submissions", type=Path, help="folder of .ipynb submissions (never modified)")
    p.add_argument("--autograder-dir", type=Path, default=Path("_build/homework/autograder"))
    p.add_argument("--assignment", help="grade every notebook as this assignment (default: from the notebook)")
    p.add_argument("--out", type=Path, default=Path("grades.csv"))
    p.add_argument("--feedback", type=Path, help="folder for one feedback file per submission (default: next to --out)")
    d = Limits()
    p.add_argument("--timeout", type=float, default=d.timeout, help="seconds per run of a notebook")
    p.add_argument("--cell-timeout", type=int, default=d.cell_timeout, help="seconds per notebook cell")
    p.add_argument("--test-timeout", type=float, default=d.test_timeout, help="seconds per hidden check")
    p.add_argument("--memory-mb", type=int, default=d.memory_mb, help="address-space limit per submission")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at the same time")
    p.add_argument("--no-sandbox", action="store_true", help="run kernels without bubblewrap (trusted work only)")
    args = p.parse_args(argv)
    if not args.submissions.is_dir():
        p.error(f"{args.submissions} is not a folder")
    limits = Limits(args.timeout, args.cell_timeout, args.test_timeout, args.memory_mb)
    try:
        rows = grade_folder(args.submissions, args.autograder_dir, assignment=args.assignment, limits=limits,
                            jobs=args.jobs, sandboxed=not args.no_sandbox)
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out)
    feedback = args.feedback or args.out.parent / f"{args.out.stem}_feedback"
    write_feedback(rows, feedback)
    print(f"{len(rows)} submissions graded into {args.out}; feedback files in {feedback}")


if __name__ == "__main__":
    main()
