"""The program a sandbox runs its calls through, executed INSIDE it as `python3 -I -S -c <this file's text> ...`.
Standard library only: it runs on the image's python3 (docker) or the host's /usr/bin/python3 (bwrap), 3.8+.

    call LIMIT TIMEOUT SCOPE -- ARGV...   run one command (docker exec, local) and report on stdout (run_call)
    init LIFETIME [FD SCOPE]              the sandbox's PID 1: reap orphans, end every other process on SIGUSR1,
                                          exit after LIFETIME s; with FD (bwrap) also run the calls the host sends
                                          over that unix socket, and exit when the host closes it (serve)

A call reports at most LIMIT bytes of the command's stdout and stderr, then one trailer
`\\x1erunbook-NONCE EXIT CUT TIMEDOUT`. NONCE is a per-call secret that reaches the wrapper outside argv (env
RUNBOOK_NONCE, or the host's request), so the command cannot forge the trailer.

Why Python and not bash: the wrapper makes itself non-dumpable (PR_SET_DUMPABLE 0). The command runs as the same
uid, and a dumpable wrapper lets it open /proc/<wrapper>/fd/1 (writing past the cap straight to the host) and read
the nonce from /proc/<wrapper>/environ or its memory.

SCOPE is what "every process the call started" means when the call ends or times out:
    all:<ns>  kill(-1): every process the sandbox user may signal in this PID namespace but PID 1 and the wrapper,
              so setsid and double-forked children die too. Refused when the wrapper's PID namespace is <ns>, the
              host's: there kill(-1) would reach the user's own processes.
    group     the command's process group (the local backend, which isolates nothing anyway).
"""

import os
import select
import signal
import sys
import time

# json, socket and struct serve only bwrap's init, errno only a failed exec: imported where used, because every
# docker call starts this program afresh and each import costs milliseconds

NONCE_ENV = "RUNBOOK_NONCE"
STDIN_ENV = "RUNBOOK_STDIN_"
COUNT_CAP = 100_000_000
"""Bytes counted past LIMIT; a command writing more is stopped (its output cannot all be shown anyway)."""
DRAIN_S = 1.0
"""Seconds to read what is left in the pipe after the call's processes were killed."""
CHUNK = 65536
TIMEOUT_EXIT = 137
"""Exit code of a call its timeout ended (128 + SIGKILL, as `timeout -s KILL` gives)."""


def no_dump() -> None:
    """Make this process non-dumpable: its /proc files become root's, so the (same-uid) command cannot open its
    fds, read its environment or memory, or ptrace it. Inherited by fork, reset by the command's exec."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def exit_code(status: int) -> int:
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def spawn(argv: list, env: dict, in_fd: int, out_fd: int) -> int:
    """Fork and exec `argv` in a new session, stdin from in_fd, stdout and stderr to out_fd, no other fd."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; an exec'd program must not
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.closerange(3, 65536)
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        import errno

        os.write(2, ("%s: %s\n" % (argv[0], exc.strerror)).encode())
        os._exit(127 if exc.errno == errno.ENOENT else 126)
    finally:
        os._exit(126)


def end_processes(scope: str, pid: int) -> None:
    """Kill every process the call started (see SCOPE in the module docstring)."""
    try:
        if scope == "group":
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(-1, signal.SIGKILL)  # the kernel skips PID 1 and the caller
    except ProcessLookupError:
        pass


def wait_until_alone(seconds: float = 2.0) -> None:
    """After kill(-1): wait until PID 1 has reaped every killed process, so the next call's fork does not find the
    process limit still full of zombies. /proc shows this PID namespace only."""
    me = str(os.getpid())
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if me == "1":
            reap()
        if all(name in ("1", me) for name in os.listdir("/proc") if name.isdigit()):
            return
        time.sleep(0.005)


def remove_ipc() -> None:
    """Remove the System V shared memory, semaphores and message queues left in the sandbox's IPC namespace (its
    own: docker ipc_mode private, bwrap --unshare-ipc). They belong to the namespace, not to a process, so they
    outlive the call that made them: 2 x 200 MB of shared memory once left every later call of the sandbox
    OOM-killed. Only the sandbox user creates them there, so it may remove them all."""
    found = []
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + kind) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        found += [(kind, int(row.split()[1])) for row in rows if row.strip()]
    if not found:
        return  # the usual case: no ctypes import (each docker call starts this program afresh)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ipc_rmid = 0
    for kind, ident in found:
        if kind == "sem":
            libc.semctl(ident, 0, ipc_rmid)
        else:
            getattr(libc, kind + "ctl")(ident, ipc_rmid, None)


def check_scope(scope: str) -> None:
    if scope == "group":
        return
    if not scope.startswith("all:") or os.readlink("/proc/self/ns/pid") == scope[4:]:
        raise SystemExit("runbook wrapper: refusing scope %r: not in a PID namespace of its own" % scope)


def run_call(
    argv: list, env: dict, *, in_fd: int, out_fd: int, limit: int, timeout: float, nonce: str, scope: str
) -> None:
    """Run argv until it exits, its timeout passes, or it writes COUNT_CAP bytes; then end every process it
    started, forward what is left of its output, and write the trailer."""
    check_scope(scope)
    deadline = time.monotonic() + timeout
    read_fd, write_fd = os.pipe()
    pid = spawn(argv, env, in_fd, write_fd)
    os.close(write_fd)
    output = Output(out_fd, limit)
    status, timed_out, pipe_open = watch(pid, read_fd, deadline, output)
    end_processes(scope, pid)
    if status is None:
        status = os.waitpid(pid, 0)[1]
    if scope != "group":
        wait_until_alone()
        remove_ipc()
    if pipe_open:
        drain(read_fd, output)
    os.close(read_fd)
    code = TIMEOUT_EXIT if timed_out else exit_code(status)
    write_all(out_fd, b"\x1erunbook-%s %d %d %d" % (nonce.encode(), code, output.cut, timed_out))


class Output:
    """A call's output: forwarded to `out_fd` up to `limit` bytes, the rest counted as cut."""

    def __init__(self, out_fd: int, limit: int) -> None:
        self.out_fd, self.limit = out_fd, limit
        self.shown = self.cut = 0

    def take(self, data: bytes) -> None:
        room = self.limit - self.shown
        if room > 0:
            write_all(self.out_fd, data[:room])
            self.shown += min(room, len(data))
        self.cut += max(0, len(data) - max(room, 0))


def watch(pid: int, read_fd: int, deadline: float, output: Output) -> tuple:
    """Forward the call's output until it exits, the deadline passes or it wrote COUNT_CAP bytes: (its wait
    status or None, whether it timed out, whether its pipe is still open)."""
    status = None
    timed_out = False
    poller = select.poll()
    poller.register(read_fd, select.POLLIN)
    try:
        exited = os.pidfd_open(pid)  # readable when the command exits, even while a child holds the pipe
        poller.register(exited, select.POLLIN)
    except (AttributeError, OSError):  # Python < 3.9 or Linux < 5.3: look every 50 ms
        exited = None
    pipe_open = True
    while status is None and output.cut < COUNT_CAP:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        wait = left if exited is not None else min(left, 0.05)
        for fd, _ in poller.poll(max(1, int(wait * 1000) + 1)):
            if fd == read_fd:
                data = os.read(read_fd, CHUNK)
                if data:
                    output.take(data)
                else:
                    poller.unregister(read_fd)
                    pipe_open = False
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
    return status, timed_out, pipe_open


def drain(read_fd: int, output: Output) -> None:
    """What is left in the pipe once the call's processes are gone, for at most DRAIN_S."""
    drain_until = time.monotonic() + DRAIN_S
    while output.cut < COUNT_CAP and time.monotonic() < drain_until:
        if select.select([read_fd], [], [], max(0.0, drain_until - time.monotonic()))[0]:
            data = os.read(read_fd, CHUNK)
            if not data:
                break
            output.take(data)


def stdin_from_env(env: dict) -> int:
    """An fd reading the stdin the host split into RUNBOOK_STDIN_nnn variables (removed from env), else the
    wrapper's own stdin (the local backend's memory file; /dev/null under docker exec)."""
    keys = sorted(key for key in env if key.startswith(STDIN_ENV))
    if not keys:
        return 0
    data = b"".join(os.fsencode(env.pop(key)) for key in keys)
    fd = os.memfd_create("stdin") if hasattr(os, "memfd_create") else _unlinked_file()
    write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _unlinked_file() -> int:
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())


def call_main(args: list) -> None:
    no_dump()
    limit, timeout, scope, dashes, argv = int(args[0]), float(args[1]), args[2], args[3], args[4:]
    if dashes != "--" or not argv:
        raise SystemExit("usage: call LIMIT TIMEOUT SCOPE -- ARGV...")
    env = dict(os.environ)
    nonce = env.pop(NONCE_ENV, "")
    run_call(argv, env, in_fd=stdin_from_env(env), out_fd=1, limit=limit, timeout=timeout, nonce=nonce, scope=scope)


# -- PID 1 ------------------------------------------------------------------------------------------------------------
def reap(*_: object) -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def kill_all_but_me(*_: object) -> None:
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass


def send_message(sock, obj: dict) -> None:
    import json
    import struct

    body = json.dumps(obj).encode()
    sock.sendall(struct.pack("<I", len(body)) + body)


def recv_message(sock, max_bytes: int = 16 << 20) -> tuple:
    """(request, fds) from the host: a length-prefixed JSON body, fds attached to its first bytes; (None, []) at
    EOF."""
    import json
    import socket
    import struct

    fds = []
    head, ancillary, _, _ = sock.recvmsg(4, socket.CMSG_SPACE(8 * 4))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack("%di" % (len(data) // 4), data[: len(data) - len(data) % 4]))
    while head and len(head) < 4:
        more = sock.recv(4 - len(head))
        if not more:
            break
        head += more
    if len(head) < 4:
        for fd in fds:
            os.close(fd)
        return None, []
    size = struct.unpack("<I", head)[0]
    if size > max_bytes:
        raise ValueError("request of %d bytes" % size)
    body = b""
    while len(body) < size:
        more = sock.recv(min(CHUNK, size - len(body)))
        if not more:
            break
        body += more
    return json.loads(body), fds


def start_call(request: dict, fds: list, sock) -> dict:
    """Fork the wrapper for one call; the server answers at once and the host reads the call's own pipe."""
    import resource

    out_fd, in_fd = fds
    pid = os.fork()
    if pid:
        return {"ok": True, "pid": pid}
    try:
        for sig in (signal.SIGCHLD, signal.SIGUSR1):  # the server's handlers would steal the command's exit status
            signal.signal(sig, signal.SIG_DFL)
        sock.close()
        for name, value in request.get("rlimits", {}).items():
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
        run_call(
            request["argv"],
            dict(os.environ),
            in_fd=in_fd,
            out_fd=out_fd,
            limit=request["limit"],
            timeout=request["timeout"],
            nonce=request["nonce"],
            scope=request["scope"],
        )
    except BaseException as exc:  # say why on the call's own output: the host shows it as the call's output
        try:
            os.write(out_fd, ("runbook wrapper: %s: %s\n" % (type(exc).__name__, exc)).encode())
        except OSError:
            pass
        os._exit(1)
    os._exit(0)


def serve(sock, deadline: float) -> None:
    send_message(sock, {"ready": True, "pid": os.getpid()})
    while time.monotonic() < deadline:
        if not select.select([sock], [], [], 1.0)[0]:
            continue
        request, fds = recv_message(sock)
        if request is None:
            return  # the host closed the socket: the sandbox ends (PID 1 exiting kills the namespace)
        try:
            if request.get("op") == "run" and len(fds) == 2:
                reply = start_call(request, fds, sock)
            elif request.get("op") == "kill":
                kill_all_but_me()
                wait_until_alone()
                reply = {"ok": True}
            else:
                reply = {"ok": False, "error": "unknown request %r with %d fds" % (request.get("op"), len(fds))}
        except OSError as exc:  # fork refused (the process limit): the host reports it as the call's error
            reply = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        for fd in fds:
            os.close(fd)
        send_message(sock, reply)


def init_main(args: list) -> None:
    no_dump()
    deadline = time.monotonic() + float(args[0])
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGUSR1, kill_all_but_me)
    if len(args) > 1:
        import socket

        sock = socket.socket(fileno=int(args[1]))
        sock.set_inheritable(False)
        serve(sock, deadline)
        return
    while time.monotonic() < deadline:
        time.sleep(min(60.0, max(0.0, deadline - time.monotonic())))


def main(argv: list) -> None:
    if len(argv) > 1 and argv[1] == "call":
        call_main(argv[2:])
    elif len(argv) > 1 and argv[1] == "init":
        init_main(argv[2:])
    else:
        raise SystemExit("usage: call LIMIT TIMEOUT SCOPE -- ARGV... | init LIFETIME [FD]")


if __name__ == "__main__":
    main(sys.argv)
