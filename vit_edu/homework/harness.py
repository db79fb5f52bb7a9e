"""The grader's harness for one question, inside its own sandboxed process: ``python -m vit_edu.homework.harness``.

It starts before any code of the submission: it reads the request from stdin (the question's cells, the
examples' inputs, the functions to take away), keeps a private copy of the channel its answer goes back on, and
points stdout and stderr elsewhere. Then it runs the cells in a fresh IPython shell, calls the answer on each
input and writes the outputs as plain data (:mod:`vit_edu.homework.plain`) on that channel, one JSON line.

Nothing here judges: the grader decodes those bytes, size-checked, and compares them outside the sandbox. Whatever
the cells do to this process (rebind torch, hook the shell, forge the channel), they can only spoil the answer
of their own question. The book's references for the question are not in this process at all: the grader binds
a copy of ``vit_edu`` without them over the package (:mod:`vit_edu.homework.strip`), and the functions of other
libraries that an exercise forbids (``einops.rearrange``, ...) are taken away before the cells run.

Other names reach the same kernels (``torch._C._nn.im2col`` is ``F.unfold``'s), so the operations themselves are
watched where they run: while the question's own cells and each call of its answer run, PyTorch's dispatcher
reports every operation to a recorder (:class:`Recorder`), and the forbidden ones (:data:`FORBIDDEN_OPS`) go back
with the results. A canary operation after each watched stretch tells whether the answer silenced the recorder.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from typing import Any

TAKEN_AWAY = "not available while this question is graded: write it yourself"
# The kernels behind a forbidden function, as the dispatcher names them (a prefix matches every overload).
FORBIDDEN_OPS = {
    "torch.nn.functional.unfold": ("aten::im2col",), "torch.nn.Unfold": ("aten::im2col",),
    "torch.Tensor.unfold": ("aten::unfold",),
    "torch.nn.functional.interpolate": ("aten::upsample", "aten::_upsample"),
    "torch.nn.functional.upsample": ("aten::upsample", "aten::_upsample"),
    "torch.nn.functional.upsample_bilinear": ("aten::upsample", "aten::_upsample"),
    "torch.nn.functional.scaled_dot_product_attention": ("aten::scaled_dot_product", "aten::_scaled_dot_product"),
    "torch.nn.MultiheadAttention": ("aten::_native_multi_head_attention",),
}


# Libraries taken away whole when one of their functions is forbidden: their other functions compute the same thing
# (``einops.reduce`` rearranges, ``torchmetrics.functional.jaccard_index`` is ``MulticlassJaccardIndex``).
WHOLE_PACKAGES = ("einops", "torchmetrics")


def take_away(dotted: str) -> None:
    """Replace ``module.attr`` (``einops.rearrange``, ``torch.Tensor.unfold``) by a function that raises, here."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:-1]:
            owner = getattr(owner, name, None)
        break
    else:
        return

    def gone(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"{dotted} is {TAKEN_AWAY}")

    if owner is not None and hasattr(owner, parts[-1]):
        setattr(owner, parts[-1], gone)


def take_away_package(name: str) -> None:
    """Take away every public function of a library one of whose functions is forbidden (``einops.reduce`` does
    what ``einops.rearrange`` does): its modules' callables raise."""
    import types

    for module_name, module in list(sys.modules.items()):
        if module_name == name or module_name.startswith(name + "."):
            for attr, value in vars(module).items():
                if isinstance(value, (types.FunctionType, type)) and not attr.startswith("__"):
                    take_away(f"{module_name}.{attr}")


def forbidden_ops(references: list[str]) -> tuple[str, ...]:
    """The dispatcher's names of the kernels behind ``references``."""
    return tuple(op for r in references for op in FORBIDDEN_OPS.get(r, ()))


class Recorder:
    """Records the forbidden operations the dispatcher runs while it is on, and answers a canary (whether it still
    hears anything at all)."""

    def __init__(self, forbidden: tuple[str, ...]) -> None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                name = func._schema.name
                if name.startswith(forbidden):
                    recorder.seen.add(name)
                if args and args[0] is recorder.canary:
                    recorder.heard = True
                return func(*args, **(kwargs or {}))

        self.mode, self.seen, self.heard = Mode(), set(), False
        self.canary = torch.ones(1)
        self.forbidden = forbidden

    def watch(self, run: Any) -> tuple[Any, list[str], bool]:
        """Call ``run()`` with the recorder on: its result, the forbidden operations it ran, whether it silenced the
        recorder (the canary run after it went unheard, or the mode was popped)."""
        import torch

        if not self.forbidden:
            return run(), [], False
        self.seen, self.heard = set(), False
        silenced = False
        self.mode.__enter__()
        try:
            return_value = run()
        finally:
            try:
                torch.ops.aten.abs.default(self.canary)
                self.mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 — the answer changed the mode stack
                silenced = True
            silenced = silenced or not self.heard
        return return_value, sorted(self.seen), silenced


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def main() -> None:
    """Read the request, run the cells, answer on the private channel."""
    request = json.loads(sys.stdin.buffer.read())
    channel = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # print() and the cells' output go nowhere; their errors stay on stderr
    sys.stdout = sys.stderr

    import torch

    from vit_edu.homework import checks, plain

    torch.set_num_threads(1)
    references = request.get("take_away", [])
    for dotted in references:
        take_away(dotted)
    for package in WHOLE_PACKAGES:  # every submodule imported, so that every one of their functions is taken away
        if any(r.startswith(package + ".") for r in references):
            try:
                importlib.import_module(package)
            except ImportError:  # not installed where this grades (Gradescope's image): nothing to take away
                continue
            take_away_package(package)
    recorder = Recorder(forbidden_ops(references))
    ops: set[str] = set()
    silenced = False
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cells = []
    signal.signal(signal.SIGALRM, _alarm)
    own = request.get("own_from", 0)  # the question's own cells (and its dependencies') are watched
    for i, source in enumerate(request["cells"]):
        signal.setitimer(signal.ITIMER_REAL, request.get("cell_seconds", 60))
        try:
            if i >= own:
                result, seen, hushed = recorder.watch(lambda: shell.run_cell(source, store_history=False, silent=True))
                ops.update(seen)
                silenced = silenced or hushed
            else:
                result = shell.run_cell(source, store_history=False, silent=True)
            error = result.error_in_exec or result.error_before_exec
            cells.append("" if error is None else f"{type(error).__name__}: {error}"[:300])
        except _Timeout:
            cells.append(f"ran past {request.get('cell_seconds', 60)} s")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    results = []
    for data in request["examples"]:
        ex = checks.Example.from_data(data)
        signal.setitimer(signal.ITIMER_REAL, request.get("example_seconds", 20))
        try:
            if ex.answer not in shell.user_ns:
                raise AssertionError(f"`{ex.answer}` is not defined by the question's cells")
            out, seen, hushed = recorder.watch(lambda: checks.run_example(shell.user_ns[ex.answer], ex))
            silenced = silenced or hushed
            results.append({"data": plain.encode(out), "ops": sorted(ops.union(seen))})
        except _Timeout:
            results.append({"error": f"the check ran longer than {request.get('example_seconds', 20)} s"})
        except BaseException as e:  # noqa: BLE001 — whatever the answer raises is its own failed check
            results.append({"error": f"{type(e).__name__}: {e}"[:500]})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    channel.write(json.dumps({"cells": cells, "results": results, "silenced": silenced}, separators=(",", ":")) + "\n")
    channel.flush()
    os._exit(0)  # no atexit hook of the submission's runs after the answer


if __name__ == "__main__":
    main()
