"""Grade a folder of homework notebooks: one CSV row, one feedback file and one executed notebook per submission.

``python -m vit_edu.homework.grade SUBMISSIONS --homework-dir _build/homework --secret-file F --out grades.csv``
(``make grade SUBMISSIONS=dir HOMEWORK_SECRET_FILE=F``); the Gradescope zip's ``run_autograder`` runs the same
code (:mod:`vit_edu.homework.gradescope`). Every path is made absolute here, at the entry point. Before any
student: :func:`vit_edu.homework.selfcheck.preflight` checks that a question's sandbox imports torch and
``vit_edu`` but cannot open the homework folder, the checkout or the secret, and that a master scores in full; it
stops the run otherwise. The folder is then read once into a private snapshot (regular files only: a link or a
device is listed, never followed), and each notebook is graded in a worker process of its own, where every
failure becomes that submission's row:

1. **Hidden inputs per student.** The grader draws the hidden inputs from the course's secret and the student's
   name (the file name; Gradescope's user ids) and computes what a right answer gives with the instructor's
   module (``hidden/<name>.py``, loaded once per run): no two students share hidden inputs, so pooled feedback
   tells nothing. The worker gets them in a private file.
2. **Each question decides its own points.** The question runs in a fresh sandboxed process
   (:mod:`~vit_edu.homework.harness`): the instructor's set-up cells, the submission's cells of the questions it
   builds on, then its own cells, in a copy of ``vit_edu`` that lacks the question's reference implementations
   (:mod:`~vit_edu.homework.strip`). The harness calls the answer on the hidden inputs and returns plain data with
   the forbidden operations PyTorch's dispatcher saw; the judge compares it, outside the sandbox, with what is
   expected (:mod:`~vit_edu.homework.checks`). Whatever a cell does, it can spoil only its own question, and the
   question's time is bounded from outside whatever the cells catch.
3. **The whole notebook still runs**, in a sandbox of its own, for its outputs (the executed copy goes to the
   instructor) and for the feedback's list of cells that raised; nothing it prints decides a point.
4. **Flags for review, never zeros**: a static reading (:mod:`~vit_edu.homework.scan`) lists code that reaches
   into the grading machinery, names a reference or hides what it runs; an answer that silenced the operation
   record is listed too. **Copies** (:mod:`~vit_edu.homework.copies`) are pairs for review.

The CSV is written as rows arrive; the run exits 1 when a row failed for the grader's reasons (the CSV says
which), 2 when the grader cannot start. ``--no-sandbox`` runs the same processes without bubblewrap (as a
dedicated unprivileged user when the grader is root), for machines where bwrap cannot start.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat

from vit_edu.homework import checks, plain, scan, zygote
from vit_edu.homework.assignment import drawer, read_secret
from vit_edu.homework.copies import markdown_escape
from vit_edu.homework.harness import TAKEN_AWAY
from vit_edu.homework.sandbox import HOME, SandboxLimits, SandboxResult, memory_accounting, run, sandbox_problem
from vit_edu.homework.strip import PACKAGE, strip_package

MAX_NOTEBOOK_BYTES = 32 * 1024**2
WORKER_MEMORY_MB = 8192  # the worker's own address space: it parses untrusted data, and torch maps a lot
OTTER_CHECK = re.compile(r'grader\.check\("(\w+)"\)')
OTTER_OTHER = re.compile(r"grader\.check_all\(\)|grader\.export\(.*\)|import otter|grader = otter\.Notebook\(.*\)",
                         re.S)
ASSIGNMENT_NAME = re.compile(rb'"assignment_name"\s*:\s*"(\w{1,80})"')
# The zygote: the capabilities it makes each question's world and cleans up after it with (a question has none),
# where the questions' packages wait, seconds for its start, and what one question may print.
ZYGOTE_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL", "CAP_DAC_OVERRIDE",
                       "CAP_FOWNER")
ZYGOTE_STORE = Path("/run/vit_edu-questions")
ZYGOTE_START = 60.0
QUESTION_OUTPUT_MB = 16
GRADER_FAULT = "the grader failed on this file, not the file: your instructor has the details"


@dataclass(frozen=True)
class Limits:
    """Time and resource limits of grading one submission."""

    notebook_seconds: float = 300.0  # one run of the whole notebook
    cell_seconds: float = 60.0  # one cell, in the notebook run and in a question's process
    question_seconds: float = 180.0  # one question's whole process, however many cells it runs
    example_seconds: float = 20.0  # one call of the answer
    memory_mb: int = 6144  # one sandbox, all its processes and files together
    processes: int = 64
    disk_mb: int = 512

    def sandbox(self, seconds: float) -> SandboxLimits:
        return SandboxLimits(seconds=seconds, memory_mb=self.memory_mb, processes=self.processes,
                             disk_mb=self.disk_mb)

    def question_budget(self, spec: dict[str, Any]) -> float:
        """A question's whole process, bounded from outside: an experiment question's longer cells add twice their
        extra time (a run and its dependency's)."""
        return self.question_seconds + 2 * max(0.0, spec.get("cell_seconds", 0) - self.cell_seconds)


@dataclass
class Row:
    """One submission's result: a CSV row and a feedback file."""

    submission: str
    assignment: str = ""
    status: str = "failed"
    error: str = ""  # why it was not graded; shown to the student when the file is at fault
    fault: str = ""  # "submission" (the file) or "grader" (then the run exits non-zero)
    flags: list[str] = field(default_factory=list)  # for the instructor's review; they change no score
    notes: list[str] = field(default_factory=list)  # shown to the student too (why a question scored 0)
    details: list[str] = field(default_factory=list)  # for the instructor only: what differed, on which input
    copies: list[str] = field(default_factory=list)
    cells_failed: list[int] = field(default_factory=list)
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)  # each question's code, for the copy check (not the CSV)
    seconds: float = 0.0
    question_seconds: float = 0.0  # the per-question processes, together
    notebook_seconds: float = 0.0  # the whole notebook's run
    peak_mb: float = 0.0  # the largest memory one of its sandboxes used

    @property
    def total(self) -> float:
        return sum(q["score"] for q in self.questions.values())

    @property
    def possible(self) -> float:
        return sum(q["possible"] for q in self.questions.values())


# ---------------------------------------------------------------- the homework as the build left it


@dataclass
class Homework:
    """One assignment as the instructor's build left it: its masters and hidden module (``source/``), the student
    notebook (``student/``); the questions and their hidden checks are drawn per student (:meth:`questions_for`)."""

    name: str
    source: Path  # <name>.ipynb (the master) and hidden/<name>.py
    solutions: dict[str, str]
    templates: dict[str, str]

    @classmethod
    def load(cls, homework_dir: Path, name: str) -> Homework:
        source = homework_dir / "source"
        master = nbformat.read(str(source / f"{name}.ipynb"), as_version=4)
        student = nbformat.read(str(homework_dir / "student" / f"{name}.ipynb"), as_version=4)
        return cls(name, source, {q: "\n\n".join(c) for q, c in master_blocks(master).items()},
                   {q: "\n\n".join(c) for q, c in question_blocks(student).items()})

    @property
    def question_names(self) -> list[str]:
        return list(self.solutions)

    @cached_property
    def module(self) -> ModuleType:
        """The instructor's module, loaded once per run (what it computes once, such as an experiment's reference
        numbers, then serves every student)."""
        from vit_edu.homework.build import load_module

        return load_module(f"hidden_{self.name}", self.source / "hidden" / f"{self.name}.py")

    def questions_for(self, secret: str, student: str) -> dict[str, dict[str, Any]]:
        """Every question's data with hidden inputs drawn from the secret and ``student``, and what is expected."""
        from vit_edu.homework.build import given_cells

        data = self.module.make(drawer(secret, f"{self.name}/{student}")).data()
        for q, cells in given_cells(self.source / f"{self.name}.ipynb").items():
            data["questions"][q]["given"] = cells
        return json.loads(json.dumps(data))["questions"]


def assignments(homework_dir: Path) -> list[str]:
    """The assignments ``make homework`` built into ``homework_dir``; a clear error when there are none."""
    names = sorted(p.stem for p in (homework_dir / "source").glob("hw*.ipynb")
                   if (homework_dir / "student" / p.name).exists())
    if not names:
        raise FileNotFoundError(f"no homework in {homework_dir}: build it with make homework (it writes "
                                f"_build/homework)")
    return names


def master_blocks(nb: nbformat.NotebookNode) -> dict[str, list[str]]:
    """A master's solution code by question (its cells inside the question, tests left out)."""
    out: dict[str, list[str]] = {}
    question = None
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            question = re.search(r"name:\s*(\w+)", cell.source).group(1)
            out[question] = []
        elif cell.cell_type == "raw" and cell.source.startswith("# END QUESTION"):
            question = None
        elif cell.cell_type == "code" and question and not cell.source.lstrip().startswith(('"""', "def test_")):
            out[question].append(cell.source)
    return out


def question_blocks(nb: nbformat.NotebookNode) -> dict[str, list[str]]:
    """A student notebook's code cells by question: from the question's prompt to its ``grader.check`` cell."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.metadata.get("editable") is False:
            current = []  # a question's prompt: its answer cells follow
        if cell.cell_type != "code":
            continue
        m = OTTER_CHECK.fullmatch(cell.source.strip())
        if m:
            blocks.setdefault(m.group(1), current)
            current = []
        elif not OTTER_OTHER.fullmatch(cell.source.strip()):
            current.append(cell.source)
    return blocks


# ---------------------------------------------------------------- one question, in its own process


def stripped_packages(questions: dict[str, dict[str, Any]], root: Path) -> dict[str, Path]:
    """Per question, a copy of ``vit_edu`` without its references (one copy per distinct set, made once), and under
    ``"*"`` one without any question's, for the whole notebook's run."""
    made: dict[tuple[str, ...], Path] = {}
    out = {}
    everything = tuple(sorted({r for spec in questions.values() for r in spec["references"]}))
    for q, refs in [*((q, spec["references"]) for q, spec in questions.items()), ("*", everything)]:
        key = tuple(sorted(r for r in refs if r.startswith("vit_edu.")))
        if key not in made:
            made[key] = strip_package(key, root / str(len(made)) / "vit_edu")
        out[q] = made[key]
    return out


def package_mount(package: Path, sandboxed: bool) -> dict[str, Any]:
    """How a process gets ``package`` as its ``vit_edu``: bound over the package in a sandbox; else copied into its
    own folder, first on its path (the grader's own package is then unreadable to it only where the grader
    installed it privately, as the Gradescope zip does)."""
    if sandboxed:  # (its folder on the path too, for a grader whose own vit_edu is found only through PYTHONPATH)
        return {"readonly": [(package, PACKAGE)], "env": {"PYTHONPATH": str(PACKAGE.parent)}}
    files = {f"lib/vit_edu/{p.relative_to(package)}": p.read_bytes() for p in sorted(package.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    return {"files": files, "env": {"PYTHONPATH": "lib"}}


def question_request(question: str, spec: dict[str, Any], blocks: dict[str, list[str]],
                     limits: Limits) -> dict[str, Any]:
    """What a question's process gets: its cells, the examples' inputs and what it must do without. What is expected,
    and the mistakes' outputs, never enter it."""
    given = spec.get("given", [])
    cells = [*given, *(c for d in spec["depends"] for c in blocks.get(d, [])), *blocks.get(question, [])]
    examples = [*spec["public"], *(e for c in spec["checks"] for e in c["examples"])]
    calls = [{k: e[k] for k in ("answer", "args", "kwargs", "adapter", "what")} for e in examples]
    return {"cells": cells, "own_from": len(given), "examples": calls,
            "take_away": [r for r in spec["references"] if not r.startswith("vit_edu.")],
            "cell_seconds": max(limits.cell_seconds, spec.get("cell_seconds", 0)),
            "example_seconds": limits.example_seconds}


def run_questions(jobs: list[tuple[dict[str, Any], Path, float]], limits: Limits,
                  sandboxed: bool) -> list[SandboxResult]:
    """Run each (request, package, seconds) in a process of its own; what each printed. In bubblewrap, one sandbox
    serves them all through the zygote (:mod:`vit_edu.homework.zygote`: torch imported once, a fresh world per
    question); a question that brings the whole sandbox down gets that as its result, and the questions after it
    a new sandbox. Without bubblewrap, one process per question."""
    if not sandboxed:
        return [run([sys.executable, "-m", "vit_edu.homework.harness"], stdin=json.dumps(request).encode(),
                    limits=limits.sandbox(seconds), sandboxed=False, **package_mount(package, False))
                for request, package, seconds in jobs]
    results: list[SandboxResult] = []
    while len(results) < len(jobs):
        results += _zygote(jobs[len(results):], limits)
    return results


def _zygote(jobs: list[tuple[dict[str, Any], Path, float]], limits: Limits) -> list[SandboxResult]:
    """The results of ``jobs`` in one zygote's sandbox, up to and including the first one it could not finish."""
    store = {package: ZYGOTE_STORE / str(i) / "vit_edu" for i, package in enumerate(dict.fromkeys(p for _, p, _ in jobs))}
    sandbox = limits.sandbox(ZYGOTE_START + sum(seconds for _, _, seconds in jobs))
    sandbox = replace(sandbox, output_mb=QUESTION_OUTPUT_MB * len(jobs) + 1)
    setup = {"jobs": [{"request": request, "package": str(store[package]), "seconds": seconds,
                       "output_bytes": QUESTION_OUTPUT_MB * 1024**2} for request, package, seconds in jobs],
             "scratch": list(sandbox.tmpfs()), "package": str(PACKAGE), "store": str(ZYGOTE_STORE), "home": HOME}
    readonly = [*((package, dest) for package, dest in store.items()), (jobs[0][1], PACKAGE)]
    result = run([sys.executable, "-c", Path(zygote.__file__).read_text()], stdin=json.dumps(setup).encode(),
                 readonly=readonly, limits=sandbox, capabilities=ZYGOTE_CAPABILITIES,
                 env=package_mount(jobs[0][1], True)["env"])
    out, results, pos = result.stdout, [], 0
    while len(results) < len(jobs) and (end := out.find(b"\n", pos)) >= 0:
        header = json.loads(out[pos:end])  # the zygote's own line; the bytes after it are the question's
        body, pos = out[end + 1:end + 1 + header["bytes"]], end + 1 + header["bytes"]
        if len(body) < header["bytes"]:
            break
        results.append(SandboxResult(header["returncode"], body, header["stderr"], header["killed"], result.peak_mb,
                                     0.0, result.uid))
    if len(results) < len(jobs):  # this question brought the sandbox down (memory, processes) or it failed to start
        why = result.killed or f"its sandbox ended with status {result.returncode}: {result.stderr[-300:].strip()}"
        results.append(SandboxResult(None, b"", result.stderr, why, result.peak_mb, result.seconds, result.uid))
    return results


def judge_question(spec: dict[str, Any], result: SandboxResult, has_cells: bool) -> dict[str, Any]:
    """Judge one question's process outside it: its score and messages."""
    given = spec.get("given", [])
    examples = [*spec["public"], *(e for c in spec["checks"] for e in c["examples"])]
    possible = sum(c["points"] for c in spec["checks"])
    verdict: dict[str, Any] = {"score": 0.0, "possible": possible, "failed": [], "hints": [], "detail": [],
                               "public": "", "flags": [], "peak_mb": result.peak_mb}
    outputs = _outputs(result, len(examples))
    if isinstance(outputs, str):
        verdict["failed"] = [c["name"] for c in spec["checks"]]
        verdict["detail"] = [outputs]
        verdict["public"] = "the grader could not run this question (its process was stopped or gave no answer)"
        return verdict
    cell_errors, results, silenced = outputs
    if silenced:
        verdict["flags"].append("silenced the record of the operations it ran")
    if not has_cells:
        verdict["detail"].append("the notebook has no grader.check cell for this question")
    verdict["detail"] += [f"cell {i}: {e}" for i, e in enumerate(cell_errors) if e and i >= len(given)]
    judged = [_judge_one(checks.Example.from_data(e), r) for e, r in zip(examples, results)]
    public, hidden = judged[:len(spec["public"])], judged[len(spec["public"]):]
    # The public example's message names the call and the classic mistake, not the values the answer returned.
    verdict["public"] = next((f"{checks.Example.from_data(e).what or e['answer']}: " +
                              (h or "not the expected output (your notebook's public check shows the values)")
                              for e, (m, h) in zip(spec["public"], public) if m), "")
    for c in spec["checks"]:
        mine, hidden = hidden[:len(c["examples"])], hidden[len(c["examples"]):]
        wrong = [m for m in mine if m[0]]
        if wrong:
            verdict["failed"].append(c["name"])
            verdict["detail"].append(f"{c['name']}: {wrong[0][0]}")
            verdict["hints"] += [h for _, h in wrong if h and h not in verdict["hints"]]
        else:
            verdict["score"] += c["points"]
    return verdict


def grade_questions(questions: dict[str, dict[str, Any]], blocks: dict[str, list[str]], packages: dict[str, Path],
                    limits: Limits, sandboxed: bool) -> dict[str, dict[str, Any]]:
    """Every question run in a process of its own and judged outside: question -> verdict."""
    jobs = [(question_request(q, spec, blocks, limits), packages[q], limits.question_budget(spec))
            for q, spec in questions.items()]
    results = run_questions(jobs, limits, sandboxed)
    return {q: judge_question(spec, result, q in blocks)
            for (q, spec), result in zip(questions.items(), results)}


def _outputs(result: Any, n: int) -> tuple[list[str], list[Any], bool] | str:
    """The harness's answer as (cell errors, one result per example, whether it silenced the operation record), or
    why there is none. Whatever the bytes are (deep nesting included), a failure here is this question's zero."""
    if result.killed:
        return f"the question's process was stopped ({result.killed})"
    try:
        data = json.loads(result.stdout.decode() or "null")
        cells, results = data["cells"], data["results"]
        if not isinstance(cells, list) or not isinstance(results, list) or len(results) != n:
            raise ValueError("wrong form")
        return [str(c)[:300] for c in cells], results, bool(data.get("silenced"))
    except Exception:  # noqa: BLE001 — RecursionError, MemoryError, wrong types: all the answer's own doing
        return f"the question's process returned no answer (exit status {result.returncode}): " \
               f"{result.stderr[-300:].strip()}"


def _judge_one(ex: checks.Example, result: Any) -> tuple[str, str]:
    """("", "") when the example passed; else (what differs, for the instructor; the classic mistake's hint)."""
    if not isinstance(result, dict) or ("data" not in result and "error" not in result):
        return " returned nothing", ""
    if "error" in result:
        return f" failed: {str(result['error'])[:300]}", ""
    if result.get("ops"):
        ops = ", ".join(str(o) for o in result["ops"])[:200]
        return f" ran {ops}, which this question asks you to write yourself", f"{ops} is {TAKEN_AWAY}"
    try:
        got = plain.decode(result["data"])
        verdict = checks.judge(got, ex)
    except plain.PlainError as e:
        return f" returned data the grader refuses: {e}", ""
    except Exception as e:  # noqa: BLE001 — data too deep or too odd to compare is a wrong answer
        return f" returned data the grader cannot compare ({type(e).__name__})", ""
    return ("", "") if verdict is None else verdict


# ---------------------------------------------------------------- one submission (in a worker process)


def read_notebook(raw: bytes) -> nbformat.NotebookNode:
    """A submitted file as a valid notebook, or ValueError saying why not (whatever the bytes hold)."""
    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
        return nb
    except Exception as e:  # noqa: BLE001 — not UTF-8, not JSON, too deep, not a notebook
        raise ValueError(f"not a readable notebook: {type(e).__name__}: {str(e)[:200]}") from None


def assignment_of(raw: bytes, original: str, names: list[str]) -> str | None:
    """The assignment a submission claims, read without parsing it (the worker checks the claim): otter's metadata
    name in the raw bytes, else the longest name in the file name."""
    claimed = [m.group(1).decode() for m in ASSIGNMENT_NAME.finditer(raw)]
    if claimed and claimed[0] in names:
        return claimed[0]
    matches = [a for a in names if a in original]
    return max(matches, key=len) if matches else None


def review_flags(nb: nbformat.NotebookNode, questions: dict[str, dict[str, Any]],
                 blocks: dict[str, list[str]]) -> list[str]:
    """What the instructor should read: tampering, names of references, opaque code. Changes no score."""
    flags = [str(f) for f in scan.tampering(nb)]
    answers = {q: tuple(spec["answers"]) for q, spec in questions.items()}
    references = {q: tuple(spec["references"]) for q, spec in questions.items()}
    flags += [f"{q}: {f}" for q, found in scan.reference_uses(nb, answers, references).items() for f in found]
    flags += [f"{q}: {why}" for q, cells in blocks.items() for why in scan.opaque_code("\n\n".join(cells))]
    return list(dict.fromkeys(flags))


def grade_submission(raw: bytes, original: str, name: str, questions: dict[str, dict[str, Any]], limits: Limits,
                     sandboxed: bool, executed: Path | None, work: Path) -> Row:
    """Read, run and judge one submission of assignment ``name`` (in a worker); a bad file becomes its row."""
    row = Row(submission=original, assignment=name)
    try:
        nb = read_notebook(raw)
    except ValueError as e:
        row.error, row.fault = str(e), "submission"
        return row
    named = nb.metadata.get("otter", {}).get("assignment_name", name)
    if named != name:
        row.error, row.fault = f"this notebook is homework {str(named)[:80]!r}, not {name!r}", "submission"
        return row
    packages = stripped_packages(questions, work / "stripped")
    blocks = question_blocks(nb)
    row.answers = {q: "\n\n".join(c) for q, c in blocks.items()}
    try:
        row.flags = review_flags(nb, questions, blocks)
    except Exception as e:  # noqa: BLE001 — code too deep to read statically is itself worth a look
        row.flags = [f"the static reading failed ({type(e).__name__}): read this notebook"]
    start = time.monotonic()
    for q, verdict in grade_questions(questions, blocks, packages, limits, sandboxed).items():
        row.peak_mb = max(row.peak_mb, verdict.pop("peak_mb"))
        row.flags += [f"{q}: {f}" for f in verdict.pop("flags")]
        if verdict["score"] < verdict["possible"]:
            row.details.append(f"{q}: {'; '.join(verdict['detail'])[:400]}")
        row.questions[q] = verdict
    row.question_seconds = round(time.monotonic() - start, 1)
    start = time.monotonic()
    run_whole_notebook(nb, name, packages["*"], limits, sandboxed, row, executed)
    row.notebook_seconds = round(time.monotonic() - start, 1)
    row.peak_mb = round(row.peak_mb, 1)
    row.status = "graded"
    return row


def run_whole_notebook(nb: nbformat.NotebookNode, name: str, package: Path, limits: Limits, sandboxed: bool,
                       row: Row, executed: Path | None) -> None:
    """Run every cell in a sandbox of its own (the package without any question's references; otter's init cell
    reads the notebook's file), for the executed copy and the list of cells that raised."""
    text = nbformat.writes(nb).encode()
    mount = package_mount(package, sandboxed)
    mount["files"] = {**mount.get("files", {}), f"{name}.ipynb": text}
    result = run([sys.executable, "-m", "vit_edu.homework.runner", str(limits.cell_seconds)], stdin=text,
                 limits=limits.sandbox(limits.notebook_seconds + 30), sandboxed=sandboxed, **mount)
    row.peak_mb = max(row.peak_mb, result.peak_mb)
    try:
        ran = read_notebook(result.stdout)
    except ValueError:
        row.notes.append(f"the whole notebook did not finish ({result.killed or 'no notebook came back'})")
        return
    row.cells_failed = [i for i, c in enumerate(ran.cells) if c.cell_type == "code" and any(
        o.get("output_type") == "error" for o in c.get("outputs", []))]
    if executed is not None:
        executed.write_text(nbformat.writes(ran))


def limit_worker() -> None:
    """``preexec_fn`` of a worker: its own address-space limit (it reads untrusted bytes). A soft limit: the
    sandboxes it starts set their own."""
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_MB * 1024**2, resource.RLIM_INFINITY))


def grade_one(notebook: Path, original: str, name: str, questions: dict[str, dict[str, Any]], limits: Limits,
              sandboxed: bool, executed: Path | None) -> Row:
    """Grade one snapshot notebook in a worker process of its own (its hidden checks in a private file, never on
    its command line); never raises."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vit_edu_worker_") as tmp:
        out, data = Path(tmp) / "row.json", Path(tmp) / "questions.json"
        data.write_text(json.dumps(questions))
        args = {"notebook": str(notebook), "original": original, "name": name, "questions": str(data),
                "limits": asdict(limits), "sandboxed": sandboxed, "executed": str(executed) if executed else None,
                "out": str(out), "work": tmp}
        budget = 120 + limits.notebook_seconds + sum(limits.question_budget(q) for q in questions.values())
        try:
            proc = subprocess.run([sys.executable, "-m", "vit_edu.homework.grade", "--worker"], cwd=tmp,
                                  input=json.dumps(args).encode(), capture_output=True, timeout=budget,
                                  preexec_fn=limit_worker)
            row = row_from_json(json.loads(out.read_text())) if out.exists() else Row(
                original, name, error=GRADER_FAULT, fault="grader",
                details=[f"worker exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-1500:]}"])
        except subprocess.TimeoutExpired:
            row = Row(original, name, error=GRADER_FAULT, fault="grader", details=[f"grading ran past {budget:g} s"])
    row.seconds = round(time.monotonic() - start, 1)
    return row


def _worker() -> None:
    """``--worker`` (its arguments as JSON on stdin): grade one notebook, write its row as JSON."""
    a = json.loads(sys.stdin.buffer.read())
    try:
        row = grade_submission(Path(a["notebook"]).read_bytes(), a["original"], a["name"],
                               json.loads(Path(a["questions"]).read_text()), Limits(**a["limits"]), a["sandboxed"],
                               Path(a["executed"]) if a["executed"] else None, Path(a["work"]))
    except Exception:  # noqa: BLE001 — the grader's own failure: the instructor gets the traceback, not the student
        row = Row(a["original"], a["name"], error=GRADER_FAULT, fault="grader", details=[traceback.format_exc()[-1500:]])
    Path(a["out"]).write_text(json.dumps(asdict(row)))


# ---------------------------------------------------------------- the folder


def display_name(raw: bytes) -> str:
    """A file name as text whatever its bytes (undecodable bytes as \\xNN), control characters shown."""
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def snapshot(folder: Path, dest: Path) -> list[tuple[str, Path | Row]]:
    """Copy every regular ``*.ipynb`` file of ``folder`` to ``dest`` (never following a link, never parsing it),
    before grading: (name, copy), or (name, row) for an entry that is not graded (a link, a device, a folder named
    .ipynb, an oversized file)."""
    found: list[tuple[str, Path | Row]] = []
    with os.scandir(os.fsencode(folder)) as entries:
        items = sorted(entries, key=lambda e: e.name)
    for e in items:
        if not e.name.endswith(b".ipynb"):
            continue
        name = display_name(e.name)
        st = os.lstat(e.path)
        if not stat.S_ISREG(st.st_mode):
            kind = "a link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            found.append((name, Row(name, error=f"{kind}: not followed, not graded", fault="submission")))
            continue
        if st.st_size > MAX_NOTEBOOK_BYTES:
            found.append((name, Row(name, error=f"{st.st_size:,} bytes: larger than {MAX_NOTEBOOK_BYTES:,}, not "
                                               "graded", fault="submission")))
            continue
        fd = os.open(e.path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        try:
            data = os.read(fd, MAX_NOTEBOOK_BYTES + 1)
        finally:
            os.close(fd)
        copy = dest / f"{len(found):04d}.ipynb"
        copy.write_bytes(data[:MAX_NOTEBOOK_BYTES])
        found.append((name, copy))
    return found


def grade_folder(folder: Path, homework_dir: Path, secret: str, *, assignment: str | None = None,
                 limits: Limits = Limits(), jobs: int = 1, sandboxed: bool = True, executed: Path | None = None,
                 copies_threshold: float | None = None, pairs: list | None = None,
                 student_of: Callable[[str], str] = lambda name: name,
                 on_row: Callable[[int, Row], None] | None = None, preflight: bool = True) -> list[Row]:
    """Grade every ``*.ipynb`` of ``folder`` (never changed) with the homework ``make homework`` built into
    ``homework_dir``, hidden inputs drawn from ``secret`` and ``student_of(file name)``. ``on_row(i, row)`` is
    called as each row arrives (in any order, i its place in the folder's sorted listing); the copy pairs found
    are added to ``pairs`` when given. RuntimeError, before any student, when the grader cannot be trusted here."""
    folder, homework_dir = folder.resolve(), homework_dir.resolve()
    names = assignments(homework_dir)
    if assignment is not None and assignment not in names:
        raise ValueError(f"no homework named {assignment!r} in {homework_dir}; have {names}")
    if sandboxed and (problem := sandbox_problem()):
        raise RuntimeError(f"cannot grade in a sandbox: {problem}. Install bubblewrap, or pass --no-sandbox to "
                           f"grade without one (a submission can then read what you can, unless you are root)")
    if preflight:
        from vit_edu.homework.selfcheck import preflight as check_first

        check_first(homework_dir, secret, sandboxed, limits)
    if executed is not None:
        executed = executed.resolve()
        executed.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    homeworks = {name: Homework.load(homework_dir, name) for name in names}
    with tempfile.TemporaryDirectory(prefix="vit_edu_grade_") as tmp:
        entries = snapshot(folder, Path(tmp))

        def one(item: tuple[int, tuple[str, Path | Row]]) -> Row:
            i, (original, copy) = item
            name = None if isinstance(copy, Row) else assignment or assignment_of(copy.read_bytes(), original, names)
            if isinstance(copy, Row):
                row = copy
            elif name is None:
                row = Row(original, error=f"cannot tell which homework this is ({', '.join(names)}): pass "
                                          "--assignment", fault="submission")
            else:
                target = executed / f"{i:03d}_{_safe_stem(original)}.ipynb" if executed else None
                try:
                    questions = homeworks[name].questions_for(secret, student_of(original))
                except Exception:  # noqa: BLE001 — the instructor's module failed: the grader's fault, in this row
                    row = Row(original, name, error=GRADER_FAULT, fault="grader",
                              details=[traceback.format_exc()[-1500:]])
                else:
                    row = grade_one(copy, original, name, questions, limits, sandboxed, target)
            print(f"{row.submission}: {row.total:g}/{row.possible:g} {row.status} {row.error} ({row.seconds:g} s)",
                  flush=True)
            if on_row is not None:
                with lock:
                    on_row(i, row)
            return row

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(one, enumerate(entries)))
    found = mark_copies(rows, homeworks, copies_threshold)
    if pairs is not None:
        pairs += found
    return rows


def mark_copies(rows: list[Row], homeworks: dict[str, Homework], threshold: float | None) -> list[Any]:
    """Add each row's copy pairs (with the published solution or another submission), per assignment."""
    from vit_edu.homework import copies as detector

    found = []
    for name, homework in homeworks.items():
        answers = {row.submission: row.answers for row in rows if row.assignment == name and row.status == "graded"}
        kwargs = {} if threshold is None else {"threshold": threshold}
        for pair in detector.find_copies(answers, homework.solutions, homework.templates, **kwargs):
            found.append(pair)
            for row in rows:
                if row.submission in (pair.first, pair.second) and row.assignment == name:
                    other = pair.second if row.submission == pair.first else pair.first
                    row.copies.append(f"{pair.question} ~ {other} ({pair.similarity:.0%}, {pair.reason})")
    return found


def _safe_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", Path(name).stem)[:80] or "submission"


# ---------------------------------------------------------------- what the run writes


def csv_cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: a leading = + - @ or control character is quoted away."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "\n") else text


CSV_HEAD = ["submission", "assignment", "status", "error", "fault", "flags", "notes", "copies"]
CSV_TAIL = ["total", "possible", "seconds", "peak_mb", "details"]


def csv_row(r: Row, questions: list[str]) -> list[str]:
    cells = [f"{r.questions[q]['score']:g}" if q in r.questions else "" for q in questions]
    return [csv_cell(c) for c in (r.submission, r.assignment, r.status, r.error, r.fault, "; ".join(r.flags),
                                  "; ".join(r.notes), "; ".join(r.copies), *cells, f"{r.total:g}", f"{r.possible:g}",
                                  r.seconds, r.peak_mb, "; ".join(r.details))]


def write_csv(rows: list[Row], path: Path, questions: list[str] | None = None) -> None:
    """One row per submission: status, flags, notes, copies, one column per question, total, possible."""
    questions = questions or list(dict.fromkeys(q for r in rows for q in r.questions))
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*CSV_HEAD, *questions, *CSV_TAIL])
        writer.writerows(csv_row(r, questions) for r in rows)


class Report:
    """What a run writes as each row arrives: a CSV line (flushed) and the student's feedback file."""

    def __init__(self, csv_path: Path, feedback: Path, questions: list[str]) -> None:
        self.questions, self.feedback = questions, feedback
        feedback.mkdir(parents=True, exist_ok=True)
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(csv_path, "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow([*CSV_HEAD, *questions, *CSV_TAIL])
        self.file.flush()

    def __call__(self, i: int, row: Row) -> None:
        self.writer.writerow(csv_row(row, self.questions))
        self.file.flush()
        feedback_path(self.feedback, i, row).write_text(feedback_markdown(row))

    def close(self) -> None:
        self.file.close()


def feedback_markdown(row: Row) -> str:
    """What a student may see: scores, public messages, failed hidden checks by name and hint (never an input, a
    path or a traceback); every name escaped."""
    e = markdown_escape
    lines = [f"# {e(row.assignment or 'Homework')}: feedback for {e(row.submission)}", "",
             f"**Score: {row.total:g} / {row.possible:g}**", ""]
    if row.error:
        why = row.error if row.fault == "submission" else GRADER_FAULT
        lines += [f"The grader could not grade this file: {e(why)}.", ""]
    if row.cells_failed:
        lines += [f"Cells that raised an error when the whole notebook ran: {', '.join(map(str, row.cells_failed))}.", ""]
    if row.questions:
        lines += ["| question | score | possible |", "|---|---|---|"]
        lines += [f"| {e(q)} | {v['score']:g} | {v['possible']:g} |" for q, v in row.questions.items()]
    for q, v in row.questions.items():
        if v["score"] == v["possible"] and not v["public"]:
            continue
        lines += ["", f"## {e(q)}"]
        if v["public"]:
            lines += ["", "Public check: " + e(v["public"])]
        if v["failed"]:
            lines += ["", "Hidden checks failed: " + ", ".join(map(e, v["failed"])) + "."]
        lines += ["", *[f"Hint: {e(h)}" for h in v["hints"]]] if v["hints"] else []
        for note in row.notes:
            if note.startswith(f"{q}: "):
                lines += ["", "Why: " + e(note.split(": ", 1)[1])]
    return "\n".join(lines) + "\n"


def feedback_path(folder: Path, i: int, row: Row) -> Path:
    return folder / f"{i:03d}_{_safe_stem(row.submission)}.md"


def write_feedback(rows: list[Row], folder: Path) -> list[Path]:
    """One Markdown feedback file per row, named after the submission."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, row in enumerate(rows):
        path = feedback_path(folder, i, row)
        path.write_text(feedback_markdown(row))
        paths.append(path)
    return paths


def row_from_json(data: dict[str, Any]) -> Row:
    """A row written as JSON by a worker (unknown keys ignored)."""
    return Row(**{f.name: data[f.name] for f in fields(Row) if f.name in data})


def main(argv: list[str] | None = None) -> int:
    """Command line: grade a folder into a CSV, feedback files, executed notebooks and a copies report; the exit
    status says whether every row was graded by a working grader."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker()
        return 0
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.grade", description=__doc__.split("\n")[0])
    p.add_argument("submissions", type=Path, help="folder of .ipynb submissions (never modified)")
    p.add_argument("--homework-dir", type=Path, default=Path("_build/homework"),
                   help="what make homework built (source/, student/)")
    p.add_argument("--secret-file", type=Path, help="the course's secret (else $HOMEWORK_SECRET)")
    p.add_argument("--assignment", help="grade every notebook as this assignment (default: from the notebook)")
    p.add_argument("--out", type=Path, default=Path("grades.csv"))
    d = Limits()
    p.add_argument("--notebook-seconds", type=float, default=d.notebook_seconds, help="one run of a whole notebook")
    p.add_argument("--cell-seconds", type=float, default=d.cell_seconds, help="one cell")
    p.add_argument("--memory-mb", type=int, default=d.memory_mb, help="one sandbox, all its processes and files")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at the same time")
    p.add_argument("--copies-threshold", type=float, help="similarity from which two answers are reported")
    p.add_argument("--no-sandbox", action="store_true", help="run without bubblewrap (see the README)")
    args = p.parse_args(argv)
    submissions, homework_dir, out = args.submissions.resolve(), args.homework_dir.resolve(), args.out.resolve()
    if not submissions.is_dir():
        p.error(f"{args.submissions} is not a folder")
    try:
        secret = read_secret(args.secret_file.resolve() if args.secret_file else None, dict(os.environ))
        questions = [q for name in assignments(homework_dir) for q in Homework.load(homework_dir, name).question_names]
    except (OSError, ValueError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    limits = Limits(notebook_seconds=args.notebook_seconds, cell_seconds=args.cell_seconds, memory_mb=args.memory_mb)
    print(f"sandbox: {'bubblewrap' if not args.no_sandbox else 'none (--no-sandbox)'}; memory bounded by "
          f"{memory_accounting()}", flush=True)
    stem = out.parent / out.stem
    report = Report(out, Path(f"{stem}_feedback"), questions)
    pairs: list = []
    try:
        rows = grade_folder(submissions, homework_dir, secret, assignment=args.assignment, limits=limits,
                            jobs=args.jobs, sandboxed=not args.no_sandbox, executed=Path(f"{stem}_executed"),
                            copies_threshold=args.copies_threshold, pairs=pairs, on_row=report)
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    finally:
        report.close()
    write_csv(rows, out, questions)  # again, now with the copies column
    from vit_edu.homework.copies import copies_report

    Path(f"{stem}_copies.md").write_text(copies_report(pairs))
    print(f"{len(rows)} submissions graded into {out}; feedback in {stem}_feedback, executed notebooks in "
          f"{stem}_executed, copies in {stem}_copies.md")
    failed = [r.submission for r in rows if r.fault == "grader"]
    if failed:
        print(f"The grader failed on {len(failed)} submission(s) (fault 'grader' in the CSV, details in its last "
              f"column): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
