"""The sandbox's checks that depend on the grader's uid, run again as ``nobody`` when the tests run as root.

A grader that is not root gets its sandbox from bwrap's user namespace (nested in the one ``unshare`` makes for its
IPC namespace), not from ``setpriv``: the command must still have no privilege, the folders above a bind under /tmp
must still be crossable, SysV shared memory must be refused and one process's socket buffers bounded. The sandboxed
program is the system's ``python3`` (standard library only): the interpreter running these tests may live where
``nobody`` cannot read (a pyenv under /root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from test_sandbox import GIB, SOCKETS, SYSV
from vit_edu.homework import sandbox

NOBODY = 65534
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or SYSTEM_PYTHON is None,
    reason="run as root with setpriv and a system python3 (as any other user, test_sandbox.py checks this already)")

DRIVER = """
import json, sys
from vit_edu.homework.sandbox import SandboxLimits, memory_accounting, run, sandbox_problem
ask = json.load(sys.stdin)
python, package, limits = ask["python"], ask["package"], SandboxLimits(**ask["limits"])

def out(argv, **kwargs):
    result = run(argv, limits=limits, **kwargs)
    return [result.returncode, result.killed, result.stdout.decode(), result.stderr[-500:]]

print(json.dumps({
    "problem": sandbox_problem(),
    "accounting": memory_accounting(),
    "status": out(["cat", "/proc/self/status"]),
    "clone": out([python, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import pkg; print(pkg.VALUE)",
                  str(ask["parent"])], readonly=[(package, package)]),
    "sysv": out([python, "-c", ask["sysv"], "2048"]),
    "sockets": out([python, "-c", ask["sockets"], "1", "2000", "200000", "unix"]),
}))
"""


@pytest.fixture(scope="module")
def as_nobody() -> dict:
    """What the sandbox did for a grader running as ``nobody``: one driver process, every check in it."""
    clone = Path(tempfile.mkdtemp(prefix="vit-edu-sandbox-test-", dir="/tmp"))
    try:
        package = clone / "deep" / "pkg"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("VALUE = 42\n")
        for path in (clone, clone / "deep", package, package / "__init__.py"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        ask = {"python": SYSTEM_PYTHON, "package": str(package), "parent": str(package.parent),
               "limits": {"seconds": GIB.seconds, "memory_mb": GIB.memory_mb, "processes": GIB.processes,
                          "disk_mb": GIB.disk_mb, "output_mb": GIB.output_mb},
               "sysv": textwrap.dedent(SYSV), "sockets": textwrap.dedent(SOCKETS)}
        done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--reset-env",
                               sys.executable, "-c", DRIVER], input=json.dumps(ask), capture_output=True, text=True,
                              cwd=Path(sandbox.__file__).parents[2], timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(clone)


def test_a_sandbox_starts_for_nobody(as_nobody):
    assert as_nobody["problem"] is None
    assert "SysV shm disabled" in as_nobody["accounting"] or as_nobody["accounting"].startswith("cgroup")


def test_the_command_runs_as_nobody_without_privilege(as_nobody):
    returncode, _, stdout, stderr = as_nobody["status"]
    assert returncode == 0, stderr
    status = dict(line.split(":\t") for line in stdout.splitlines() if ":\t" in line)
    assert status["Uid"].split() == [str(NOBODY)] * 4
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[caps], 16) == 0, caps
    assert status["NoNewPrivs"] == "1"


def test_a_checkout_under_tmp_is_readable(as_nobody):
    assert as_nobody["clone"][:3] == [0, "", "42\n"], as_nobody["clone"]


def test_sysv_shared_memory_is_refused(as_nobody):
    assert as_nobody["sysv"][:3] == [0, "", "refused\n"], as_nobody["sysv"]


def test_socket_buffers_of_one_process_stay_bounded(as_nobody):
    returncode, killed, stdout, stderr = as_nobody["sockets"]
    assert returncode == 0 and not killed, stderr
    pairs, queued, why = stdout.split()
    assert why == "EMFILE" and int(pairs) < sandbox.NOFILE // 2 and int(queued) < 100
