"""The homework sandbox confines untrusted code, also under a root grader.

Each attack of a student graded by a root grader is replayed here (remounting a read-only folder, an immutable file,
memory spread over processes or kept in /dev/shm and memfd files, disk, a fork bomb, an endless loop, endless
output, the network, the package source), each next to its honest twin, which must work. Without bwrap the module
is skipped, except under CI, where the first test fails with the reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import vit_edu
from vit_edu.homework.sandbox import HOME, SandboxLimits, SandboxResult, run, sandbox_problem

PROBLEM = sandbox_problem()
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"no sandbox here: {PROBLEM}", allow_module_level=True)

MB = 1024**2
PACKAGE = Path(vit_edu.__file__).resolve().parent
SMALL = SandboxLimits(seconds=60, memory_mb=1500, processes=32, disk_mb=64, output_mb=4)


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
