"""The questions of one submission, served by one zygote: each in a world of its own, each failure its own.

Requests go straight to :func:`vit_edu.homework.grade.run_questions` (the path ``make grade`` takes in bubblewrap):
what a question leaves behind (files, processes) is gone for the next, another question's package cannot be
read, a question that brings the whole sandbox down costs only itself, and the kernels of a forbidden function are
recorded whatever name reached them.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

from vit_edu.homework import plain
from vit_edu.homework.grade import ZYGOTE_STORE, Limits, run_questions
from vit_edu.homework.harness import Recorder, forbidden_ops
from vit_edu.homework.sandbox import sandbox_problem
from vit_edu.homework.strip import strip_package

pytestmark = pytest.mark.skipif(sandbox_problem() is not None and "CI" not in os.environ,
                                reason=f"no sandbox here: {sandbox_problem()}")
LIMITS = Limits(memory_mb=3072, question_seconds=60)


def value_of(name: str, cells: list[str], take_away: list[str] = ()) -> dict:
    """A request whose one example reads the value ``name`` the cells computed."""
    return {"cells": cells, "own_from": 0, "take_away": list(take_away), "cell_seconds": 30, "example_seconds": 10,
            "examples": [{"answer": name, "args": None, "kwargs": {"dict": []}, "adapter": None, "what": name}]}


def answer(result) -> object:
    """The one example's decoded value, or its error."""
    data = json.loads(result.stdout)["results"][0]
    return plain.decode(data["data"]) if "data" in data else data["error"]


@pytest.fixture(scope="module")
def packages():
    with tempfile.TemporaryDirectory() as tmp:
        yield (strip_package(["vit_edu.patches.patchify"], Path(tmp) / "a" / "vit_edu"),
               strip_package([], Path(tmp) / "b" / "vit_edu"))


def test_each_question_starts_in_a_world_of_its_own(packages):
    stripped, whole = packages
    jobs = [
        (value_of("left", ["import subprocess\nsubprocess.Popen(['sleep', '4244'], start_new_session=True)\n"
                           "for d in ('/tmp', '/dev/shm', '.'):\n    open(f'{d}/left_behind', 'w').write('x')\n"
                           "left = 1"]), stripped, 30),
        (value_of("seen", ["import os, subprocess\n"
                           "seen = [os.path.exists(f'{d}/left_behind') for d in ('/tmp', '/dev/shm', '.')] + "
                           "[subprocess.run(['pgrep', '-f', 'sleep 4244'], capture_output=True).returncode == 0]"]),
         whole, 30),
        (value_of("others", [f"import os\nothers = os.listdir({str(ZYGOTE_STORE)!r})"]), whole, 30),
        (value_of("mine", ["import vit_edu.patches, inspect\nmine = 'NotImplementedError' in "
                           "inspect.getsource(vit_edu.patches.patchify)"]), stripped, 30),
        (value_of("uid", ["import os\nuid = [os.getuid(), open('/proc/self/status').read().split('CapEff:')[1]"
                          ".split()[0]]"]), whole, 30),
    ]
    left, seen, others, mine, uid = [answer(r) for r in run_questions(jobs, LIMITS, sandboxed=True)]
    assert left == 1 and seen == [False, False, False, False], "nothing of the first question reaches the second"
    assert others == [], "the other questions' packages are out of sight"
    assert mine is True, "each question imports its own stripped package"
    assert uid[0] != 0 and int(uid[1], 16) == 0, "no root, no capability"
    assert subprocess.run(["pgrep", "-f", "sleep 4244"], capture_output=True).stdout == b""


def test_a_question_that_brings_the_sandbox_down_costs_only_itself(packages):
    _, whole = packages
    jobs = [(value_of("a", ["a = 1"]), whole, 30),
            (value_of("b", ["b = [bytearray(256 * 1024**2) for _ in range(16)]"]), whole, 30),  # past its memory
            (value_of("c", ["import time\nwhile True:\n    try:\n        time.sleep(100)\n"
                            "    except BaseException:\n        pass"]), whole, 5),  # catches its own time-outs
            (value_of("d", ["d = 4"]), whole, 30)]
    a, b, c, d = run_questions(jobs, LIMITS, sandboxed=True)
    assert answer(a) == 1 and answer(d) == 4
    assert not b.stdout or "MemoryError" in json.loads(b.stdout)["cells"][0], "killed, or refused the memory"
    assert c.killed == "time"


def test_forbidden_kernels_are_recorded_whatever_name_reached_them(packages):
    _, whole = packages
    im2col = "import torch\nx = torch.ones(1, 1, 4, 4)\ncols = torch._C._nn.im2col(x, (2, 2), (1, 1), (0, 0), (2, 2))"
    jobs = [(value_of("cols", [im2col], ["torch.nn.functional.unfold"]), whole, 30),
            (value_of("cols", [im2col]), whole, 30),
            (value_of("r", ["import einops\nr = einops.reduce(__import__('torch').ones(2, 2), 'a b -> a', 'sum')"],
                      ["einops.rearrange"]), whole, 30)]
    forbidden, allowed, einops = run_questions(jobs, LIMITS, sandboxed=True)
    assert json.loads(forbidden.stdout)["results"][0]["ops"] == ["aten::im2col"]
    assert json.loads(allowed.stdout)["results"][0]["ops"] == []
    assert "einops.reduce is not available while this question is graded" in json.loads(einops.stdout)["cells"][0]


def test_a_recorder_that_was_silenced_says_so():
    recorder = Recorder(forbidden_ops(["torch.nn.functional.unfold"]))
    x = torch.ones(1, 1, 4, 4)
    _, seen, silenced = recorder.watch(lambda: torch.nn.functional.unfold(x, 2, stride=2))
    assert seen == ["aten::im2col"] and not silenced

    def hush() -> None:
        from torch.utils._python_dispatch import _pop_mode

        _pop_mode()
        torch._C._nn.im2col(x, (2, 2), (1, 1), (0, 0), (2, 2))

    _, seen, silenced = recorder.watch(hush)
    assert seen == [] and silenced
