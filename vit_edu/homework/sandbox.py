"""Run one untrusted command in a bubblewrap (``bwrap``) sandbox and return what it printed.

What the command sees: the system (``/usr``, ``/etc``, ...), the Python installation and the virtual environment,
read-only, plus the caller's ``readonly`` binds (never the repository). Its home (the working folder), ``/tmp`` and
``/dev/shm`` are sized tmpfs mounts: nothing it writes reaches the host, and all of it vanishes with the sandbox.
It has no network (a private loopback only), its own PID, IPC and UTS namespaces, and dies with the caller.
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
- memory and processes, where a cgroup v2 with the memory and pids controllers is writable: a child cgroup with
  ``memory.max`` (which charges tmpfs, memfd and SysV shared memory too), ``memory.swap.max`` 0 and ``pids.max``;
- elsewhere (cgroup v1 machines, most containers): a monitor thread polls, every ``POLL`` seconds, the resident
  memory of every process of the sandbox plus the bytes held in its tmpfs mounts and in memfd files, and kills the
  sandbox past ``memory_mb`` or past ``processes`` tasks. RLIMIT_NPROC bounds the processes between two polls (the
  dedicated uid's count under root, the caller's current count plus ``processes`` otherwise). Not counted there:
  SysV shared memory that no process has mapped, and kernel memory.
- each process: RLIMIT_AS (``memory_mb`` plus ``UNTOUCHED_MB`` that PyTorch maps but never touches), RLIMIT_CORE 0.

``sandboxed=False`` runs the command as a plain process in a temporary folder, for machines without bwrap (trusted
work only): the limits and the monitor still apply, but the disk only per file, and the ``readonly`` binds not.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import selectors
import shutil
import signal
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
STDERR_TAIL = 8192  # bytes of stderr kept
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
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


def run(argv: list[str], *, stdin: bytes = b"", files: dict[str, bytes] | None = None,
        readonly: Sequence[tuple[Path, Path]] = (), limits: SandboxLimits = SandboxLimits(),
        sandboxed: bool = True, env: dict[str, str] | None = None) -> SandboxResult:
    """Run ``argv`` in a sandbox within ``limits``, with ``files`` (names relative to its home) and ``readonly``
    (host source, sandbox destination) binds, and return what it printed; everything it started is gone after."""
    files = {_relative(name): data for name, data in (files or {}).items()}
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(_uid_slot()) if sandboxed and os.geteuid() == 0 else None
        cgroup = _Cgroup.create(limits, overhead=2 if sandboxed else 0)
        if cgroup is not None:
            stack.callback(cgroup.remove)
        if sandboxed:
            fds = {name: _memfd(data) for name, data in files.items()}
            for fd in fds.values():
                stack.callback(os.close, fd)
            command = [*_bwrap_argv(limits, readonly, fds, _environment(HOME, limits, env)), *_drop_privileges(uid),
                       *argv]
            cwd, outer_env = "/", dict(os.environ)  # bwrap clears the environment inside
        else:
            cwd = stack.enter_context(tempfile.TemporaryDirectory(prefix="vit_edu-sandbox-"))
            for name, data in files.items():
                (Path(cwd) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(cwd) / name).write_bytes(data)
            command, fds, outer_env = argv, {}, _environment(cwd, limits, env)
        command = [*_rlimits(limits, uid), *command]
        if cgroup is not None:
            command = cgroup.join(command)
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


def _python_paths() -> list[str]:
    """The Python installation and the virtual environment, where the system folders do not hold them already."""
    paths = list(dict.fromkeys(str(Path(p).resolve()) for p in (sys.base_prefix, sys.prefix)))
    return [p for p in paths if not any(_under(p, top) for top in [*SYSTEM, *(q for q in paths if q != p)])]


def _bwrap_argv(limits: SandboxLimits, readonly: Sequence[tuple[Path, Path]], fds: dict[str, int],
                env: dict[str, str]) -> list[str]:
    """The ``bwrap`` command line: namespaces, the read-only system and Python, the sized tmpfs mounts, the files."""
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--clearenv"]
    for top in SYSTEM:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    tmpfs = limits.tmpfs()
    for path, size in tmpfs.items():
        argv += ["--perms", "1777", "--size", str(size), "--tmpfs", path]
    # The binds after the tmpfs mounts (a checkout under /tmp stays visible), outer ones before those inside them.
    binds = [(p, p) for p in _python_paths()] + [(str(Path(s).resolve()), str(d)) for s, d in readonly]
    binds.sort(key=lambda bind: len(PurePosixPath(bind[1]).parts))
    # bwrap would create the folders above each bind with mode 0700 (unreachable for the sandbox's uid): make them.
    mounted = [*SYSTEM, "/proc", "/dev", *tmpfs, *(dest for _, dest in binds)]
    above = {str(p) for _, dest in binds for p in PurePosixPath(dest).parents if str(p) != "/"}
    for folder in sorted(p for p in above if not any(_under(p, top) for top in mounted)):
        argv += ["--perms", "0755", "--dir", folder]
    for source, dest in binds:
        argv += ["--ro-bind", source, dest]
    for name, fd in fds.items():
        argv += ["--perms", "0444", "--file", str(fd), f"{HOME}/{name}"]
    argv += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", HOME]  # no unsized tmpfs left writable
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return [*argv, "--"]


def _drop_privileges(uid: int | None) -> list[str]:
    """Under a root grader: become ``uid`` with no groups, no capabilities (bounding set too), no new privileges."""
    if uid is None:
        return []  # bwrap's user namespace did it
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


def _rlimits(limits: SandboxLimits, uid: int | None) -> list[str]:
    """``prlimit`` before the command: address space, file size, no core dumps, and the processes of its uid."""
    nproc = limits.processes if uid is not None or os.geteuid() == 0 else _tasks_of(os.getuid()) + limits.processes
    return ["prlimit", f"--as={(limits.memory_mb + UNTOUCHED_MB) * MB}", f"--fsize={limits.disk_mb * MB}",
            "--core=0", f"--nproc={nproc}", "--"]


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


def _cgroup2_mount() -> tuple[Path, PurePosixPath] | None:
    """Where the cgroup v2 hierarchy is mounted, and the folder of it this process is in; None without one."""
    own = next((line.removeprefix("0::").strip() for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.startswith("0::")), None)
    if own is None:
        return None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, fstype = line.partition(" - ")
        if fstype.split()[0] == "cgroup2":
            root, mount = fields.split()[3:5]
            with contextlib.suppress(ValueError):
                return Path(mount), PurePosixPath(own).relative_to(root)
    return None


class _Cgroup:
    """A child cgroup (v2) bounding the memory (tmpfs and shared memory included) and the processes of a sandbox."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, limits: SandboxLimits, overhead: int) -> _Cgroup | None:
        """A new child of this process's cgroup, else of the root, where memory and pids are already delegated to
        children and it is writable; None where there is no such cgroup. ``overhead``: bwrap's own processes."""
        if (found := _cgroup2_mount()) is None:
            return None
        mount, own = found
        for parent in dict.fromkeys((mount / own, mount)):
            try:
                if not {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()):
                    continue
                cgroup = cls(Path(tempfile.mkdtemp(prefix="vit_edu-sandbox-", dir=parent)))
            except OSError:
                continue
            try:
                cgroup._write("memory.max", limits.memory_mb * MB)
                if (cgroup.path / "memory.swap.max").exists():
                    cgroup._write("memory.swap.max", 0)
                cgroup._write("memory.oom.group", 1)  # one process out of memory: the whole sandbox is killed
                cgroup._write("pids.max", limits.processes + overhead)
                return cgroup
            except OSError:
                cgroup.remove()
        return None

    def _write(self, name: str, value: int) -> None:
        (self.path / name).write_text(f"{value}\n")

    def join(self, command: list[str]) -> list[str]:
        """``command`` started inside the cgroup (it enters before it can start anything)."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *command]

    def memory(self) -> int:
        """Bytes charged to the cgroup now."""
        return int((self.path / "memory.current").read_text())

    def oom_killed(self) -> bool:
        """Whether the kernel killed something in the cgroup for lack of memory."""
        events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
        return int(events.get("oom_kill", 0)) + int(events.get("oom_group_kill", 0)) > 0

    def kill(self) -> None:
        """SIGKILL everything in the cgroup."""
        if (self.path / "cgroup.kill").exists():
            self._write("cgroup.kill", 1)
            return
        for pid in (self.path / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left in the cgroup, then remove it (the kernel refuses while a process is in it)."""
        deadline = time.monotonic() + 10
        while self.path.exists():
            try:
                self.kill()
                self.path.rmdir()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


# ---------------------------------------------------------------- one running sandbox


class _Box:
    """One running sandbox: its processes, the most memory it has used, and why it was killed, if it was."""

    def __init__(self, proc: subprocess.Popen, limits: SandboxLimits, uid: int | None, cgroup: _Cgroup | None,
                 tmpfs: dict[str, int]) -> None:
        self.proc, self.limits, self.uid, self.cgroup, self.tmpfs = proc, limits, uid, cgroup, tmpfs
        self.overhead = 2 if tmpfs else 0  # bwrap's own processes (outside, and its PID namespace's init)
        self.killed = ""
        self.peak = 0
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

    def close(self) -> None:
        """Stop measuring, kill whatever is left and wait until it is gone; only then reap bwrap (until then its
        number, and its session's, cannot be reused by an unrelated process that would be taken for the sandbox's)."""
        self._stop.set()
        self._monitor.join()
        deadline = time.monotonic() + 10
        while self._kill_all() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            pipe.close()
        if self.cgroup is not None and self.cgroup.oom_killed():
            self.killed = self.killed or "memory"

    def _watch(self) -> None:
        """Measure every POLL seconds and keep the peak; without a cgroup, kill past ``memory_mb`` or ``processes``."""
        while True:
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    self.peak = max(self.peak, self.cgroup.memory())
            else:
                used, tasks = self._measure()
                self.peak = max(self.peak, used)
                if used > self.limits.memory_mb * MB:
                    self.kill("memory")
                elif tasks > self.limits.processes + self.overhead:
                    self.kill("processes")
            if self._stop.wait(POLL):
                return

    def _measure(self) -> tuple[int, int]:
        """Bytes the sandbox holds (resident memory, its tmpfs mounts, memfd files) and the tasks it runs."""
        table = _process_table()
        members = _members(self.proc.pid, table)
        resident = sum(int(table[pid][21]) for pid in members) * PAGE
        tasks = sum(int(table[pid][17]) for pid in members)
        inside = [pid for pid in members if int(table[pid][1]) == self.proc.pid]  # bwrap's PID namespace's init
        return resident + _tmpfs_bytes(inside, self.tmpfs) + _memfd_bytes(members), tasks


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
