"""Run a whole submitted notebook inside its sandbox: ``python -m vit_edu.homework.runner CELL_SECONDS``.

The notebook comes on stdin and goes back, executed, on stdout. Kernel and client both live in the sandbox (over
its private loopback), so nothing of the run reaches the grader but those bytes, and nothing in them decides a
point: the grader keeps the executed copy for the instructor and the list of cells that raised for the feedback. A
cell that runs past its limit or stops the kernel is replaced by a ``raise`` and the notebook runs again.
"""

from __future__ import annotations

import io
import os
import re
import sys

import nbformat

RETRIES = 2
# otter's check cells: the grader runs the public checks in each question's own process instead.
OTTER_CHECK = re.compile(r'grader\.check\("\w+"\)|grader\.check_all\(\)|grader\.export\(.*\)')
# Run before the submission's first cell: `exit()` would end the kernel after its cell (and blame the next one),
# `os._exit` would kill it; make them raise instead, so only their own cell fails.
PRELUDE = (
    "import os as _os\n"
    "def _no_exit(*args):\n"
    "    raise SystemExit(f'os._exit{args} is not allowed while grading')\n"
    "_os._exit = _no_exit\n"
    "get_ipython().ask_exit = lambda: None\n"
)


def execute(nb: nbformat.NotebookNode, cell_seconds: int) -> tuple[nbformat.NotebookNode, int | None, str]:
    """Run every code cell: the executed notebook, and the index of a cell to remove (with why), if one hung."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    run = nbformat.from_dict({**nb, "cells": [nbformat.v4.new_code_cell(PRELUDE), *nb.cells]})
    client = NotebookClient(run, timeout=cell_seconds, allow_errors=True, kernel_name="python3",
                            interrupt_on_timeout=False, startup_timeout=120, record_timing=False)
    with client.setup_kernel():
        for i, cell in enumerate(run.cells):
            if cell.cell_type != "code" or OTTER_CHECK.fullmatch(cell.source.strip()):
                continue
            try:
                client.execute_cell(cell, i)
            except CellTimeoutError:
                return nb, i - 1, f"ran past {cell_seconds} s"
            except DeadKernelError:
                return nb, i - 1, "stopped the kernel"
    run.cells = run.cells[1:]
    return run, None, ""


def main() -> None:
    cell_seconds = int(float(sys.argv[1]))
    nb = nbformat.read(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8"), as_version=4)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the kernel's and the client's chatter go to stderr
    for _ in range(RETRIES + 1):
        ran, cell, why = execute(nb, cell_seconds)
        if cell is None or cell < 0:
            break
        nb.cells[cell].source = f"raise RuntimeError('the grader removed this cell: it {why}')"
        nb.cells[cell].outputs = []
    out.write(nbformat.writes(ran))
    out.flush()


if __name__ == "__main__":
    main()
