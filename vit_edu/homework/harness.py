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
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from typing import Any

TAKEN_AWAY = "not available while this question is graded: write it yourself"


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
    for dotted in request.get("take_away", []):
        take_away(dotted)
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cells = []
    signal.signal(signal.SIGALRM, _alarm)
    for source in request["cells"]:
        signal.setitimer(signal.ITIMER_REAL, request.get("cell_seconds", 60))
        try:
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
            results.append({"data": plain.encode(checks.run_example(shell.user_ns[ex.answer], ex))})
        except _Timeout:
            results.append({"error": f"the check ran longer than {request.get('example_seconds', 20)} s"})
        except BaseException as e:  # noqa: BLE001 — whatever the answer raises is its own failed check
            results.append({"error": f"{type(e).__name__}: {e}"[:500]})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    channel.write(json.dumps({"cells": cells, "results": results}, separators=(",", ":")) + "\n")
    channel.flush()
    os._exit(0)  # no atexit hook of the submission's runs after the answer


if __name__ == "__main__":
    main()
