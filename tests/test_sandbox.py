"""The homework sandbox confines untrusted code, also under a root grader.

Each attack of a student graded by a root grader is replayed here (remounting a read-only folder, an immutable file,
memory spread over processes or kept in /dev/shm, memfd files, SysV shared memory or socket buffers, disk, a fork
bomb, an endless loop, endless output, the network, the package source, the checkout's hidden data), each next to its
honest twin, which must work. The memory attacks run twice: bounded by the kernel (a cgroup, where this machine has a
writable one) and by the polling monitor alone (cgroups off). Without bwrap the module is skipped, except under CI,
where the first test fails with the reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sys
import sysconfig
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

import vit_edu
from vit_edu.homework import sandbox
from vit_edu.homework.sandbox import HOME, SandboxLimits, SandboxResult, memory_accounting, probe, run, sandbox_problem

PROBLEM = sandbox_problem()
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"no sandbox here: {PROBLEM}", allow_module_level=True)

MB = 1024**2
PACKAGE = Path(vit_edu.__file__).resolve().parent
SITE = Path(sysconfig.get_paths()["purelib"])  # the virtual environment's site-packages
ROOT = os.geteuid() == 0
SMALL = SandboxLimits(seconds=60, memory_mb=1500, processes=32, disk_mb=64, output_mb=4)
GIB = SandboxLimits(seconds=60, memory_mb=1024, processes=32, disk_mb=64, output_mb=4)


def python(code: str, *args: str, **kwargs) -> SandboxResult:
    """Run Python ``code`` (with ``args``) in a sandbox."""
    kwargs.setdefault("limits", SMALL)
    return run([sys.executable, "-c", textwrap.dedent(code), *args], **kwargs)


def lines(result: SandboxResult) -> list[str]:
    """The sandbox's stdout as lines, with its stderr when it failed (to see why)."""
    assert result.returncode == 0 and not result.killed, (result.returncode, result.killed, result.stderr)
    return result.stdout.decode().splitlines()


def processes_of(uid: int) -> list[int]:
    """The host's processes whose real uid is ``uid``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uids = next(line for line in status.read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uids.split()[1]) == uid:
            found.append(int(status.parent.name))
    return found


def assert_left_nothing(result: SandboxResult) -> None:
    """No process of the sandbox's dedicated uid runs on the host any more."""
    if result.uid is not None:
        assert processes_of(result.uid) == []


def test_a_sandbox_can_start_here():
    assert PROBLEM is None, PROBLEM


def test_an_honest_program_imports_torch_reads_its_files_and_echoes_stdin():
    result = python("""
        import os, sys, torch
        print(os.getcwd(), os.environ["HOME"], os.environ["OMP_NUM_THREADS"])
        print(open("data/question.txt").read())
        print(sys.stdin.read())
        print(torch.ones(3).sum().item())
    """, stdin=b"from stdin", files={"data/question.txt": b"from a file"},
        limits=SandboxLimits(seconds=120, memory_mb=3000))
    assert lines(result) == [f"{HOME} {HOME} 1", "from a file", "from stdin", "3.0"]
    assert 100 < result.peak_mb < 3000  # torch alone holds a few hundred MB
    assert_left_nothing(result)


def test_file_names_must_stay_in_the_home():
    for name in ("/etc/passwd", "../escape", ""):
        with pytest.raises(ValueError):
            run(["true"], files={name: b"x"})


def test_inside_it_has_no_privilege_and_outside_it_is_not_root():
    marker = f"vit-edu-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    done: list[SandboxResult] = []
    thread = threading.Thread(target=lambda: done.append(python("""
        import sys, time
        print(open("/proc/self/status").read(), flush=True)
        time.sleep(3)
    """, marker)))
    thread.start()
    seen = None  # the real, effective, saved and file-system uids of the sandboxed program, read by the host
    while seen is None and thread.is_alive():
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if marker.encode() in cmdline.read_bytes() and b"bwrap" not in cmdline.read_bytes():
                    status = (cmdline.parent / "status").read_text()
                    seen = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
            except OSError:
                continue
        time.sleep(0.05)
    thread.join()
    (result,) = done
    inside = dict(line.split(":\t") for line in lines(result) if ":\t" in line)
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(inside[caps], 16) == 0, caps
    assert inside["NoNewPrivs"] == "1"
    assert seen is not None, "the sandboxed program was not found from the host"
    if os.geteuid() == 0:
        assert result.uid is not None and result.uid != 0
        assert seen == [str(result.uid)] * 4
    else:
        assert seen == [str(os.getuid())] * 4
    assert_left_nothing(result)


def digest(folder: Path) -> dict[str, tuple[str, int]]:
    """Each file's content hash and mode, by path."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_read_only_folder_stays_read_only_and_no_file_becomes_immutable(tmp_path):
    # The grader binds a stripped copy of the package over the real one; the attacker remounted it writable.
    copy = tmp_path / "vit_edu"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    before = digest(copy)
    result = python("""
        import ctypes, errno, fcntl, hashlib, os, shutil, struct, subprocess, sys
        package = sys.argv[1]
        print(hashlib.sha256(open(os.path.join(package, "__init__.py"), "rb").read()).hexdigest())  # the control
        libc = ctypes.CDLL(None, use_errno=True)
        MS_REMOUNT, MS_BIND = 32, 4096
        failed = libc.mount(b"none", package.encode(), None, MS_REMOUNT | MS_BIND, None)
        print("mount()", failed, errno.errorcode.get(ctypes.get_errno()))
        print("mount -o remount,rw", subprocess.run(["mount", "-o", "remount,rw", package]).returncode)
        for name, flags in (("__init__.py", os.O_WRONLY), ("new.py", os.O_WRONLY | os.O_CREAT)):
            try:
                os.open(os.path.join(package, name), flags)
                print("opened for writing", name)
            except OSError as e:
                print("open", errno.errorcode[e.errno])
        with open("mine.txt", "w") as f:
            f.write("x")
        fd = os.open("mine.txt", os.O_RDONLY)
        FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x40086602, 0x10
        try:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", FS_IMMUTABLE_FL))
            print("immutable")
        except OSError as e:
            print("ioctl", errno.errorcode[e.errno])
        if shutil.which("chattr"):
            print("chattr +i", subprocess.run(["chattr", "+i", "mine.txt"], capture_output=True).returncode)
    """, str(PACKAGE), readonly=[(copy, PACKAGE)])
    out = lines(result)
    assert out[0] == before["__init__.py"][0]
    assert out[1] == "mount() -1 EPERM"
    assert out[2] != "mount -o remount,rw 0"
    assert all(line in ("open EROFS", "open EACCES") for line in out[3:5]), out[3:5]
    assert out[5] == "ioctl EPERM"
    assert all(line != "chattr +i 0" for line in out[6:])
    assert digest(copy) == before
    assert not (copy / "new.py").exists()
    assert_left_nothing(result)


HOLD = """
    import os, sys, time
    size, processes, where = int(sys.argv[1]) * 2**20, int(sys.argv[2]), sys.argv[3]
    for _ in range(processes - 1):
        if os.fork() == 0:
            break
    if where == "memory":
        held = b"x" * size
    elif where == "memfd":
        fd = os.memfd_create("hidden")
        for _ in range(size // 2**24):
            os.write(fd, b"x" * 2**24)
    else:
        with open(f"{where}/{os.getpid()}", "wb") as f:
            for _ in range(size // 2**24):
                f.write(b"x" * 2**24)
    print("held", flush=True)
    time.sleep(2)
"""


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "plain"])
def test_memory_is_bounded_across_processes(sandboxed):
    honest = python(HOLD, "600", "1", "memory", sandboxed=sandboxed)
    assert lines(honest) == ["held"]
    assert 600 < honest.peak_mb < 1500
    hog = python(HOLD, "600", "4", "memory", sandboxed=sandboxed)  # 4 x 600 MB within 1500 MB
    assert hog.killed == "memory" and hog.returncode is None
    assert hog.peak_mb > honest.peak_mb  # (a cgroup stops it at 1500 MB, the monitor just past)
    assert_left_nothing(hog)


@pytest.mark.parametrize("where", ["/dev/shm", "memfd"])
def test_memory_hidden_in_dev_shm_or_a_memfd_is_counted(where):
    host_shm = sorted(os.listdir("/dev/shm"))
    limits = SandboxLimits(seconds=60, memory_mb=1000, disk_mb=8000)  # /dev/shm may hold 2000 MB: memory bounds it
    honest = python(HOLD, "400", "1", where, limits=limits)
    assert lines(honest) == ["held"]
    hog = python(HOLD, "1536", "1", where, limits=limits)
    assert hog.killed == "memory"
    assert sorted(os.listdir("/dev/shm")) == host_shm
    assert_left_nothing(hog)


def test_disk_is_bounded_in_all():
    fill = """
        import errno, os, sys
        written, why = 0, "done"
        for folder in (".", "/tmp", "/dev/shm"):
            try:
                for i in range(int(sys.argv[1])):
                    with open(f"{folder}/vit-edu-fill-{i}", "wb") as f:
                        f.write(b"x" * 2**22)
                    written += 4
            except OSError as e:
                why = errno.errorcode[e.errno]
        print(written, why)
    """
    assert lines(python(fill, "2")) == ["24 done"]  # 8 MB in each place
    written, why = lines(python(fill, "100"))[0].split()  # 1.2 GB asked, 64 MB allowed
    assert why == "ENOSPC" and 32 <= int(written) <= SMALL.disk_mb
    assert not list(Path("/tmp").glob("vit-edu-fill-*")) and not list(Path("/dev/shm").glob("vit-edu-fill-*"))


@pytest.mark.parametrize("how", ["fork", "thread"])
def test_processes_are_bounded(how):
    spawn = """
        import errno, os, sys, threading, time
        started, why = 0, "done"
        try:
            for _ in range(int(sys.argv[1])):
                if sys.argv[2] == "thread":
                    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                elif os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                started += 1
        except OSError as e:
            why = errno.errorcode[e.errno]
        except RuntimeError as e:  # threading: "can't start new thread"
            why = "EAGAIN"
        print(started, why)
    """
    assert lines(python(spawn, "8", how)) == ["8 done"]
    bomb = python(spawn, "300", how)
    if bomb.killed:
        assert bomb.killed == "processes"
    else:
        started, why = lines(bomb)[0].split()
        assert why == "EAGAIN" and 8 <= int(started) < SMALL.processes
    assert_left_nothing(bomb)


def test_an_endless_loop_is_killed_at_its_time():
    result = python("while True: pass", limits=SandboxLimits(seconds=2))
    assert result.killed == "time" and result.returncode is None
    assert 2 <= result.seconds < 5
    assert_left_nothing(result)


def test_endless_output_is_cut():
    write = "import sys; sys.stdout.buffer.write(b'x' * int(sys.argv[1]))"
    assert python(write, str(3 * MB)).stdout == b"x" * 3 * MB
    result = python(write, str(100 * MB))
    assert result.killed == "output" and result.stdout == b"x" * SMALL.output_mb * MB


def test_no_network_and_no_package_source_unless_bound(tmp_path):
    if PACKAGE.is_relative_to(Path(sys.prefix).resolve()):
        pytest.skip("vit_edu is installed inside the virtual environment, which the sandbox sees")
    repository = PACKAGE.parent
    with socket.socket() as server:  # a service of the host, on its loopback
        server.bind(("127.0.0.1", 0))
        server.listen()
        probe = """
            import os, socket, sys, threading
            def connect(address):
                try:
                    socket.create_connection(address, timeout=3).close()
                    return "connected"
                except OSError as e:
                    return type(e).__name__
            with socket.socket() as own:  # the control: a private loopback works (a kernel and its client)
                own.bind(("127.0.0.1", 0))
                own.listen()
                print(connect(own.getsockname()))
            print(connect(("1.1.1.1", 53)))
            print(connect(("127.0.0.1", int(sys.argv[1]))))
            package, repository = sys.argv[2:4]
            print(os.path.exists(package), os.path.exists(os.path.join(repository, "pyproject.toml")))
        """
        args = (str(server.getsockname()[1]), str(PACKAGE), str(repository))
        out = lines(python(probe, *args))
        assert out[:3] == ["connected", "OSError", "ConnectionRefusedError"]
        assert out[3] == "False False"
        bound = lines(python(probe, *args, readonly=[(PACKAGE, PACKAGE)]))
        assert bound[3] == "True False"


def test_two_sandboxes_at_once_each_get_their_own_limits():
    results: dict[str, SandboxResult] = {}
    threads = [threading.Thread(target=lambda name=name, n=n: results.update({name: python(HOLD, "500", n, "memory")}))
               for name, n in (("honest", "1"), ("hog", "4"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lines(results["honest"]) == ["held"]
    assert results["hog"].killed == "memory"
    if os.geteuid() == 0:
        assert results["honest"].uid != results["hog"].uid
    for result in results.values():
        assert_left_nothing(result)


def test_plain_runs_leave_no_folder_behind():
    result = python("import os; print(os.getcwd()); open('out.txt', 'w').write('x')", sandboxed=False,
                    files={"in.txt": b"x"})
    (cwd,) = lines(result)
    assert cwd != HOME and not Path(cwd).exists()


def test_memory_accounting_names_what_bounds_memory_here():
    accounting = memory_accounting()
    assert accounting in ("cgroup v2", "cgroup v1 (kernel memory and TCP buffers charged)") or \
        accounting.startswith("polling monitor; "), accounting


# ---------------------------------------------------------------- what it sees


def world_readable_folder(parent: str = "/tmp") -> Path:
    """A new folder in ``parent`` that every user may read (pytest's tmp_path is 0700), removed by the caller."""
    folder = Path(tempfile.mkdtemp(prefix="vit-edu-sandbox-test-", dir=parent))
    folder.chmod(0o755)
    return folder


def test_only_an_allow_list_of_the_system_is_visible():
    out = lines(python("""
        import os
        for path in ("/usr/share", "/usr/local/src", "/usr/include", "/etc/shadow", "/etc/passwd", "/var", "/opt",
                     "/srv", "/root/.bashrc", "/home/grader/.."):
            print(path, sorted(os.listdir(path)) if os.path.isdir(path) else os.path.exists(path))
        print(*sorted(os.listdir("/etc")))
    """))
    hidden = dict(line.rsplit(" ", 1) for line in out[:-2])
    assert all(seen == "False" for seen in hidden.values()), hidden
    assert out[-2] == "/home/grader/.. ['grader']"
    assert set(out[-1].split()) <= {*sandbox.ETC}, out[-1]


def test_a_checkout_inside_an_allowed_folder_is_masked(monkeypatch):
    # As if the checkout lay in an allowed system folder (/usr/local/lib/...): its hidden _build/ must not show, its
    # virtual environment and the caller's bind of a stripped package inside it must.
    outer = world_readable_folder("/var/tmp")  # (not /tmp, which the sandbox's own tmpfs covers)
    try:
        checkout = outer / "course"
        for name, text in (("_build/answers.json", "secret"), (".venv/marker", "venv"), ("vit_edu/x.py", "real"),
                           ("pyproject.toml", "")):
            (checkout / name).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            (checkout / name).write_text(text)
            (checkout / name).chmod(0o644)
        (outer / "stripped").mkdir(mode=0o755)
        (outer / "stripped" / "x.py").write_text("stripped")
        (outer / "stripped" / "x.py").chmod(0o644)
        monkeypatch.setattr(sandbox, "SYSTEM", (*sandbox.SYSTEM, str(outer)))
        monkeypatch.setattr(sandbox, "_checkout", lambda: str(checkout))
        monkeypatch.setattr(sys, "prefix", str(checkout / ".venv"))  # (the real one is no longer bound: use sh)
        script = f"""
            cd {checkout}; ls -A; stat -c %a .
            cat .venv/marker; echo; cat vit_edu/x.py; echo; cat {outer}/stripped/x.py; echo
            cat _build/answers.json 2>/dev/null || echo unreadable
            touch new 2>/dev/null || echo read-only
        """
        result = run(["/bin/sh", "-c", textwrap.dedent(script)], readonly=[(outer / "stripped", checkout / "vit_edu")],
                     limits=SMALL)
        assert lines(result) == [".venv", "vit_edu", "755", "venv", "stripped", "stripped", "unreadable", "read-only"]
    finally:
        shutil.rmtree(outer)


def test_a_checkout_under_tmp_is_readable_by_the_sandboxed_uid():
    # /tmp is a tmpfs in the sandbox: bwrap would make /tmp/<clone> 0700 and the dedicated uid could import nothing.
    clone = world_readable_folder()
    try:
        package = clone / "deep" / "pkg"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("VALUE = 42\n")
        for path in (clone / "deep", package, package / "__init__.py"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        code = """
            import os, sys
            sys.path.insert(0, sys.argv[1])
            import pkg
            print(pkg.VALUE, oct(os.stat(sys.argv[2]).st_mode))
        """
        assert lines(python(code, str(package.parent), str(clone), readonly=[(package, package)])) == ["42 0o40755"]
    finally:
        shutil.rmtree(clone)


def test_hide_makes_a_package_and_a_file_look_empty(tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "answers.py").write_text("ANSWER = 42\n")
    probe_code = """
        import os, sys
        print(os.listdir(sys.argv[1]))
        try:
            from einops import rearrange
            print("imported")
        except ImportError:
            print("ImportError")
        print(repr(open(sys.argv[2]).read()))
    """
    args = (str(SITE / "einops"), f"{PACKAGE}/answers.py")
    seen = lines(python(probe_code, *args, readonly=[(copy, PACKAGE)]))
    assert seen[1:] == ["imported", "'ANSWER = 42\\n'"]
    hidden = lines(python(probe_code, *args, readonly=[(copy, PACKAGE)], hide=[SITE / "einops", copy / "answers.py"]))
    assert hidden == ["[]", "ImportError", "''"]


def test_probe_fails_closed(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o755)
    (secret / "answers.json").write_text("{}")
    (secret / "answers.json").chmod(0o644)
    checkout = PACKAGE.parent
    assert probe([secret, secret / "answers.json", checkout / "_build", checkout / "pyproject.toml"]) is None
    readable = probe([checkout / "_build", secret / "answers.json"], readonly=[(PACKAGE, PACKAGE), (secret, secret)])
    assert readable == f"readable inside the sandbox: {secret / 'answers.json'}"
    broken = probe([], readonly=())  # vit_edu is not bound: it cannot be imported
    assert broken is not None and "vit_edu" in broken
    if ROOT:  # the unprivileged mode: file modes decide
        fd, private = tempfile.mkstemp(dir="/tmp")  # 0600, root's
        os.write(fd, b"secret")
        os.close(fd)
        try:
            assert probe([Path(private)], sandboxed=False) is None
            os.chmod(private, 0o644)
            assert probe([Path(private)], sandboxed=False) == f"readable inside the sandbox: {private}"
        finally:
            os.unlink(private)


# ---------------------------------------------------------------- memory the kernel holds


@pytest.fixture(params=["kernel", "monitor"])
def accounting(request, monkeypatch) -> str:
    """What bounds memory: a cgroup, where this machine has one (else the monitor), or the monitor with cgroups off."""
    if request.param == "monitor":
        for cgroup in (sandbox._Cgroup1, sandbox._Cgroup2):
            monkeypatch.setattr(cgroup, "create", classmethod(lambda cls, limits, overhead: None))
    return memory_accounting()


SYSV = """
    import ctypes, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmat.restype = ctypes.c_void_p
    size = int(sys.argv[1]) * 2**20
    for name in ("shmmax", "shmall", "shmmni"):  # first, try to lift its namespace's limits (read-only: no effect)
        try:
            with open(f"/proc/sys/kernel/{name}", "w") as f:
                f.write(str(2**40))
        except OSError:
            pass
    shmid = libc.shmget(0, size, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if shmid < 0:
        print("refused", flush=True)
        sys.exit()
    for offset in range(0, size, 2**24):  # attach, touch 16 MB, detach: nothing stays mapped
        address = libc.shmat(shmid, None, 0)
        ctypes.memset(address + offset, 1, 2**24)
        libc.shmdt(ctypes.c_void_p(address))
    print("held", flush=True)
    time.sleep(2)
"""


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "plain"])
def test_sysv_shared_memory_is_refused(sandboxed, accounting):
    if not sandboxed and not ROOT:
        pytest.skip("sandboxed=False under a grader that is not root is for trusted work")
    result = python(SYSV, "2048", limits=GIB, sandboxed=sandboxed)
    assert lines(result) == ["refused"]  # its IPC namespace has no SysV shared memory at all


@pytest.mark.skipif(not ROOT, reason="the dedicated uid's SysV segments are counted under a root grader only")
def test_without_an_ipc_namespace_sysv_shared_memory_is_counted_and_removed(accounting, monkeypatch):
    # A container that refuses unshare: the segments live in the host's IPC namespace, charged to the cgroup or
    # counted by uid by the monitor, and removed after.
    monkeypatch.setattr(sandbox, "_own_ipc_works", lambda: False)
    honest = python(SYSV, "256", limits=GIB, sandboxed=False)
    assert lines(honest) == ["held"]
    hog = python(SYSV, "2048", limits=GIB, sandboxed=False)
    assert hog.killed == "memory" and hog.stdout == b""
    segments = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    assert not [row for row in segments if str(hog.uid) in row.split()[7:10]]


SOCKETS = """
    import errno, os, socket, sys, time
    processes, pairs, size, kind = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    for _ in range(processes - 1):
        if os.fork() == 0:
            break
    held, queued, why = [], 0, "done"
    try:
        for _ in range(pairs):
            if kind == "unix":
                a, b = socket.socketpair()
            else:
                with socket.socket() as server:  # its private loopback
                    server.bind(("127.0.0.1", 0))
                    server.listen()
                    a, b = socket.create_connection(server.getsockname()), server.accept()[0]
            held.append((a, b))
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
            b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
            a.setblocking(False)
            try:
                while True:  # nobody reads: it stays in the kernel's buffers
                    queued += a.send(b"x" * 65536)
            except BlockingIOError:
                pass
    except OSError as e:
        why = errno.errorcode.get(e.errno, str(e))
    print(len(held), queued // 2**20, why, flush=True)
    time.sleep(2)
"""


def queued_mb(result: SandboxResult) -> int:
    """The megabytes its processes left unread in socket buffers, by their own count."""
    return sum(int(line.split()[1]) for line in lines(result))


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_socket_buffers_of_one_process_stay_bounded(kind, accounting):
    result = python(SOCKETS, "1", "2000", "200000", kind, limits=GIB)  # 2,000 pairs x 200 KB unread: 400 MB
    if result.killed:
        assert result.killed == "memory"
    else:
        pairs, queued, why = lines(result)[0].split()
        assert why == "EMFILE" and int(pairs) < sandbox.NOFILE // 2 and int(queued) < 100


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_socket_buffers_of_many_processes_cannot_exceed_the_limit(kind, accounting):
    # 8 processes x 120 sockets with 4 MB buffers: several GB of unread data if nothing counted it.
    if accounting.startswith("polling") and not ROOT:
        pytest.skip("without a cgroup, a grader that is not root bounds socket buffers per process only (NOFILE)")
    result = python(SOCKETS, "8", "120", "4000000", kind, limits=GIB)
    assert result.killed == "memory" or queued_mb(result) < GIB.memory_mb, (result.killed, result.stdout)
    if accounting.startswith("cgroup"):  # the kernel's own count: never past the limit
        assert result.peak_mb <= GIB.memory_mb
    if accounting.startswith("cgroup") and kind == "unix":  # AF_UNIX buffers are kernel memory, charged as such
        assert result.killed == "memory" and result.peak_mb > GIB.memory_mb / 2


# ---------------------------------------------------------------- without bwrap, under a root grader


@pytest.mark.skipif(not ROOT, reason="the unprivileged mode without bwrap is a root grader's")
def test_without_bwrap_a_root_grader_runs_it_as_a_dedicated_uid_in_a_private_folder():
    fd, private = tempfile.mkstemp(dir="/tmp")  # 0600, root's, in a folder every user can cross
    os.write(fd, b"secret")
    os.close(fd)
    try:
        result = python("""
            import os, stat, sys
            print(os.getuid(), os.getgid(), os.getgroups())
            for folder in (".", ".."):
                st = os.stat(folder)
                print(oct(stat.S_IMODE(st.st_mode)), st.st_uid)
            print(open("data/question.txt").read())
            try:
                open(sys.argv[1]).read()
                print("read the root file")
            except PermissionError:
                print("denied")
            status = dict(line.split(":\t") for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
            print(*(int(status[caps], 16) for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")),
                  status["NoNewPrivs"])
            with open(f"/tmp/vit-edu-leftover-{os.getpid()}", "w") as f:
                f.write("x")
            print(os.getcwd())
        """, private, sandboxed=False, files={"data/question.txt": b"from a file"})
    finally:
        os.unlink(private)
    uid = result.uid
    out = lines(result)
    assert uid is not None and uid != 0
    assert out[:6] == [f"{uid} {uid} []", f"0o700 {uid}", "0o711 0", "from a file", "denied", "0 0 0 0 0 1"]
    assert not Path(out[6]).exists() and not Path(out[6]).parent.exists()
    assert not [p for p in Path("/tmp").glob("vit-edu-leftover-*") if p.lstat().st_uid == uid]
    assert_left_nothing(result)
