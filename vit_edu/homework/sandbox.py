"""A Jupyter kernel inside a bubblewrap (``bwrap``) sandbox, one per submission.

The sandbox sees the system, the Python installation and the ``vit_edu`` package read-only, and one folder of
its own read-write (the submission's temporary copy, also its home); ``/tmp`` is a small private tmpfs. It has no
network (``--unshare-net``), its own PID namespace (so nothing it starts outlives it), and it dies with the
grader (``--die-with-parent``). The grader talks to the kernel over Unix sockets in that folder (ZeroMQ's ``ipc``
transport), so no port is opened and the kernel needs no network.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec

import vit_edu

TMP_BYTES = 256 * 1024**2  # the sandbox's private /tmp


def _readonly_paths() -> list[Path]:
    """What the kernel needs to read: the interpreter, the virtual environment, the package (an editable install)."""
    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(vit_edu.__file__).resolve().parent]
    paths = [p.resolve() for p in paths]
    return [p for p in paths if not any(p != q and p.is_relative_to(q) for q in paths)]


def sandbox_argv(work: Path, threads: int = 1) -> list[str]:
    """The ``bwrap`` command line that runs a program with ``work`` as its only writable folder."""
    argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    # The private /tmp first: the Python installation, the package or the work folder may live under /tmp (a
    # clone there, pytest's folders), and each bind below must land on top of it, not be hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for path in _readonly_paths():
        argv += ["--ro-bind", str(path), str(path)]
    work = work.resolve()
    argv += [
        "--bind", str(work), str(work), "--chdir", str(work),
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
        "--clearenv",
    ]
    env = {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PYTHONHASHSEED": "0",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(work / ".config" / "matplotlib"),
        "IPYTHONDIR": str(work / ".ipython"), "JUPYTER_RUNTIME_DIR": str(work / ".jupyter"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return argv + ["--"]


def bwrap_problem() -> str | None:
    """Why a sandbox cannot start here (None when it can): bwrap missing, or refused by the kernel."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap"
    probe = Path(os.environ.get("TMPDIR", "/tmp")).resolve()
    try:
        result = subprocess.run([*sandbox_argv(probe), "true"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap could not start: {e}"
    if result.returncode != 0:
        return f"bwrap could not start a sandbox: {result.stderr.strip() or f'exit status {result.returncode}'}"
    return None


def limit_resources(memory_mb: int, file_mb: int) -> None:
    """``preexec_fn``: cap the address space of the sandbox and everything in it, and the size of any file."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024**2,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb * 1024**2,) * 2)


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs in the sandbox (or, with ``sandboxed=False``, as a plain process)."""

    def __init__(self, work: Path, *, sandboxed: bool = True, memory_mb: int = 6144, file_mb: int = 256,
                 threads: int = 1) -> None:
        work = work.resolve()
        super().__init__(transport="ipc", ip=str(work / "kernel"), connection_file=str(work / "kernel.json"))
        self._argv = [*(sandbox_argv(work, threads) if sandboxed else []), sys.executable, "-m",
                      "ipykernel_launcher", "-f", "{connection_file}"]
        self._limits = (memory_mb, file_mb)
        self._sandboxed = sandboxed
        self._work = work

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        return KernelSpec(argv=self._argv, display_name="vit_edu grading", language="python", env={})

    def launch_options(self) -> dict:
        """How to start the kernel: a session of its own, the memory and file-size limits, its folder."""
        memory_mb, file_mb = self._limits
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}  # bwrap replaces it with its own
        return dict(start_new_session=True, preexec_fn=lambda: limit_resources(memory_mb, file_mb), env=env,
                    cwd=str(self._work))
