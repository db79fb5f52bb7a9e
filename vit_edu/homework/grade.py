"""Grade a folder of homework notebooks: one CSV row, one feedback file and one executed notebook per submission.

``python -m vit_edu.homework.grade SUBMISSIONS --homework-dir _build/homework --out grades.csv`` (``make grade
SUBMISSIONS=dir HOMEWORK_SECRET=...``). The folder is read once into a private snapshot (regular files only: a
link or a device is listed, never followed); each notebook is then graded in a worker process of its own:

1. **Each question decides its own points.** The question runs in a fresh sandboxed process
   (:mod:`~vit_edu.homework.harness`): the instructor's set-up cells, the submission's cells of the questions it
   builds on, then its own cells, in a copy of ``vit_edu`` that lacks the question's reference implementations
   (:mod:`~vit_edu.homework.strip`). The harness calls the answer on the hidden inputs, drawn from the course's
   secret, and returns plain data; the judge compares it, outside the sandbox, with what the instructor's build
   computed (:mod:`~vit_edu.homework.checks`). Whatever a cell does, it can spoil only its own question.
2. **The whole notebook still runs**, in a sandbox of its own, for its outputs (the executed copy goes to the
   instructor) and for the feedback's list of cells that raised; nothing it prints decides a point.
3. **A static reading** (:mod:`~vit_edu.homework.scan`): an answer that names its own reference scores 0 for that
   question; code that reaches into the grading machinery is listed for the instructor (it changes no score).
4. **Copies** (:mod:`~vit_edu.homework.copies`): each answer is compared with the published solution and with
   every other submission's; pairs above the threshold go to a CSV column and a report, for review.

``--no-sandbox`` runs the same processes without bubblewrap (limits still apply), for machines without it.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import resource
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from vit_edu.homework import checks, plain, scan
from vit_edu.homework.sandbox import SandboxLimits, run, sandbox_problem
from vit_edu.homework.strip import PACKAGE, strip_package

MAX_NOTEBOOK_BYTES = 32 * 1024**2
WORKER_MEMORY_MB = 8192  # the worker's own address space: it parses untrusted data, and torch maps a lot
OTTER_CHECK = re.compile(r'grader\.check\("(\w+)"\)')
OTTER_OTHER = re.compile(r"grader\.check_all\(\)|grader\.export\(.*\)|import otter|grader = otter\.Notebook\(.*\)",
                         re.S)


@dataclass(frozen=True)
class Limits:
    """Time and resource limits of grading one submission."""

    notebook_seconds: float = 300.0  # one run of the whole notebook
    cell_seconds: float = 60.0  # one cell, in the notebook run and in a question's process
    question_seconds: float = 180.0  # one question's process, start-up included
    example_seconds: float = 20.0  # one call of the answer
    memory_mb: int = 6144  # one sandbox, all its processes and files together
    processes: int = 64
    disk_mb: int = 512

    def sandbox(self, seconds: float) -> SandboxLimits:
        return SandboxLimits(seconds=seconds, memory_mb=self.memory_mb, processes=self.processes,
                             disk_mb=self.disk_mb)


@dataclass
class Row:
    """One submission's result: a CSV row and a feedback file."""

    submission: str
    assignment: str = ""
    status: str = "failed"
    error: str = ""
    flags: list[str] = field(default_factory=list)  # for the instructor's review; they change no score
    notes: list[str] = field(default_factory=list)  # shown to the student too (why a question scored 0)
    details: list[str] = field(default_factory=list)  # for the instructor only: what differed, on which input
    copies: list[str] = field(default_factory=list)
    cells_failed: list[int] = field(default_factory=list)
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
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
    """One assignment's grading data: questions with hidden checks (from the zip), solutions and templates."""

    name: str
    questions: dict[str, dict[str, Any]]
    solutions: dict[str, str]
    templates: dict[str, str]

    @classmethod
    def load(cls, homework_dir: Path, name: str) -> Homework:
        with zipfile.ZipFile(homework_dir / "autograder" / f"{name}.zip") as z:
            data = json.loads(z.read(f"files/hidden_{name}.json"))
        master = nbformat.read(str(homework_dir / "masters" / f"{name}.ipynb"), as_version=4)
        student = nbformat.read(str(homework_dir / "student" / f"{name}.ipynb"), as_version=4)
        return cls(name, data["questions"], {q: "\n\n".join(c) for q, c in master_blocks(master).items()},
                   {q: "\n\n".join(c) for q, c in question_blocks(student).items()})


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


def stripped_packages(homework: Homework, root: Path) -> dict[str, Path]:
    """Per question, a copy of ``vit_edu`` without its references (one copy per distinct set, made once)."""
    made: dict[tuple[str, ...], Path] = {}
    out = {}
    for q, spec in homework.questions.items():
        refs = tuple(sorted(r for r in spec["references"] if r.startswith("vit_edu.")))
        if refs not in made:
            made[refs] = strip_package(refs, root / f"{homework.name}_{len(made)}" / "vit_edu")
        out[q] = made[refs]
    return out


def grade_question(question: str, spec: dict[str, Any], blocks: dict[str, list[str]], package: Path,
                   limits: Limits, sandboxed: bool) -> dict[str, Any]:
    """Run one question's cells and examples in a fresh sandbox; judge outside: its score and messages."""
    cells = [*spec.get("given", []), *(c for d in spec["depends"] for c in blocks.get(d, [])), *blocks.get(question, [])]
    examples = [*spec["public"], *(e for c in spec["checks"] for e in c["examples"])]
    # The sandbox gets the inputs only: what is expected, and the mistakes' outputs, never enter it.
    calls = [{k: e[k] for k in ("answer", "args", "kwargs", "adapter", "what")} for e in examples]
    request = {"cells": cells, "examples": calls, "take_away": [r for r in spec["references"]
                                                                   if not r.startswith("vit_edu.")],
               "cell_seconds": max(limits.cell_seconds, spec.get("cell_seconds", 0)),
               "example_seconds": limits.example_seconds}
    seconds = limits.question_seconds + request["cell_seconds"] * (len(cells) - len(spec.get("given", [])))
    result = run([sys.executable, "-m", "vit_edu.homework.harness"], stdin=json.dumps(request).encode(),
                 readonly=[(package, PACKAGE)], limits=limits.sandbox(seconds), sandboxed=sandboxed)
    possible = sum(c["points"] for c in spec["checks"])
    verdict: dict[str, Any] = {"score": 0.0, "possible": possible, "failed": [], "hints": [], "detail": [],
                               "public": "", "peak_mb": result.peak_mb}
    outputs = _outputs(result, len(examples))
    if isinstance(outputs, str):
        verdict["failed"] = [c["name"] for c in spec["checks"]]
        verdict["detail"] = [outputs]
        verdict["public"] = "the grader could not run this question (its process was stopped or gave no answer)"
        return verdict
    cell_errors, results = outputs
    if question not in blocks:
        verdict["detail"].append("the notebook has no grader.check cell for this question")
    verdict["detail"] += [f"cell {i}: {e}" for i, e in enumerate(cell_errors) if e and i >= len(spec.get("given", []))]
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


def _outputs(result: Any, n: int) -> tuple[list[str], list[Any]] | str:
    """The harness's answer as (cell errors, one result per example), or why there is none."""
    if result.killed:
        return f"the question's process was stopped ({result.killed})"
    try:
        data = json.loads(result.stdout.decode() or "null")
        cells, results = data["cells"], data["results"]
        if not isinstance(cells, list) or not isinstance(results, list) or len(results) != n:
            raise ValueError("wrong form")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return f"the question's process returned no answer (exit status {result.returncode}): " \
               f"{result.stderr[-300:].strip()}"
    return [str(c)[:300] for c in cells], results


def _judge_one(ex: checks.Example, result: Any) -> tuple[str, str]:
    """("", "") when the example passed; else (what differs, for the instructor; the classic mistake's hint)."""
    if not isinstance(result, dict) or ("data" not in result and "error" not in result):
        return " returned nothing", ""
    if "error" in result:
        return f" failed: {str(result['error'])[:300]}", ""
    try:
        got = plain.decode(result["data"])
    except plain.PlainError as e:
        return f" returned data the grader refuses: {e}", ""
    verdict = checks.judge(got, ex)
    return ("", "") if verdict is None else verdict


# ---------------------------------------------------------------- one submission (in a worker process)


def grade_notebook(path: Path, homework: Homework, packages: dict[str, Path], limits: Limits, sandboxed: bool,
                   executed: Path | None) -> Row:
    """Read, run and judge one notebook; never raises."""
    row = Row(submission=path.name, assignment=homework.name)
    try:
        nb = nbformat.reads(path.read_bytes().decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 — not JSON, not a notebook
        row.error = f"not a readable notebook: {type(e).__name__}: {str(e)[:200]}"
        return row
    named = nb.metadata.get("otter", {}).get("assignment_name", homework.name)
    if named != homework.name:
        row.error = f"this notebook is homework {str(named)[:80]!r}, not {homework.name!r}"
        return row
    row.flags = [str(f) for f in scan.tampering(nb)]
    answers = {q: tuple(spec["answers"]) for q, spec in homework.questions.items()}
    references = {q: tuple(spec["references"]) for q, spec in homework.questions.items()}
    disqualified = {q: "; ".join(str(f) for f in found) for q, found in
                    scan.reference_uses(nb, answers, references).items()}
    blocks = question_blocks(nb)
    peak = 0.0
    start = time.monotonic()
    for q, spec in homework.questions.items():
        verdict = grade_question(q, spec, blocks, packages[q], limits, sandboxed)
        peak = max(peak, verdict.pop("peak_mb"))
        if q in disqualified:
            verdict["score"] = 0.0
            verdict["failed"] = [c["name"] for c in spec["checks"]]
            row.notes.append(f"{q}: {disqualified[q]}")
        elif verdict["score"] < verdict["possible"]:
            row.details.append(f"{q}: {'; '.join(verdict['detail'])[:400]}")
        row.questions[q] = verdict
    row.question_seconds = round(time.monotonic() - start, 1)
    start = time.monotonic()
    run_whole_notebook(nb, homework.name, limits, sandboxed, row, executed)
    row.notebook_seconds = round(time.monotonic() - start, 1)
    row.peak_mb = round(max(peak, row.peak_mb), 1)
    row.status = "graded"
    return row


def run_whole_notebook(nb: nbformat.NotebookNode, name: str, limits: Limits, sandboxed: bool, row: Row,
                       executed: Path | None) -> None:
    """Run every cell in a sandbox of its own (the real package; otter's init cell reads the notebook's file),
    for the executed copy and the list of cells that raised."""
    text = nbformat.writes(nb).encode()
    result = run([sys.executable, "-m", "vit_edu.homework.runner", str(limits.cell_seconds)], stdin=text,
                 files={f"{name}.ipynb": text}, readonly=[(PACKAGE, PACKAGE)],
                 limits=limits.sandbox(limits.notebook_seconds + 30), sandboxed=sandboxed)
    row.peak_mb = max(row.peak_mb, result.peak_mb)
    try:
        ran = nbformat.reads(result.stdout.decode(), as_version=4)
    except Exception:  # noqa: BLE001 — the run was stopped, or its output is not a notebook
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


def grade_one(notebook: Path, homework_dir: Path, name: str, stripped: Path, limits: Limits, sandboxed: bool,
              executed: Path | None) -> Row:
    """Grade one snapshot notebook in a worker process of its own; never raises."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vit_edu_worker_") as tmp:
        out = Path(tmp) / "row.json"
        args = {"notebook": str(notebook), "homework_dir": str(homework_dir), "name": name, "stripped": str(stripped),
                "limits": asdict(limits), "sandboxed": sandboxed, "executed": str(executed) if executed else None,
                "out": str(out)}
        budget = 60 + limits.notebook_seconds + 60 + len(json.loads(
            (stripped / f"{name}.questions").read_text())) * (limits.question_seconds + 2 * limits.cell_seconds)
        try:
            proc = subprocess.run([sys.executable, "-m", "vit_edu.homework.grade", "--worker", json.dumps(args)],
                                  cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True, timeout=budget,
                                  preexec_fn=limit_worker)
            row = Row(**json.loads(out.read_text())) if out.exists() else Row(
                notebook.name, name, error=f"the grader's worker failed: {proc.stderr.decode(errors='replace')[-400:]}")
        except subprocess.TimeoutExpired:
            row = Row(notebook.name, name, error=f"grading ran past {budget:g} s")
    row.seconds = round(time.monotonic() - start, 1)
    return row


# ---------------------------------------------------------------- the folder


def display_name(raw: bytes) -> str:
    """A file name as text whatever its bytes (undecodable bytes as \\xNN), control characters shown."""
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def snapshot(folder: Path, dest: Path) -> tuple[list[tuple[str, Path]], list[Row]]:
    """Copy every regular ``*.ipynb`` file of ``folder`` to ``dest`` (never following a link), before grading;
    rows for the entries that are not graded (links, devices, folders named .ipynb, oversized files)."""
    copies, skipped = [], []
    with os.scandir(os.fsencode(folder)) as entries:
        items = sorted(entries, key=lambda e: e.name)
    for e in items:
        if not e.name.endswith(b".ipynb"):
            continue
        name = display_name(e.name)
        st = os.lstat(e.path)
        if not stat.S_ISREG(st.st_mode):
            kind = "a link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            skipped.append(Row(name, error=f"{kind}: not followed, not graded"))
            continue
        if st.st_size > MAX_NOTEBOOK_BYTES:
            skipped.append(Row(name, error=f"{st.st_size:,} bytes: larger than {MAX_NOTEBOOK_BYTES:,}, not graded"))
            continue
        fd = os.open(e.path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        try:
            data = os.read(fd, MAX_NOTEBOOK_BYTES + 1)
        finally:
            os.close(fd)
        copy = dest / f"{len(copies):04d}.ipynb"
        copy.write_bytes(data[:MAX_NOTEBOOK_BYTES])
        copies.append((name, copy))
    return copies, skipped


def assignment_of(notebook: Path, original: str, names: list[str]) -> str | None:
    """The assignment a notebook belongs to: otter's metadata name, else the longest name in the file name."""
    try:
        name = json.loads(notebook.read_text()).get("metadata", {}).get("otter", {}).get("assignment_name")
    except (ValueError, UnicodeDecodeError, AttributeError):
        name = None
    if name in names:
        return name
    matches = [a for a in names if a in original]
    return max(matches, key=len) if matches else None


def grade_folder(folder: Path, homework_dir: Path, *, assignment: str | None = None, limits: Limits = Limits(),
                 jobs: int = 1, sandboxed: bool = True, executed: Path | None = None,
                 copies_threshold: float | None = None, pairs: list | None = None) -> list[Row]:
    """Grade every ``*.ipynb`` of ``folder`` (never changed) with the autograders of ``homework_dir``; the copy
    pairs found are added to ``pairs`` when given."""
    zips = {z.stem: z for z in sorted((homework_dir / "autograder").glob("*.zip"))}
    if not zips:
        raise FileNotFoundError(f"no autograders in {homework_dir / 'autograder'}: build them with the course's "
                                f"secret, make homework HOMEWORK_SECRET=... (or HOMEWORK_SECRET_FILE=...)")
    if assignment is not None and assignment not in zips:
        raise ValueError(f"no autograder for assignment {assignment!r}; have {sorted(zips)}")
    if sandboxed and (problem := sandbox_problem()):
        raise RuntimeError(f"cannot grade in a sandbox: {problem}. Install bubblewrap, or pass --no-sandbox to "
                           f"grade without one (a submission can then read what you can)")
    if executed is not None:
        executed.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vit_edu_grade_") as tmp:
        tmp_path = Path(tmp)
        os.chmod(tmp_path, 0o755)  # the sandbox's unprivileged user reads the stripped packages
        copies, skipped = snapshot(folder, tmp_path)
        homeworks: dict[str, Homework] = {}
        for name in zips:
            homeworks[name] = Homework.load(homework_dir, name)
            packages = stripped_packages(homeworks[name], tmp_path / "stripped")
            (tmp_path / "stripped" / f"{name}.questions").write_text(json.dumps({q: str(p) for q, p in packages.items()}))

        def one(item: tuple[int, tuple[str, Path]]) -> Row:
            i, (original, copy) = item
            name = assignment or assignment_of(copy, original, list(zips))
            if name is None:
                row = Row(original, error=f"cannot tell which homework this is ({', '.join(zips)}): pass --assignment")
            else:
                target = executed / f"{i:03d}_{_safe_stem(original)}.ipynb" if executed else None
                row = grade_one(copy, homework_dir, name, tmp_path / "stripped", limits, sandboxed, target)
                row.submission = original
            print(f"{row.submission}: {row.total:g}/{row.possible:g} {row.status} {row.error} ({row.seconds:g} s)",
                  flush=True)
            return row

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(one, enumerate(copies)))
        found = mark_copies(rows, copies, homeworks, copies_threshold)
        if pairs is not None:
            pairs += found
    return rows + skipped


def mark_copies(rows: list[Row], copies: list[tuple[str, Path]], homeworks: dict[str, Homework],
                threshold: float | None) -> list[Any]:
    """Add each row's copy pairs (with the published solution or another submission), per assignment."""
    from vit_edu.homework import copies as detector

    found = []
    for name, homework in homeworks.items():
        answers = {}
        for row, (_, path) in zip(rows, copies):
            if row.assignment == name and row.status == "graded":
                nb = nbformat.reads(path.read_text(), as_version=4)
                answers[row.submission] = {q: "\n\n".join(c) for q, c in question_blocks(nb).items()
                                           if not literal_only("\n\n".join(c))}
        kwargs = {} if threshold is None else {"threshold": threshold}
        for pair in detector.find_copies(answers, homework.solutions, homework.templates, **kwargs):
            found.append(pair)
            for row in rows:
                if row.submission in (pair.first, pair.second) and row.assignment == name:
                    other = pair.second if row.submission == pair.first else pair.first
                    row.copies.append(f"{pair.question} ~ {other} ({pair.similarity:.0%})")
    return found


def literal_only(source: str) -> bool:
    """Whether an answer only assigns literals (a by-hand list, a letter): the same for everyone who is right."""
    try:
        tree = ast.parse(scan.python_source(source))
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.Expr)) else None
        try:
            ast.literal_eval(value) if value is not None else None
        except ValueError:
            if not isinstance(value, ast.Name):
                return False
        if value is None:
            return False
    return True


def _safe_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", Path(name).stem)[:80] or "submission"


def csv_cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: a leading = + - @ or control character is quoted away."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "\n") else text


def write_csv(rows: list[Row], path: Path) -> None:
    """One row per submission: status, flags, notes, copies, one column per question, total, possible."""
    questions = list(dict.fromkeys(q for r in rows for q in r.questions))
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "assignment", "status", "error", "flags", "notes", "copies", *questions,
                         "total", "possible", "seconds", "peak_mb", "details"])
        for r in rows:
            cells = [f"{r.questions[q]['score']:g}" if q in r.questions else "" for q in questions]
            writer.writerow([csv_cell(c) for c in (r.submission, r.assignment, r.status, r.error, "; ".join(r.flags),
                                                   "; ".join(r.notes), "; ".join(r.copies), *cells, f"{r.total:g}",
                                                   f"{r.possible:g}", r.seconds, r.peak_mb, "; ".join(r.details))])


def feedback_markdown(row: Row) -> str:
    """What a student may see: scores, public messages, failed hidden checks by name and hint (never an input)."""
    lines = [f"# {row.assignment or 'Homework'}: feedback for {row.submission}", "",
             f"**Score: {row.total:g} / {row.possible:g}**", ""]
    if row.error:
        lines += [f"The grader could not grade this file: {row.error}.", ""]
    if row.cells_failed:
        lines += [f"Cells that raised an error when the whole notebook ran: {', '.join(map(str, row.cells_failed))}.", ""]
    if row.questions:
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
        lines += ["", *[f"Hint: {h}" for h in v["hints"]]] if v["hints"] else []
        for note in row.notes:
            if note.startswith(f"{q}: "):
                lines += ["", "Why: " + note.split(": ", 1)[1]]
    return "\n".join(lines) + "\n"


def write_feedback(rows: list[Row], folder: Path) -> list[Path]:
    """One Markdown feedback file per row, named after the submission."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, row in enumerate(rows):
        path = folder / f"{i:03d}_{_safe_stem(row.submission)}.md"
        path.write_text(feedback_markdown(row))
        paths.append(path)
    return paths


def _worker(arg: str) -> None:
    """``--worker JSON``: grade one notebook, write its row as JSON."""
    a = json.loads(arg)
    stripped = Path(a["stripped"])
    packages = {q: Path(p) for q, p in json.loads((stripped / f"{a['name']}.questions").read_text()).items()}
    homework = Homework.load(Path(a["homework_dir"]), a["name"])
    row = grade_notebook(Path(a["notebook"]), homework, packages, Limits(**a["limits"]), a["sandboxed"],
                         Path(a["executed"]) if a["executed"] else None)
    Path(a["out"]).write_text(json.dumps(asdict(row)))


def main(argv: list[str] | None = None) -> None:
    """Command line: grade a folder into a CSV, feedback files, executed notebooks and a copies report."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker(argv[1])
        return
    p = argparse.ArgumentParser(prog="python -m vit_edu.homework.grade", description=__doc__.split("\n")[0])
    p.add_argument("submissions", type=Path, help="folder of .ipynb submissions (never modified)")
    p.add_argument("--homework-dir", type=Path, default=Path("_build/homework"),
                   help="what make homework built with the course's secret (autograder/, masters/, student/)")
    p.add_argument("--assignment", help="grade every notebook as this assignment (default: from the notebook)")
    p.add_argument("--out", type=Path, default=Path("grades.csv"))
    d = Limits()
    p.add_argument("--notebook-seconds", type=float, default=d.notebook_seconds, help="one run of a whole notebook")
    p.add_argument("--cell-seconds", type=float, default=d.cell_seconds, help="one cell")
    p.add_argument("--memory-mb", type=int, default=d.memory_mb, help="one sandbox, all its processes and files")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at the same time")
    p.add_argument("--copies-threshold", type=float, help="similarity from which two answers are reported")
    p.add_argument("--no-sandbox", action="store_true", help="run without bubblewrap (trusted work only)")
    args = p.parse_args(argv)
    if not args.submissions.is_dir():
        p.error(f"{args.submissions} is not a folder")
    limits = Limits(notebook_seconds=args.notebook_seconds, cell_seconds=args.cell_seconds, memory_mb=args.memory_mb)
    stem = args.out.parent / args.out.stem
    pairs: list = []
    try:
        rows = grade_folder(args.submissions, args.homework_dir, assignment=args.assignment, limits=limits,
                            jobs=args.jobs, sandboxed=not args.no_sandbox, executed=Path(f"{stem}_executed"),
                            copies_threshold=args.copies_threshold, pairs=pairs)
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out)
    write_feedback(rows, Path(f"{stem}_feedback"))
    from vit_edu.homework.copies import copies_report

    Path(f"{stem}_copies.md").write_text(copies_report(pairs))
    print(f"{len(rows)} submissions graded into {args.out}; feedback in {stem}_feedback, executed notebooks in "
          f"{stem}_executed, copies in {stem}_copies.md")


if __name__ == "__main__":
    main()
