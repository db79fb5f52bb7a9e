"""Hidden checks as probe/judge pairs: the student's code runs in its kernel, the comparison in the grader's.

A hidden check has two halves. Its *probe* runs in the student's kernel (inside the sandbox): it builds the
inputs, calls the student's function through :func:`call` and returns plain data (tensors, numbers, strings,
lists, dicts). Its *judge* runs in the grader's own process on that data, computes what is expected with the
book's reference and raises ``AssertionError`` with a hint when the answer is wrong. Whatever a submission does
to its own interpreter, it cannot reach a judge; the most a probe can report is what the student's code computes.

While the student's function runs, a profiler hook watches for the code of the question's reference (for
example ``vit_edu.patchify``), however it is reached (an alias, a wrapper, a default argument): a call makes that
question's checks fail as "called the reference". Copying the package's source by hand is the reader's right;
calling it is not.

A hidden module (``book/homework/hidden/<assignment>.py``) declares ``cases = Cases("<assignment>")`` and its
checks with ``@cases.add(question, name, points)`` and ``@<probe>.judge``. Answer keys that no reference can
compute (a diagnosis, an experiment's result) come to the judge as ``key``, read from a JSON file that never
enters the sandbox.
"""

from __future__ import annotations

import importlib
import json
import numbers
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any

import torch

MAX_ELEMENTS = 4_000_000  # numbers a probe may return in all (an answer of 16 MB of float32)


class CaseTimeout(Exception):
    """A probe ran past the per-check time limit."""


class ProbeError(Exception):
    """The student's code could not be run as the check needs (missing, not callable, raised, odd output)."""


# ---------------------------------------------------------------- in the student's kernel


@dataclass
class _Watch:
    """The reference code objects of the question being probed, and which of them ran."""

    codes: dict[CodeType, str] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in self.codes:
            self.called.add(self.codes[frame.f_code])


_WATCH = _Watch()


def _resolve(dotted: str) -> Any:
    """The object at ``dotted`` ("vit_edu.patches.patchify", "vit_edu.block.EncoderBlock.forward")."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(f"cannot resolve {dotted!r}")


def reference_codes(dotted_names: tuple[str, ...]) -> dict[CodeType, str]:
    """Code object -> dotted name, for functions, methods, properties and every method of a class."""
    codes: dict[CodeType, str] = {}
    for dotted in dotted_names:
        obj = _resolve(dotted)
        members = vars(obj).values() if isinstance(obj, type) else [obj]
        for member in members:
            for fn in (member, getattr(member, "fget", None), getattr(member, "__func__", None)):
                if isinstance(fn, FunctionType):
                    codes[fn.__code__] = dotted
    return codes


def to_plain(obj: Any, budget: list[int] | None = None) -> Any:
    """``obj`` as data the grader can load safely: plain tensors, numbers, strings, tuples, lists, dicts."""
    budget = [MAX_ELEMENTS] if budget is None else budget
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if isinstance(obj, torch.Tensor):
        budget[0] -= obj.numel()
        if budget[0] < 0:
            raise ProbeError(f"the answer holds more than {MAX_ELEMENTS:,} numbers")
        return obj.detach().cpu().clone().as_subclass(torch.Tensor)
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj)
    if isinstance(obj, (tuple, list, torch.Size)):
        budget[0] -= len(obj)
        if budget[0] < 0:
            raise ProbeError(f"the answer holds more than {MAX_ELEMENTS:,} items")
        items = [to_plain(x, budget) for x in obj]
        return items if isinstance(obj, list) else tuple(items)
    if isinstance(obj, dict):
        budget[0] -= len(obj)
        if budget[0] < 0:
            raise ProbeError(f"the answer holds more than {MAX_ELEMENTS:,} items")
        return {to_plain(k, budget): to_plain(v, budget) for k, v in obj.items()}
    if obj is Ellipsis:
        raise ProbeError("the answer is still `...`: replace the placeholder with your answer")
    raise ProbeError(f"the answer is a {type(obj).__name__}, not a tensor, number, string, list or dict")


def value(ns: dict[str, Any], name: str) -> Any:
    """The student's variable ``name`` as plain data (a missing name or ``...`` fails the check)."""
    if name not in ns:
        raise ProbeError(f"`{name}` is not defined: run the cell that defines it, and the cells above it")
    return to_plain(ns[name])


def function(ns: dict[str, Any], name: str) -> Callable[..., Any]:
    """The student's function ``name`` (a missing name, ``...`` or a non-function fails the check)."""
    fn = ns.get(name)
    if fn is None:
        raise ProbeError(f"`{name}` is not defined: run the cell that defines it, and the cells above it")
    if fn is Ellipsis:
        raise ProbeError(f"`{name}` is still `...`: replace the placeholder with your answer")
    if not callable(fn):
        raise ProbeError(f"`{name}` should be a function, got {type(fn).__name__}")
    return fn


def call(ns: dict[str, Any], name: str, *args: Any, plain: bool = True, **kwargs: Any) -> Any:
    """Call the student's ``name(*args, **kwargs)`` with the reference watched; plain data back (or the object)."""
    fn = function(ns, name)
    previous = sys.getprofile()
    sys.setprofile(_WATCH.hook)
    threading.setprofile(_WATCH.hook)
    try:
        out = fn(*args, **kwargs)
    except (CaseTimeout, ProbeError):
        raise
    except Exception as e:
        raise ProbeError(f"{name}(...) raised {type(e).__name__}: {e}") from e
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)  # type: ignore[arg-type]
    if out is None or out is Ellipsis:
        raise ProbeError(f"{name}(...) returned {out!r}: replace `...` with code that returns the result")
    return to_plain(out) if plain else out


def _run_with_timeout(fn: Callable[[], Any], seconds: float) -> Any:
    """``fn()`` under ``SIGALRM``: a :class:`CaseTimeout` after ``seconds`` (main thread only)."""

    def alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"the check ran longer than {seconds:g} s: is there an endless loop?")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- the cases of one assignment


@dataclass
class Case:
    """One hidden check: its question, a name students see, its points, the probe and the judge."""

    question: str
    name: str
    points: float
    probe: Callable[[dict[str, Any]], Any]
    judge_fn: Callable[[Any, Any], None] | None = None

    def judge(self, fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        """Decorator: ``fn(got, key)`` raises ``AssertionError`` when the probe's data is wrong."""
        self.judge_fn = fn
        return fn

    @property
    def id(self) -> str:
        return f"{self.question}/{self.name}"


@dataclass
class Verdict:
    """One question's result: points earned and possible, failed checks by name, the instructor's detail."""

    score: float = 0.0
    possible: float = 0.0
    failed: list[str] = field(default_factory=list)  # check names, safe to show students
    detail: list[str] = field(default_factory=list)  # messages with values, for the instructor and the CSV
    public: str = ""  # the public check's message ("" when it passed)


class Cases:
    """The hidden checks of one assignment, the reference each question must not call, its public checks."""

    def __init__(self, assignment: str) -> None:
        self.assignment = assignment
        self.cases: list[Case] = []
        self.references: dict[str, tuple[str, ...]] = {}
        self.answers: dict[str, tuple[str, ...]] = {}
        self.public: dict[str, tuple[str, str]] = {}

    def question(self, name: str, *, answers: tuple[str, ...], references: tuple[str, ...] = (),
                 public: str | None = None) -> None:
        """Declare a question: the names it grades, the reference it must not call, its public check's name."""
        self.answers[name] = answers
        self.references[name] = references
        if public is not None:
            self.public[name] = (public, answers[0])

    def add(self, question: str, name: str, points: float = 1) -> Callable[[Callable], Case]:
        """Decorator for a probe ``fn(ns) -> data``; the returned :class:`Case` takes the judge with ``.judge``."""
        if question not in self.answers:
            raise ValueError(f"declare question {question!r} with cases.question(...) before its checks")

        def register(probe: Callable[[dict[str, Any]], Any]) -> Case:
            case = Case(question, name, float(points), probe)
            self.cases.append(case)
            return case

        return register

    def each(self, question: str, name: str, function: str, inputs: Sequence[tuple] | Callable[[], Sequence[tuple]],
             expect: Callable[..., None], points: float = 1) -> Case:
        """A check that calls the student's ``function`` on each tuple of ``inputs`` and judges each result with
        ``expect(got, *args)``; ``inputs`` may be a function that builds them (tensors drawn from seeds)."""

        def build() -> Sequence[tuple]:
            return inputs() if callable(inputs) else inputs

        case = self.add(question, name, points)(lambda ns: [call(ns, function, *args) for args in build()])

        def judge(got: Any, key: Any) -> None:
            for args, out in zip(build(), got, strict=True):
                expect(out, *args)

        case.judge(judge)
        return case

    def questions(self) -> list[str]:
        return list(self.answers)

    def points(self, question: str) -> list[float]:
        return [c.points for c in self.cases if c.question == question]

    # -- in the kernel

    def probe_one(self, case: Case, ns: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Run one probe with its question's reference watched: ``{"data": ...}`` or ``{"error": ...}``."""
        _WATCH.codes = reference_codes(self.references[case.question])
        _WATCH.called = set()
        out: dict[str, Any]
        try:
            out = {"data": to_plain(_run_with_timeout(lambda: case.probe(ns), seconds))}
        except (CaseTimeout, ProbeError) as e:
            out = {"error": str(e)}
        except BaseException as e:  # noqa: BLE001 — SystemExit and the like: a failed check, not a lost run
            out = {"error": f"{type(e).__name__}: {e}"}
        out["reference"] = sorted(_WATCH.called)
        _WATCH.codes, _WATCH.called = {}, set()
        return out

    def probe_all(self, ns: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Every probe and every public check, in the student's kernel: the data the grader judges."""
        from vit_edu.homework import feedback

        public = {}
        for question, (check, answer) in self.public.items():
            try:
                _run_with_timeout(lambda: getattr(feedback, check)(ns.get(answer)), seconds)
                public[question] = ""
            except BaseException as e:  # noqa: BLE001
                public[question] = str(e) or type(e).__name__
        return {"cases": {c.id: self.probe_one(c, ns, seconds) for c in self.cases}, "public": public}

    # -- in the grader

    def judge_all(self, probed: dict[str, Any], key: Any = None,
                  disqualified: dict[str, str] | None = None) -> dict[str, Verdict]:
        """Score every question from the probes' data; ``disqualified`` questions (and why) score 0."""
        disqualified = disqualified or {}
        verdicts = {q: Verdict(public=str(probed.get("public", {}).get(q, ""))) for q in self.questions()}
        for case in self.cases:
            v = verdicts[case.question]
            v.possible += case.points
            ok, message = self.judge_one(case, probed.get("cases", {}).get(case.id), key)
            if case.question in disqualified:
                ok, message = False, disqualified[case.question]
            if ok:
                v.score += case.points
            else:
                v.failed.append(case.name)
                v.detail.append(f"{case.name}: {message}")
        return verdicts

    def judge_one(self, case: Case, result: Any, key: Any) -> tuple[bool, str]:
        """(passed, message) for one probe's result."""
        if not isinstance(result, dict):
            return False, "no result from the student's kernel (the notebook did not reach the grading step)"
        if result.get("reference"):
            names = ", ".join(result["reference"])
            return False, f"called the book's reference ({names}): write it yourself"
        if "error" in result:
            return False, str(result["error"])
        try:
            assert case.judge_fn is not None, f"{case.id} has no judge"
            case.judge_fn(result.get("data"), key)
        except AssertionError as e:
            return False, str(e)
        except Exception as e:  # noqa: BLE001 — data of the wrong kind: a wrong answer, never a grader crash
            return False, f"the answer has the wrong form ({type(e).__name__}: {e})"
        return True, ""

    def check(self, question: str, name: str, ns: dict[str, Any], key: Any = None, seconds: float = 60.0) -> None:
        """Probe and judge one check in the same kernel (otter's autograder zip): ``AssertionError`` if it fails."""
        (case,) = [c for c in self.cases if c.question == question and c.name == name]
        ok, message = self.judge_one(case, self.probe_one(case, ns, seconds), key)
        if not ok:
            raise AssertionError(message)

    @staticmethod
    def load_key(module_file: str) -> Any:
        """The answer key beside a hidden module's file (``hidden_<name>_key.json`` in otter's zip), or None."""
        path = Path(module_file).with_name(f"{Path(module_file).stem}_key.json")
        return json.loads(path.read_text()) if path.exists() else None
