"""Run one untrusted command in a bubblewrap (``bwrap``) sandbox and return what it printed.

What the command sees, read-only: an allow-list of the system (``/usr/bin``, ``/usr/sbin``, ``/usr/lib*``,
``/usr/libexec``, ``/usr/local/bin``, ``/usr/local/lib``, the merged-usr links ``/bin``, ``/lib``..., and a few files of
``/etc``), the Python installation (its ``bin`` and ``lib``), the virtual environment, and the caller's ``readonly``
binds. Never the repository checkout (its ``_build/`` holds the grader's hidden data): where an allowed folder holds
it, an empty tmpfs masks it and only the virtual environment and the caller's binds inside it are bound again.
``hide`` makes more host paths look empty (a package a question must do without). Every folder above a bind is made
with mode 0755 (bwrap's own are 0700, which the sandbox's uid could not cross). Its home (the working folder),
``/tmp`` and ``/dev/shm`` are sized tmpfs mounts: nothing it writes reaches the host, and all of it vanishes with the
sandbox. It has no network (a private loopback only), its own PID, IPC and UTS namespaces, and dies with the caller.
Results come back on stdout only.

Unprivileged, also under a root grader: bwrap (as root, no user namespace) does the mounts, then ``setpriv`` starts
the command as a dedicated uid (one per concurrent sandbox, from ``UIDS``) with no capabilities, an empty bounding
set and ``no_new_privs``: it can neither remount nor ``chattr``, and RLIMIT_NPROC counts that sandbox alone. A grader
that is not root gets the same from bwrap's user namespace, as its own uid.

What bounds what, for the sandbox as a whole:

- time: the caller's clock (``seconds``), then everything in the sandbox is killed;
- output: stdout is read up to ``output_mb``; past that the sandbox is killed;
- disk: every writable place is a tmpfs with a ``--size`` (home half of ``disk_mb``, ``/tmp`` and ``/dev/shm`` a
  quarter each); RLIMIT_FSIZE caps any one file;
- always: its own IPC namespace with no SysV shared memory, message queues or semaphores (``kernel.shm*``,
  ``msgmni`` and ``sem`` 0 there; made by ``unshare``, as root or in a user namespace of its own), RLIMIT_MSGQUEUE
  0, RLIMIT_NOFILE ``NOFILE`` per process; and RLIMIT_AS per process (``memory_mb`` plus ``UNTOUCHED_MB`` that
  PyTorch maps but never touches), RLIMIT_CORE 0;
- memory and processes, where a cgroup v2 with the memory and pids controllers is writable: a child cgroup with
  ``memory.max`` (which charges tmpfs, memfd, kernel memory and socket buffers), ``memory.swap.max`` 0 and
  ``pids.max``;
- else where the cgroup v1 memory controller is writable: a child of our memory cgroup with
  ``memory.limit_in_bytes`` (tmpfs, memfd, SysV shared memory, kernel memory such as slab and AF_UNIX socket buffers
  are charged to it) and swap none, plus ``memory.kmem.tcp.limit_in_bytes`` (v1 charges TCP and UDP buffers only
  once it is set, and apart): the two add up to ``memory_mb``, the TCP part an eighth of it, at most ``TCP_MB``.
  A child of the v1 pids controller holds ``pids.max`` where that is writable, else the monitor counts tasks;
- elsewhere a monitor thread polls, every ``POLL`` seconds, the resident memory of every process of the sandbox plus
  the bytes held in its tmpfs mounts, in memfd files, in SysV segments of its uid and, under a root grader, in its
  socket buffers (AF_UNIX, TCP, UDP: the kernel's count through sock_diag, for every socket of the sandbox's network
  namespace, or of its uid without one), and kills the sandbox past ``memory_mb`` (an overshoot of what it can
  allocate in ``POLL`` seconds) or past ``processes`` tasks. RLIMIT_NPROC bounds the processes between two polls (the
  dedicated uid's count under root, the caller's current count plus ``processes`` otherwise). Not counted there:
  other kernel memory (slab, page tables), and, under a grader that is not root, socket buffers, bounded only per
  process (``NOFILE`` descriptors, each holding up to twice ``net.core.wmem_max`` or ``rmem_max``).

``sandboxed=False`` is for machines where bwrap cannot start (a container such as Gradescope's). Under a root grader
the command still runs as a dedicated uid through ``setpriv`` (no capabilities, empty bounding set,
``no_new_privs``, no groups), in a private working folder (mode 0700, its own, under a root-owned 0711 one), with the
same rlimits, cgroup or monitor and IPC namespace where they can be had: it reads what file modes let any user read
(never a root file of mode 0600), sees the host's network, ``/tmp`` and processes, and writes outside its folder
only per file; the ``readonly`` binds and ``hide`` do not apply, and what its uid left in ``/tmp``, ``/var/tmp``,
``/dev/shm`` and SysV shared memory is removed after it. Under a grader that is not root it runs as the grader's own
uid in a temporary folder, with the rlimits and the cgroup or monitor but the grader's IPC namespace (trusted work
only).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import grp
import os
import pwd
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

HOME = "/home/grader"  # the sandbox's working folder
UIDS = range(64000, 64100)  # the dedicated uids of a root grader's sandboxes, one per sandbox running
LOCKS = Path("/run/vit_edu-sandbox")  # a root grader's lock per dedicated uid in use
POLL = 0.05  # seconds between two measurements of the sandbox
UNTOUCHED_MB = 4096  # address space each process may map beyond memory_mb (PyTorch maps ~3.5 GB it never touches)
NOFILE = 256  # open files per process: bounds its socket buffers where no cgroup counts them
TCP_MB = 256  # most of memory_mb a cgroup v1 sets apart for TCP and UDP buffers (an eighth below 2 GB)
STDERR_TAIL = 8192  # bytes of stderr kept
SYSTEM = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec",
          "/usr/local/bin", "/usr/local/lib")  # the system folders a sandbox sees (never /usr/local/src, /usr/share)
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # merged-usr links (or folders, elsewhere)
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "hosts",
       "fonts")  # fonts: matplotlib runs fc-list, which complains on stderr without its configuration
IPC_OFF = {"shmmax": "0", "shmall": "0", "shmmni": "0", "msgmni": "0", "sem": "0 0 0 0"}  # kernel.* in its namespace
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # the host's shared writable places (sandboxed=False under root)
PACKAGE = Path(__file__).resolve().parents[1]  # vit_edu
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, CLONE_NEWNET = 4, 20, 0x40000000
MB = 1024**2
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandbox may use, all its processes together."""

    seconds: float = 300.0  # wall clock, then everything in it is killed
    memory_mb: int = 6144  # resident memory of all its processes plus what its tmpfs folders hold
    processes: int = 64  # processes and threads at once (torch starts a few threads)
    disk_mb: int = 512  # bytes it may write in all (every writable place is a sized tmpfs)
    output_mb: int = 64  # bytes of stdout read back; more kills it
    threads: int = 1  # OMP/MKL threads

    def tmpfs(self) -> dict[str, int]:
        """The writable places and their sizes in bytes: half of ``disk_mb`` for the home, a quarter for the others."""
        quarter = self.disk_mb * MB // 4
        return {HOME: 2 * quarter, "/tmp": quarter, "/dev/shm": quarter}


@dataclass
class SandboxResult:
    """What a sandboxed command did."""

    returncode: int | None  # None when it was killed
    stdout: bytes
    stderr: str  # the last STDERR_TAIL bytes, decoded with errors="replace"
    killed: str  # "" or why: "time", "memory", "processes", "output"
    peak_mb: float  # largest memory the whole sandbox used, as measured
    seconds: float
    uid: int | None  # the dedicated uid its processes ran as (a root grader's sandbox), else None


def sandbox_problem() -> str | None:
    """Why a sandbox cannot start here (None when it can): a missing tool, or bwrap refused by the kernel."""
    tools = ["bwrap", "prlimit", *(["setpriv"] if os.geteuid() == 0 else [])]
    if missing := [tool for tool in tools if shutil.which(tool) is None]:
        return (f"{' and '.join(missing)} not installed: apt-get install bubblewrap util-linux (Debian/Ubuntu), "
                "dnf install bubblewrap util-linux")
    try:
        result = run(["true"], limits=SandboxLimits(seconds=60))
    except (OSError, RuntimeError) as e:
        return f"a sandbox could not start: {e}"
    if result.returncode != 0:
        return f"bwrap could not start a sandbox: {result.stderr.strip() or result.killed or result.returncode}"
    return None


def memory_accounting() -> str:
    """What bounds a sandbox's memory on this machine, in words (for the README and the grader's log)."""
    cgroup = _Cgroup2.create(SandboxLimits(), 0) or _Cgroup1.create(SandboxLimits(), 0)
    if cgroup is not None:
        cgroup.remove()
        return cgroup.kind
    shm = ("SysV shm disabled" if _own_ipc_works() else
           "SysV shm of its uid counted" if os.geteuid() == 0 else "SysV shm not bounded")
    sockets = "socket buffers counted (sock_diag)" if os.geteuid() == 0 else "socket buffers bounded per process"
    return f"polling monitor; {shm}, {sockets}, nofile {NOFILE}"


PROBE = """
import os, sys
import torch, vit_edu
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            seen = bool(os.listdir(path))
        else:
            with open(path, "rb") as f:
                seen = bool(f.read(1))
    except OSError:
        seen = False
    print(int(seen))
"""


def probe(must_not_read: Sequence[Path], readonly: Sequence[tuple[Path, Path]] = ((PACKAGE, PACKAGE),),
          hide: Sequence[Path] = (), sandboxed: bool = True, files: dict[str, bytes] | None = None,
          env: dict[str, str] | None = None) -> str | None:
    """Start one sandbox as a question's is started (the same binds, files and environment), import torch and
    vit_edu in it and try to read each path of ``must_not_read`` (a byte of a file, an entry of a folder): None when
    both imported and nothing could be read, else what went wrong, in a line. A grader calls it before grading, and
    does not grade when it fails."""
    paths = [str(path) for path in must_not_read]
    result = run([sys.executable, "-c", PROBE, *paths], readonly=readonly, hide=hide, sandboxed=sandboxed,
                 files=files, env=env, limits=SandboxLimits(seconds=300))
    seen = result.stdout.decode(errors="replace").split()
    if result.killed or result.returncode != 0 or len(seen) != len(paths):
        why = result.killed or f"exit status {result.returncode}"
        last = (result.stderr.strip().splitlines() or [""])[-1]
        return f"the probe's sandbox failed ({why}): {last}"
    if readable := [path for path, bit in zip(paths, seen) if bit != "0"]:
        return f"readable inside the sandbox: {', '.join(readable)}"
    return None


def run(argv: list[str], *, stdin: bytes = b"", files: dict[str, bytes] | None = None,
        readonly: Sequence[tuple[Path, Path]] = (), hide: Sequence[Path] = (), limits: SandboxLimits = SandboxLimits(),
        sandboxed: bool = True, env: dict[str, str] | None = None, capabilities: Sequence[str] = ()) -> SandboxResult:
    """Run ``argv`` in a sandbox within ``limits``, with ``files`` (names relative to its home), ``readonly`` (host
    source, sandbox destination) binds and ``hide`` (host paths it sees empty), and return what it printed;
    everything it started is gone after. With ``capabilities`` (bubblewrap only), the command starts with them and
    drops its privileges itself, to the uid and gid in ``$VIT_EDU_SANDBOX_UID`` and ``$VIT_EDU_SANDBOX_GID`` (the
    grader's zygote, :mod:`vit_edu.homework.zygote`)."""
    files = {_relative(name): data for name, data in (files or {}).items()}
    start = time.monotonic()
    root = os.geteuid() == 0
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(_uid_slot()) if root else None
        if uid is not None and not sandboxed:
            stack.callback(_remove_leftovers, uid)  # after the sandbox's processes are gone (callbacks run last first)
        overhead = 2 if sandboxed else 0  # bwrap's own processes
        cgroup = _Cgroup2.create(limits, overhead) or _Cgroup1.create(limits, overhead)
        if cgroup is not None:
            stack.callback(cgroup.remove)
        ipc = _own_ipc_works() and (sandboxed or root)
        if sandboxed:
            fds = {name: _memfd(data) for name, data in {**files, "": b""}.items()}  # "": what a hidden file shows
            for fd in fds.values():
                stack.callback(os.close, fd)
            if capabilities:
                env = {**(env or {}), "VIT_EDU_SANDBOX_UID": str(os.getuid() if uid is None else uid),
                       "VIT_EDU_SANDBOX_GID": str(os.getgid() if uid is None else uid)}
            command = [*_bwrap_argv(limits, readonly, hide, fds, _environment(HOME, limits, env), ipc, capabilities),
                       *([] if capabilities else _drop_privileges(uid)), *argv]
            cwd, outer_env = "/", dict(os.environ)  # bwrap clears the environment inside
        else:
            cwd = stack.enter_context(_private_folder(uid) if uid is not None
                                      else tempfile.TemporaryDirectory(prefix="vit_edu-sandbox-"))
            _write_files(Path(cwd), files, uid)
            command, fds, outer_env = [*_drop_privileges(uid), *argv], {}, _environment(cwd, limits, env)
        command = _launcher(cgroup.procs() if cgroup else [], ipc) + _rlimits(limits, uid) + command
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=list(fds.values()), cwd=cwd, env=outer_env, start_new_session=True)
        box = _Box(proc, limits, uid, cgroup, limits.tmpfs() if sandboxed else {})
        stack.callback(box.close)
        stdout, stderr = box.communicate(stdin, start + limits.seconds)
    return SandboxResult(returncode=None if box.killed else proc.returncode, stdout=stdout,
                         stderr=stderr.decode(errors="replace"), killed=box.killed, peak_mb=box.peak / MB,
                         seconds=time.monotonic() - start, uid=uid)


# ---------------------------------------------------------------- the command line


def _relative(name: str) -> str:
    """``name`` if it is a plain relative path (a file in the sandbox's home), else ValueError."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"a sandbox file name must be a relative path without '..': {name!r}")
    return str(path)


def _memfd(data: bytes) -> int:
    """An anonymous in-memory file holding ``data``, read from its start by bwrap's ``--file``."""
    fd = os.memfd_create("sandbox-file")
    with open(fd, "wb", closefd=False) as f:
        f.write(data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _environment(home: str, limits: SandboxLimits, extra: dict[str, str] | None) -> dict[str, str]:
    """The command's whole environment: a small fixed one (one thread, no display, caches under home) plus ``extra``."""
    return {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": "grader",
        "LOGNAME": "grader", "LANG": "C.UTF-8", "OMP_NUM_THREADS": str(limits.threads),
        "MKL_NUM_THREADS": str(limits.threads), "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{home}/.config/matplotlib", "IPYTHONDIR": f"{home}/.ipython",
        "JUPYTER_RUNTIME_DIR": f"{home}/.local/share/jupyter/runtime", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        **(extra or {}),
    }


def _under(path: str, top: str) -> bool:
    """Whether ``path`` is ``top`` or inside it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def _checkout() -> str | None:
    """The repository checkout this package runs from (``pyproject.toml`` beside it), None for an installed one."""
    top = PACKAGE.parent
    return str(top) if (top / "pyproject.toml").is_file() else None


def _system() -> list[str]:
    """The allowed system folders and ``/etc`` files that exist here (merged-usr links are made, not bound)."""
    folders = [p for p in (*SYSTEM, *ROOT_LINKS) if os.path.isdir(p) and not os.path.islink(p)]
    return folders + [f"/etc/{name}" for name in ETC if os.path.exists(f"/etc/{name}")]


def _binds(system: Sequence[str], readonly: Sequence[tuple[Path, Path]]) -> list[tuple[str, str]]:
    """The read-only binds besides the system's, (host source, sandbox destination): the Python installation's
    ``bin`` and ``lib`` (not its whole prefix, which may be ``/usr/local``), the virtual environment, other folders of
    installed packages on the import path, the caller's."""
    base = Path(sys.base_prefix).resolve()
    python = [str(base / name) for name in ("bin", "lib", "lib64") if (base / name).is_dir()]
    if sys.prefix != sys.base_prefix:
        python.append(str(Path(sys.prefix).resolve()))
    # Installed packages the import path names besides (a .pth file's folder of another environment, say).
    python += [str(Path(p).resolve()) for p in sys.path if p.endswith(("site-packages", "dist-packages"))
               and os.path.isdir(p) and not any(_under(str(Path(p).resolve()), q) for q in python)]
    checkout = _checkout()
    shown = [p for p in python if any(_under(p, top) for top in system) and not (checkout and _under(p, checkout))]
    python = [p for p in dict.fromkeys(python) if p not in shown]  # (one in the checkout goes back over its mask)
    return [(p, p) for p in python] + [(str(Path(s).resolve()), str(d)) for s, d in readonly]


def _masks(binds: Sequence[tuple[str, str]]) -> list[str]:
    """Where the checkout would show through a bind of a folder holding it: the sandbox paths an empty tmpfs covers."""
    if (checkout := _checkout()) is None:
        return []
    return sorted({str(PurePosixPath(dest) / PurePosixPath(checkout).relative_to(source)) for source, dest in binds
                   if _under(checkout, source)}, key=_depth)


def _depth(path: str) -> int:
    """How deep ``path`` lies (outer mounts go first)."""
    return len(PurePosixPath(path).parts)


def _shown_at(host: Path, binds: Sequence[tuple[str, str]]) -> str | None:
    """Where the host path ``host`` shows in the sandbox (through the innermost bind of a folder holding it)."""
    path = str(host.resolve())
    holding = [(source, dest) for source, dest in binds if _under(path, source)]
    if not holding:
        return None
    source, dest = max(holding, key=lambda bind: len(bind[0]))
    return str(PurePosixPath(dest) / PurePosixPath(path).relative_to(source))


def _bwrap_argv(limits: SandboxLimits, readonly: Sequence[tuple[Path, Path]], hide: Sequence[Path],
                fds: dict[str, int], env: dict[str, str], own_ipc: bool, capabilities: Sequence[str] = ()) -> list[str]:
    """The ``bwrap`` command line: namespaces, the system, the sized tmpfs mounts, Python and the caller's binds, the
    masks over the checkout and what goes back inside them, the files (``fds`` by name; "" an empty one), what
    ``hide`` empties; in that order, since a later mount covers an earlier one. Every folder above a mount is made
    first, mode 0755."""
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-uts",
            "--clearenv", *([] if own_ipc else ["--unshare-ipc"])]
    if os.geteuid() != 0 and own_ipc:  # bwrap runs as root of the user namespace that owns the IPC one: map us back
        argv += ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid()), "--cap-drop", "ALL"]
    for capability in capabilities:
        argv += ["--cap-add", capability]
    system = _system()
    binds = _binds(system, readonly)
    everything = [(p, p) for p in system] + binds
    masks = _masks(everything)
    checkout = _checkout()
    # Inside a mask go back the venv and the caller's binds (never one of a folder holding the checkout).
    after = sorted(((s, d) for s, d in binds
                    if any(_under(d, m) for m in masks) and not (checkout and _under(checkout, s))),
                   key=lambda bind: _depth(bind[1]))
    before = sorted((bind for bind in binds if bind not in after), key=lambda bind: _depth(bind[1]))
    hidden = [(path, host.is_dir()) for host in hide if host.exists() and (path := _shown_at(host, everything))]
    tmpfs = limits.tmpfs()
    links = [link for link in ROOT_LINKS if os.path.islink(link)]
    mounted = {"/", "/proc", "/dev", *links, *system, *tmpfs, *masks, *(d for _, d in binds), *(p for p, _ in hidden)}
    made: set[str] = set()

    def above(dest: str) -> list[str]:
        """Make the folders above ``dest`` that no mount or earlier step made, mode 0755 (bwrap's are 0700)."""
        missing = [str(p) for p in reversed(PurePosixPath(dest).parents) if str(p) not in mounted | made]
        made.update(missing)
        return [arg for folder in missing for arg in ("--perms", "0755", "--dir", folder)]

    for link in links:
        argv += ["--symlink", os.readlink(link), link]
    for path in sorted(system, key=_depth):
        argv += [*above(path), "--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for path, size in tmpfs.items():
        argv += ["--perms", "1777", "--size", str(size), "--tmpfs", path]
    for source, dest in before:
        argv += [*above(dest), "--ro-bind", source, dest]
    for mask in masks:
        argv += [*above(mask), "--perms", "0755", "--size", str(PAGE), "--tmpfs", mask]
    for source, dest in after:
        argv += [*above(dest), "--ro-bind", source, dest]
    for name, fd in fds.items():
        if name:
            argv += ["--perms", "0444", "--file", str(fd), f"{HOME}/{name}"]
    for path, folder in hidden:
        how = ["--size", str(PAGE), "--tmpfs"] if folder else ["--ro-bind-data", str(fds[""])]
        argv += [*above(path), "--perms", "0755" if folder else "0444", *how, path]
    # No tmpfs left writable but the sized ones.
    for path in ["/", "/dev", *masks, *(path for path, folder in hidden if folder)]:
        argv += ["--remount-ro", path]
    argv += ["--chdir", HOME]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return [*argv, "--"]


def _drop_privileges(uid: int | None) -> list[str]:
    """Under a root grader: become ``uid`` with no groups, no capabilities (bounding set too), no new privileges."""
    if uid is None:
        return []  # bwrap's user namespace did it, or the grader is not root (trusted work)
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


def _rlimits(limits: SandboxLimits, uid: int | None) -> list[str]:
    """``prlimit`` before the command: address space, file size, open files, no core dumps and no POSIX message
    queues, and the processes of its uid."""
    nproc = limits.processes if uid is not None or os.geteuid() == 0 else _tasks_of(os.getuid()) + limits.processes
    return ["prlimit", f"--as={(limits.memory_mb + UNTOUCHED_MB) * MB}", f"--fsize={limits.disk_mb * MB}",
            f"--nofile={NOFILE}", "--msgqueue=0", "--core=0", f"--nproc={nproc}", "--"]


def _launcher(procs: Sequence[Path], own_ipc: bool) -> list[str]:
    """The start of the command line: join the sandbox's cgroups (writing to ``procs``), and, with ``own_ipc``, enter
    an IPC namespace of its own with no SysV IPC (a user namespace too, for a grader that is not root)."""
    steps = [f"echo {value} > /proc/sys/kernel/{name} || exit 1;" for name, value in IPC_OFF.items()] if own_ipc else []
    if not procs and not steps:
        return []
    script = f'while [ "$1" != -- ]; do echo $$ > "$1" || exit 1; shift; done; shift; {" ".join(steps)} exec "$@"'
    unshare = ["unshare", "--ipc", *(["--user", "--map-root-user"] if os.geteuid() else []), "--"] if own_ipc else []
    return [*unshare, "sh", "-c", script, "sh", *map(str, procs), "--"]


@functools.cache
def _own_ipc_works() -> bool:
    """Whether an IPC namespace of the sandbox's own, with SysV IPC off, can be made here (not in most containers)."""
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run([*_launcher([], True), "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ---------------------------------------------------------------- folders of the unprivileged mode


@contextlib.contextmanager
def _private_folder(uid: int) -> Iterator[str]:
    """A working folder of ``uid`` only (0700), under a root-owned 0711 one no other user can list; removed after."""
    parent = tempfile.mkdtemp(prefix="vit_edu-sandbox-")
    try:
        os.chmod(parent, 0o711)
        home = os.path.join(parent, "home")
        os.mkdir(home, 0o700)
        os.chown(home, uid, uid)
        yield home
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _write_files(folder: Path, files: dict[str, bytes], uid: int | None) -> None:
    """Write ``files`` into ``folder``, all of it owned by ``uid`` where given (whatever the grader's umask)."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    if uid is not None:
        for top, folders, names in os.walk(folder):
            for name in folders + names:
                os.chown(os.path.join(top, name), uid, uid)


def _remove_leftovers(uid: int) -> None:
    """Remove what ``uid`` left in the host's shared writable places and its SysV shared memory (another sandbox
    will run as that uid)."""
    for folder in SCRATCH:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
    libc = ctypes.CDLL(None, use_errno=True)
    for shmid, _ in _sysv_segments(uid):
        libc.shmctl(shmid, 0, None)  # IPC_RMID


def _sysv_segments(uid: int) -> list[tuple[int, int]]:
    """The SysV shared memory segments (id, resident bytes) that ``uid`` made or owns, in this IPC namespace."""
    found = []
    with contextlib.suppress(OSError):
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
        for fields in (row.split() for row in rows):
            if uid in (int(fields[7]), int(fields[9])):  # uid, cuid
                found.append((int(fields[1]), int(fields[14]) if len(fields) > 14 else int(fields[3])))  # rss|size
    return found


# ---------------------------------------------------------------- processes, uids, cgroups


def _process_table() -> dict[int, list[bytes]]:
    """Every process's ``/proc/PID/stat`` fields after its name: state [0], ppid [1], session [3], threads [17],
    resident pages [21]."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            table[int(name)] = stat[stat.rfind(b")") + 2:].split()
    return table


def _members(root: int, table: dict[int, list[bytes]]) -> set[int]:
    """``root``, its descendants, and the processes of its session (which bwrap's PID namespace init stays in)."""
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    todo = [root, *(pid for pid, fields in table.items() if int(fields[3]) == root)]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _real_uid(pid: int) -> int | None:
    """The real uid of a process (None when it is gone); unlike the owner of /proc/PID, the process cannot hide it."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _pids_of(uid: int) -> set[int]:
    """The processes whose real uid is ``uid``."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit() and _real_uid(int(name)) == uid}


def _tasks_of(uid: int) -> int:
    """How many tasks (processes and threads, what RLIMIT_NPROC counts) ``uid`` runs."""
    table = _process_table()
    return sum(int(table[pid][17]) for pid in _pids_of(uid) if pid in table)


def _has_name(uid: int) -> bool:
    """Whether ``uid`` is a known user or group of this machine (then it is not free for a sandbox)."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        with contextlib.suppress(KeyError):
            lookup(uid)
            return True
    return False


@contextlib.contextmanager
def _uid_slot() -> Iterator[int]:
    """A uid of ``UIDS`` that no user, group, process or other sandbox has, held (a lock) until the sandbox is gone."""
    LOCKS.mkdir(mode=0o700, exist_ok=True)
    for uid in UIDS:
        if _has_name(uid):
            continue
        fd = os.open(LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            if not _pids_of(uid):
                yield uid
                return
        finally:
            os.close(fd)
    raise RuntimeError(f"no free sandbox uid in {UIDS.start}..{UIDS.stop - 1}")


def _own_cgroup(controller: str) -> tuple[Path, Path] | None:
    """Where the hierarchy of a cgroup v1 ``controller`` (cgroup v2 for "") is mounted, and this process's folder in
    it; None where it is not mounted."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, names, own = line.split(":", 2)
        if controller in names.split(",") if controller else number == "0":
            break
    else:
        return None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        fstype, _, options = tail.split()[:3]
        if fstype == "cgroup" and controller in options.split(",") if controller else fstype == "cgroup2":
            root, mount = fields.split()[3:5]
            with contextlib.suppress(ValueError):
                return Path(mount), Path(mount) / PurePosixPath(own).relative_to(root)
    return None


class _Cgroup:
    """A sandbox's own cgroup (one folder per hierarchy): what bounds its memory, kernel memory included."""

    kind = ""  # in words, for memory_accounting()
    bounds_tasks = True  # whether it bounds the sandbox's processes too

    def __init__(self, folders: list[Path]) -> None:
        self.folders = folders

    def _write(self, name: str, value: int, folder: int = 0) -> None:
        (self.folders[folder] / name).write_text(f"{value}\n")

    def _read(self, name: str) -> str:
        return (self.folders[0] / name).read_text()

    def procs(self) -> list[Path]:
        """The files a process joins it by, writing its pid (it enters before it can start anything)."""
        return [folder / "cgroup.procs" for folder in self.folders]

    def memory(self) -> int:
        """Bytes charged to it now."""
        raise NotImplementedError

    def peak(self) -> int:
        """The most bytes charged to it at once (0 where the kernel does not say)."""
        raise NotImplementedError

    def oom_killed(self) -> bool:
        """Whether the kernel killed something in it for lack of memory."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL every process in it."""
        for pid in {int(pid) for path in self.procs() if path.exists() for pid in path.read_text().split()}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left in it, then remove it (the kernel refuses while a process is in it)."""
        deadline = time.monotonic() + 10
        while any(folder.exists() for folder in self.folders):
            try:
                self.kill()
                for folder in self.folders:
                    if folder.exists():
                        folder.rmdir()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


class _Cgroup2(_Cgroup):
    """A child cgroup (v2): ``memory.max`` charges tmpfs, shared memory, kernel memory and socket buffers alike."""

    kind = "cgroup v2"

    @classmethod
    def create(cls, limits: SandboxLimits, overhead: int) -> _Cgroup2 | None:
        """A new child of this process's cgroup, else of the root, where memory and pids are already delegated to
        children and it is writable; None where there is no such cgroup. ``overhead``: bwrap's own processes."""
        if (found := _own_cgroup("")) is None:
            return None
        mount, own = found
        for parent in dict.fromkeys((own, mount)):
            try:
                if not {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()):
                    continue
                cgroup = cls([Path(tempfile.mkdtemp(prefix="vit_edu-sandbox-", dir=parent))])
            except OSError:
                continue
            try:
                cgroup._write("memory.max", limits.memory_mb * MB)
                if (cgroup.folders[0] / "memory.swap.max").exists():
                    cgroup._write("memory.swap.max", 0)
                cgroup._write("memory.oom.group", 1)  # one process out of memory: the whole sandbox is killed
                cgroup._write("pids.max", limits.processes + overhead)
                return cgroup
            except OSError:
                cgroup.remove()
        return None

    def memory(self) -> int:
        return int(self._read("memory.current"))

    def peak(self) -> int:
        return int(self._read("memory.peak")) if (self.folders[0] / "memory.peak").exists() else 0

    def oom_killed(self) -> bool:
        events = dict(line.split() for line in self._read("memory.events").splitlines())
        return int(events.get("oom_kill", 0)) + int(events.get("oom_group_kill", 0)) > 0

    def kill(self) -> None:
        if (self.folders[0] / "cgroup.kill").exists():
            self._write("cgroup.kill", 1)
        else:
            super().kill()


class _Cgroup1(_Cgroup):
    """A child of our cgroup v1 memory controller, and of the pids one where that is writable. v1 charges SysV and
    POSIX shared memory, tmpfs, slab and AF_UNIX socket buffers to ``memory.usage_in_bytes``, and TCP and UDP
    buffers to ``memory.kmem.tcp.usage_in_bytes``, apart and only once its limit is set: the two limits add up to
    ``memory_mb``."""

    kind = "cgroup v1 (kernel memory and TCP buffers charged)"

    @classmethod
    def create(cls, limits: SandboxLimits, overhead: int) -> _Cgroup1 | None:
        """A new child of this process's memory cgroup (v1) with its limits, where that is writable, else None."""
        if (memory := _own_cgroup("memory")) is None:
            return None
        try:
            cgroup = cls([Path(tempfile.mkdtemp(prefix="vit_edu-sandbox-", dir=memory[1]))])
        except OSError:
            return None
        try:
            tcp = min(limits.memory_mb * MB // 8, TCP_MB * MB)
            cgroup._write("memory.limit_in_bytes", limits.memory_mb * MB - tcp)
            if (cgroup.folders[0] / "memory.memsw.limit_in_bytes").exists():  # no swap: its bound equals memory's
                cgroup._write("memory.memsw.limit_in_bytes", limits.memory_mb * MB - tcp)
            cgroup._write("memory.kmem.tcp.limit_in_bytes", tcp)
        except OSError:
            cgroup.remove()
            return None
        cgroup.bounds_tasks = cgroup._add_pids(limits.processes + overhead)
        return cgroup

    def _add_pids(self, most: int) -> bool:
        """Join a child of our pids cgroup (v1) of the same name, with ``pids.max``; whether that could be done."""
        if (pids := _own_cgroup("pids")) is None:
            return False
        folder = pids[1] / self.folders[0].name
        try:
            folder.mkdir()
        except OSError:
            return False
        self.folders.append(folder)
        try:
            self._write("pids.max", most, folder=1)
            return True
        except OSError:
            self.folders.pop()
            folder.rmdir()
            return False

    def memory(self) -> int:
        return int(self._read("memory.usage_in_bytes")) + int(self._read("memory.kmem.tcp.usage_in_bytes"))

    def peak(self) -> int:
        return int(self._read("memory.max_usage_in_bytes")) + int(self._read("memory.kmem.tcp.max_usage_in_bytes"))

    def oom_killed(self) -> bool:
        control = dict(line.split() for line in self._read("memory.oom_control").splitlines())
        return int(control.get("oom_kill", 0)) + int(control.get("under_oom", 0)) > 0


# ---------------------------------------------------------------- one running sandbox


class _Box:
    """One running sandbox: its processes, the most memory it has used, and why it was killed, if it was."""

    def __init__(self, proc: subprocess.Popen, limits: SandboxLimits, uid: int | None, cgroup: _Cgroup | None,
                 tmpfs: dict[str, int]) -> None:
        self.proc, self.limits, self.uid, self.cgroup, self.tmpfs = proc, limits, uid, cgroup, tmpfs
        self.overhead = 2 if tmpfs else 0  # bwrap's own processes (outside, and its PID namespace's init)
        self.killed = ""
        self.peak = 0
        self._diag: socket.socket | None = None  # sock_diag, where the monitor counts socket buffers
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._monitor = threading.Thread(target=self._watch, daemon=True)
        self._monitor.start()

    def communicate(self, stdin: bytes, deadline: float) -> tuple[bytes, bytes]:
        """Feed ``stdin``, read stdout (up to ``output_mb``) and the tail of stderr until they close or it is killed."""
        cap = self.limits.output_mb * MB
        out, err = bytearray(), bytearray()
        pending = memoryview(stdin)
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ, out)
            selector.register(self.proc.stderr, selectors.EVENT_READ, err)
            if pending:
                os.set_blocking(self.proc.stdin.fileno(), False)
                selector.register(self.proc.stdin, selectors.EVENT_WRITE)
            else:
                self.proc.stdin.close()
            readers = 2
            while readers and not self.killed:
                if (left := deadline - time.monotonic()) <= 0:
                    self.kill("time")
                    break
                for key, _ in selector.select(min(left, POLL)):
                    if key.data is None:  # stdin
                        try:
                            pending = pending[os.write(key.fd, pending[:65536]):]
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(key.fileobj)
                            key.fileobj.close()
                    elif chunk := os.read(key.fd, 65536):
                        key.data.extend(chunk)
                        del err[:-STDERR_TAIL]
                        if len(out) > cap:
                            self.kill("output")
                    else:
                        selector.unregister(key.fileobj)
                        readers -= 1
                if _exited(self.proc.pid):
                    self._kill_all()  # what it left running would hold stdout open
        while not self.killed and not _exited(self.proc.pid):
            if time.monotonic() > deadline:
                self.kill("time")
            time.sleep(POLL)
        return bytes(out[:cap]), bytes(err)

    def kill(self, why: str) -> None:
        """Kill everything in the sandbox; the first reason given is the one reported."""
        with self._lock:
            self.killed = self.killed or why
        self._kill_all()

    def _kill_all(self) -> set[int]:
        """SIGKILL the sandbox's processes (its PID namespace dies with its init); return those still alive besides
        the one started (a zombie is dead: it holds nothing, and whoever inherited it reaps it)."""
        if self.cgroup is not None:
            self.cgroup.kill()
        table = _process_table()
        found = _members(self.proc.pid, table) | (_pids_of(self.uid) if self.uid is not None else set())
        found.discard(self.proc.pid)
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not found or not self.tmpfs:  # bwrap ends by itself once its init is gone (killed first, it would
            os.kill(self.proc.pid, signal.SIGKILL)  # leave that init a zombie for the host's init to reap)
        return {pid for pid in found if pid not in table or table[pid][0] != b"Z"}

    def _orphans(self) -> set[int]:
        """Without a PID namespace, the dead processes of its uid that the host's init has not reaped yet (until
        then the uid is not free for another sandbox)."""
        return _pids_of(self.uid) - {self.proc.pid} if self.uid is not None and not self.tmpfs else set()

    def close(self) -> None:
        """Stop measuring, kill whatever is left and wait until it is gone; only then reap bwrap (until then its
        number, and its session's, cannot be reused by an unrelated process that would be taken for the sandbox's)."""
        self._stop.set()
        self._monitor.join()
        if self._diag is not None:
            self._diag.close()
        deadline = time.monotonic() + 10
        while (self._kill_all() or self._orphans()) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            pipe.close()
        if self.cgroup is not None:
            self.peak = max(self.peak, self.cgroup.peak())
            if self.cgroup.oom_killed():
                self.killed = self.killed or "memory"

    def _watch(self) -> None:
        """Measure every POLL seconds and keep the peak; kill past ``memory_mb`` (or when the cgroup's kernel killed a
        process for lack of it: the rest goes too) or past ``processes``."""
        while True:
            with contextlib.suppress(OSError):  # a cgroup file that cannot be read: measure again next time
                used, tasks = self._measure()
                self.peak = max(self.peak, used)
                if used > self.limits.memory_mb * MB or (self.cgroup is not None and self.cgroup.oom_killed()):
                    self.kill("memory")
                elif tasks > self.limits.processes + self.overhead:
                    self.kill("processes")
            if self._stop.wait(POLL):
                return

    def _measure(self) -> tuple[int, int]:
        """Bytes the sandbox holds and the tasks it runs (0 where its cgroup bounds them): what its cgroup is charged,
        else its resident memory, tmpfs mounts, memfd files and its uid's SysV shared memory."""
        if self.cgroup is not None and self.cgroup.bounds_tasks:
            return self.cgroup.memory(), 0
        table = _process_table()
        members = _members(self.proc.pid, table)
        if self.uid is not None and not self.tmpfs:  # no PID namespace: what its uid runs, wherever it went
            members |= _pids_of(self.uid) & table.keys()
        tasks = sum(int(table[pid][17]) for pid in members)
        if self.cgroup is not None:
            return self.cgroup.memory(), tasks
        resident = sum(int(table[pid][21]) for pid in members) * PAGE
        inside = [pid for pid in members if int(table[pid][1]) == self.proc.pid]  # bwrap's PID namespace's init
        shm = sum(size for _, size in _sysv_segments(self.uid)) if self.uid is not None else 0
        held = _tmpfs_bytes(inside, self.tmpfs) + _memfd_bytes(members) + shm + self._sockets(inside)
        return resident + held, tasks

    def _sockets(self, inside: list[int]) -> int:
        """Bytes in its socket buffers, where a root grader can ask the kernel: every socket of its own network
        namespace (entered through ``inside``), or of its uid without one; 0 elsewhere (a grader that is not root)."""
        if self.uid is None or (self.tmpfs and not inside):
            return 0
        try:
            if self._diag is None:
                self._diag = _diag_socket(inside[0] if self.tmpfs else None)
            return _socket_bytes(self._diag, None if self.tmpfs else self.uid)
        except OSError:  # the kernel would not tell (then RLIMIT_NOFILE bounds them): the rest is still measured
            return 0


def _diag_socket(pid: int | None) -> socket.socket:
    """A sock_diag netlink socket in the network namespace of ``pid`` (ours for None; another's takes root): the
    kernel tells through it what each socket there holds."""
    if pid is None:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/thread-self/ns/net", "rb") as own, open(f"/proc/{pid}/ns/net", "rb") as theirs:
        if os.fstat(own.fileno()).st_ino == os.fstat(theirs.fileno()).st_ino:
            raise OSError(f"process {pid} is not in a network namespace of its own")
        if libc.setns(theirs.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"cannot enter the network namespace of {pid}")
        try:
            return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        finally:
            libc.setns(own.fileno(), CLONE_NEWNET)  # (this thread only)


def _diag_dump(diag: socket.socket, request: bytes, header: int) -> Iterator[tuple[bytes, dict[int, bytes]]]:
    """Each socket sock_diag reports for ``request``: its message, and its attributes (after ``header`` bytes)."""
    diag.send(struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 0x301, 0, 0) + request)  # request, dump
    while True:
        data, at = diag.recv(1 << 20), 0
        while at < len(data):
            length, kind = struct.unpack_from("=IH", data, at)
            if kind == 3:  # done
                return
            if kind == 2:  # error
                raise OSError(-struct.unpack_from("=i", data, at + 16)[0], "sock_diag")
            message, attributes, offset = data[at + 16:at + length], {}, header
            while offset + 4 <= len(message):
                size, name = struct.unpack_from("=HH", message, offset)
                attributes[name] = message[offset + 4:offset + size]
                offset += (size + 3) & ~3
            yield message, attributes
            at += (length + 3) & ~3


def _socket_bytes(diag: socket.socket, uid: int | None) -> int:
    """Bytes in the buffers (received, being sent, queued to send) of the AF_UNIX, TCP and UDP sockets ``diag`` sees,
    of ``uid`` only where given, as the kernel counts them."""
    total = 0
    unix = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, 0x20 | 0x40, 0xFFFFFFFF, 0xFFFFFFFF)
    for _, attributes in _diag_dump(diag, unix, 16):  # attributes: 5 memory, 7 uid
        if 5 in attributes and (uid is None or attributes.get(7) == struct.pack("=I", uid)):
            memory = struct.unpack_from("=6I", attributes[5])
            total += memory[0] + memory[2] + memory[5]  # rmem_alloc, wmem_alloc, wmem_queued
    for family in (socket.AF_INET, socket.AF_INET6):
        for protocol in (socket.IPPROTO_TCP, socket.IPPROTO_UDP):
            inet = struct.pack("=BBBxI", family, protocol, 1 << 6, 0xFFFFFFFF) + bytes(48)  # with its memory
            for message, attributes in _diag_dump(diag, inet, 72):  # attribute 7: memory; uid at byte 64
                if 7 in attributes and (uid is None or struct.unpack_from("=I", message, 64)[0] == uid):
                    memory = struct.unpack_from("=6I", attributes[7])
                    total += memory[0] + memory[2] + memory[5]
    return total


def _exited(pid: int) -> bool:
    """Whether our child ``pid`` has ended, without reaping it."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _tmpfs_bytes(inside: list[int], tmpfs: dict[str, int]) -> int:
    """Bytes written to the sandbox's tmpfs mounts, seen through a process inside; a mount counts only once its size
    shows it is the sandbox's own (before bwrap has set it up, the path is the host's)."""
    for pid in inside:
        used = 0
        for path, size in tmpfs.items():
            with contextlib.suppress(OSError):
                fs = os.statvfs(f"/proc/{pid}/root{path}")
                if fs.f_blocks * fs.f_frsize == -(-size // PAGE) * PAGE:
                    used += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
        return used
    return 0


def _memfd_bytes(members: set[int]) -> int:
    """Bytes held in memfd files (anonymous in-memory files, in no tmpfs of the sandbox) its processes have open."""
    seen: dict[tuple[int, int], int] = {}
    for pid in members:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                        st = os.stat(f"/proc/{pid}/fd/{fd}")
                        seen[st.st_dev, st.st_ino] = st.st_blocks * 512
    return sum(seen.values())
