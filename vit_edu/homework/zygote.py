"""One sandbox per submission, a clean process per question: the grader's zygote, run inside bubblewrap.

Starting Python with torch costs 2-3 s, most of a question's time. The zygote imports torch once (never
``vit_edu``), then, for each question, forks a child that makes the question's own world before running any of its
code: new mount, network, UTS and PID namespaces; the question's stripped package bound read-only over ``vit_edu``
and the store of the other questions' packages masked; then every capability dropped, the sandbox's unprivileged
uid, ``no_new_privs``; and only then the harness (:mod:`vit_edu.homework.harness`) on the question's request. The
question's processes live in its PID namespace: when its first process ends or its time is up, the kernel kills
them all; then the zygote empties the home, ``/tmp`` and ``/dev/shm`` (sparing the mounts under them), so nothing
a question wrote reaches the next. The zygote forwards each child's bytes unread, framed by a header line; the
grader judges.

The sandbox's SysV IPC is off for everyone (:mod:`vit_edu.homework.sandbox`), so the questions share nothing there.
This file is run as ``python -c`` with its own source and imports nothing of ``vit_edu`` itself: the children import
the package only once their own copy is in place.
"""

import ctypes
import json
import os
import selectors
import shutil
import signal
import sys
import time

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x04000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
STDERR_TAIL = 8192
libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None) -> None:  # noqa: ANN001
    _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), ctypes.c_ulong(flags),
                      data and data.encode()), f"mount {target}")


def _drop_privileges(uid: int, gid: int) -> None:
    """The bounding set emptied, the sandbox's uid (no groups), no capability left, no new privileges."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    if os.getuid() == 0:
        os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: nothing, for both words
    _check(libc.capset(header, data), "capset")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _world(job: dict, setup: dict) -> None:
    """The question's own namespaces and mounts (as the zygote's privileged child)."""
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWPID), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount(job["package"], setup["package"], None, MS_BIND | MS_REC)  # read-only as its source is
    if not os.statvfs(setup["package"]).f_flag & os.ST_RDONLY:
        _mount(None, setup["package"], None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_REC)
    _mount("tmpfs", setup["store"], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0755")


def _mount_points() -> list[str]:
    """Every mount point this process sees (``/proc/self/mountinfo``'s fifth field, its octal escapes undone)."""
    with open("/proc/self/mountinfo", "rb") as f:
        return [line.split()[4].decode("unicode_escape") for line in f]


def _wipe(folder: str, keep: list[str]) -> None:
    """Empty ``folder`` of what a question wrote, sparing mount points (a checkout under /tmp) and the folders above
    them."""
    with os.scandir(folder) as entries:
        for entry in entries:
            inside = [m for m in keep if m == entry.path or m.startswith(entry.path + "/")]
            try:
                if inside and entry.is_dir(follow_symlinks=False):
                    if entry.path not in inside:
                        _wipe(entry.path, inside)
                elif entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, onerror=_unlock)
                elif not inside:
                    os.unlink(entry.path)
            except OSError:
                pass


def _unlock(function, path, error) -> None:  # noqa: ANN001
    """rmtree's error handler: a folder its owner made unreadable is opened up, then removed."""
    os.chmod(os.path.dirname(path), 0o700)
    if os.path.isdir(path):
        os.chmod(path, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)


def _question(job: dict, setup: dict, fds: tuple[int, int, int]) -> None:
    """The first process of the question's PID namespace: drop everything, then the harness. Never returns."""
    try:
        # /proc of its own PID namespace where the kernel allows (as root; a user namespace may refuse)
        try:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
        except OSError:
            pass
        _drop_privileges(setup["uid"], setup["gid"])
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after the uid change, which clears it
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        os.chdir(setup["home"])
        import importlib

        importlib.invalidate_caches()
        sys.path[:] = [p for p in sys.path if p]  # no working folder on the path
        from vit_edu.homework import harness

        harness.main()  # ends the process
    except BaseException as e:  # noqa: BLE001 — a child must never return into the zygote's loop
        os.write(2, f"the question's process could not start: {type(e).__name__}: {e}\n".encode())
    os._exit(70)


def _child(job: dict, setup: dict, fds: tuple[int, int, int], report: int) -> None:
    """The zygote's child: the question's namespaces, then its first process; reports that process's pid, waits for
    it and exits with its status. Never returns."""
    code = 70
    try:
        _world(job, setup)
        pid = os.fork()
        if pid == 0:
            _question(job, setup, fds)
        os.write(report, f"{pid}\n".encode())
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except BaseException as e:  # noqa: BLE001
        os.write(fds[2], f"the question's sandbox could not be made: {type(e).__name__}: {e}\n".encode())
    os._exit(code if code >= 0 else 128 - code)


def _serve(job: dict, setup: dict) -> tuple[dict, bytes]:
    """Run one question in a fresh child; its header (exit status, why it was stopped, stderr's tail) and stdout."""
    request_r, request_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (request_w, out_r, err_r, report_r):
            os.close(fd)
        _child(job, setup, (request_r, out_w, err_w), report_w)
    for fd in (request_r, out_w, err_w, report_w):
        os.close(fd)
    deadline = time.monotonic() + job["seconds"]
    pending = memoryview(json.dumps(job["request"]).encode())
    os.set_blocking(request_w, False)
    out, err, killed, first = bytearray(), bytearray(), "", None
    with selectors.DefaultSelector() as sel:
        sel.register(request_w, selectors.EVENT_WRITE, "in")
        sel.register(out_r, selectors.EVENT_READ, out)
        sel.register(err_r, selectors.EVENT_READ, err)
        sel.register(report_r, selectors.EVENT_READ, "pid")
        readers = 3
        while readers:
            left = deadline - time.monotonic()
            if left <= 0:
                killed = "time"
                break
            for key, _ in sel.select(min(left, 0.5)):
                if key.data == "in":
                    try:
                        pending = pending[os.write(request_w, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(request_w)
                        os.close(request_w)
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    readers -= 1
                elif key.data == "pid":
                    first = int(chunk.split()[0])
                else:
                    key.data.extend(chunk)
                    del err[:-STDERR_TAIL]
                    if len(out) > job["output_bytes"]:
                        killed = "output"
                        readers = 0
                        break
    for fd in (out_r, err_r, report_r):
        os.close(fd)
    if pending:
        os.close(request_w)
    for victim in (first, pid):  # the question's first process: its PID namespace dies with it
        if victim:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
    _, status = os.waitpid(pid, 0)
    code = None if killed else os.waitstatus_to_exitcode(status)
    return {"returncode": code, "killed": killed, "stderr": err.decode(errors="replace"), "bytes": len(out)}, bytes(out)


def main() -> None:
    """Read the jobs (JSON on stdin), import torch once, serve each job in turn; frames on stdout."""
    setup = json.loads(sys.stdin.buffer.read())
    setup["uid"], setup["gid"] = int(os.environ["VIT_EDU_SANDBOX_UID"]), int(os.environ["VIT_EDU_SANDBOX_GID"])
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no question's process may trace or read the zygote
    import IPython.core.interactiveshell  # noqa: F401 — what every question imports, imported once
    import torch  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401

    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    for job in setup.pop("jobs"):
        header, data = _serve(job, setup)
        out.write(json.dumps(header).encode() + b"\n" + data)
        out.flush()
        keep = _mount_points()
        for folder in setup["scratch"]:  # its processes are gone: nothing it wrote reaches the next question
            _wipe(folder, keep)


if __name__ == "__main__":
    main()
