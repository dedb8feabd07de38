"""Isolation probes: small attacks run inside a started sandbox, each checking one limit it claims (no network, store
read-only, a timeout that ends every process, output capped on the host, ...). `runbook sandbox check` runs them; the
tests check the same promises in depth.

A sandbox's `enforcement()` says, per limit key, whether it claims the limit (and how) or why not. A probe runs only
for a claimed limit: the local backend, which isolates nothing, must never be sent `kill -STOP -1`.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from .base import ExecResult, Sandbox, SandboxLimits

ENFORCED, NOT_ENFORCED, FAILED = "enforced", "NOT ENFORCED", "FAILED"


@dataclass(frozen=True)
class LimitResult:
    """One limit of one sandbox: enforced (its probe held), NOT ENFORCED (the backend says why), or FAILED."""

    key: str
    name: str
    status: str
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Probe:
    key: str
    """The enforcement() key of the limit this probe checks."""
    name: str
    check: Callable[[Sandbox], tuple[bool, str]]
    """(held, what was seen)."""


@contextmanager
def host_server(address: str = "127.0.0.1") -> Iterator[int]:
    """A TCP server on the host that greets whoever connects with HOST-SECRET; yields its port."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"HOST-SECRET\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(1)
        server.close()


def connect_script(host: str, port: int) -> str:
    """Python that prints what a TCP peer sends, or the error; exit 0 only if it connected."""
    return (
        f"import socket,sys\ntry:\n s=socket.create_connection(({host!r},{port}),timeout=3)\n"
        f" print('CONNECTED', s.recv(64)); sys.exit(0)\nexcept OSError as e:\n print('FAILED', e); sys.exit(1)\n"
    )


DNS_SCRIPT = (
    "import socket,sys\ntry:\n print('RESOLVED', socket.getaddrinfo('deb.debian.org', 80)[0][4]); "
    "sys.exit(0)\nexcept OSError as e:\n print('FAILED', e); sys.exit(1)\n"
)
SURVIVORS = (
    "import os\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try: c = open(f'/proc/{p}/cmdline','rb')"
    ".read()\n  except OSError: continue\n  if b'sleep' in c: print('SURVIVOR', p, c)\n"
)
"""Python naming every process still running `sleep` in the sandbox."""
FLOOD = """
import os
own = os.readlink('/proc/self/fd/1')
chain, pid = [], os.getppid()
while pid > 0:                      # the wrapper and every other ancestor whose stdout we can open
    chain.append(pid)
    with open(f'/proc/{pid}/stat') as f:
        pid = int(f.read().rsplit(')', 1)[1].split()[1])
opened = []
for pid in chain:
    try:
        if os.readlink(f'/proc/{pid}/fd/1') != own:
            opened.append((pid, os.open(f'/proc/{pid}/fd/1', os.O_WRONLY)))
    except OSError as exc:
        print('refused', pid, exc.strerror, flush=True)
print('opened', [p for p, _ in opened], flush=True)
chunk = b'z' * 2**20
for pid, fd in opened[:1]:
    for _ in range(300):
        os.write(fd, chunk)
"""
"""Python writing 300 MB to the stdout of the first ancestor (the wrapper) it can open, past the output cap."""
UNSHARE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, flags in [('user', 0x10000000), ('mount', 0x00020000), ('user+mount', 0x10020000)]:
    rc = libc.unshare(flags)
    print(name, 'ALLOWED' if rc == 0 else 'refused', os.strerror(ctypes.get_errno()) if rc else '')
rc = libc.mount(b'none', b'/scratch', b'tmpfs', 0, None)
print('mount', 'ALLOWED' if rc == 0 else 'refused')
"""


def _seen(result: ExecResult) -> str:
    return f"exit {result.exit_code}{' (timed out)' if result.timed_out else ''}: " + " ".join(result.output.split())


def _fails(result: ExecResult) -> bool:
    return result.exit_code != 0 or result.timed_out


def command(
    cmd: list[str] | str, held: Callable[[ExecResult], bool], *, timeout: float = 10, stdin: str | None = None
) -> Callable[[Sandbox], tuple[bool, str]]:
    """A check that runs one command and judges its result."""

    def check(box: Sandbox) -> tuple[bool, str]:
        result = box.exec(cmd, timeout=timeout, stdin=stdin)
        return held(result), _seen(result)

    return check


def no_loopback(box: Sandbox) -> tuple[bool, str]:
    with host_server() as port:
        result = box.exec(["python3", "-"], timeout=10, stdin=connect_script("127.0.0.1", port))
    return _fails(result) and "HOST-SECRET" not in result.output, _seen(result)


def host_files_invisible(box: Sandbox) -> tuple[bool, str]:
    fd, host_file = tempfile.mkstemp(prefix="runbook-probe-")
    os.write(fd, b"HOST-FILE\n")
    os.close(fd)
    try:
        result = box.exec(["cat", host_file], timeout=10)
    finally:
        os.unlink(host_file)
    return _fails(result) and "HOST-FILE" not in result.output, _seen(result)


def _no_survivors(box: Sandbox) -> tuple[bool, str]:
    result = box.exec(["python3", "-"], timeout=10, stdin=SURVIVORS)
    return result.exit_code == 0 and "SURVIVOR" not in result.output, _seen(result)


def timeout_ends_everything(box: Sandbox) -> tuple[bool, str]:
    result = box.exec("setsid -f sleep 30; echo started; sleep 30", timeout=1)
    left, seen = _no_survivors(box)
    return result.timed_out and result.seconds < 4 and left, f"{_seen(result)} in {result.seconds:.1f} s; {seen}"


def return_ends_everything(box: Sandbox) -> tuple[bool, str]:
    result = box.exec("setsid -f sleep 30; setsid sleep 30 & echo started", timeout=10)
    left, seen = _no_survivors(box)
    return result.ok and result.seconds < 3 and left, f"{_seen(result)} in {result.seconds:.1f} s; {seen}"


def stopped_wrapper_ends(box: Sandbox) -> tuple[bool, str]:
    result = box.exec("sleep 0.3; kill -STOP -1; sleep 30", timeout=1)
    after = box.exec(["echo", "alive"], timeout=10)
    return (
        result.timed_out and result.seconds < 6 and after.output == "alive\n",
        f"{_seen(result)} in {result.seconds:.1f} s; next call: {_seen(after)}",
    )


def _peak_rss_growth_mb(run: Callable[[], object]) -> float:
    """How far this process's peak RSS rose above its current RSS while `run` ran (Linux)."""

    def field(name: str) -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(name + ":"))

    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # reset the peak (VmHWM) to the current RSS
    except OSError:
        pass
    before = field("VmRSS")
    run()
    return (field("VmHWM") - before) / 1024


def output_bounded_on_host(box: Sandbox) -> tuple[bool, str]:
    results: list[ExecResult] = []
    growth = _peak_rss_growth_mb(
        lambda: results.extend(
            [
                box.exec(["python3", "-"], timeout=60, stdin=FLOOD),
                box.exec(
                    ["python3", "-c", "import sys\nfor _ in range(300): sys.stdout.buffer.write(b'y' * 2**20)"],
                    timeout=60,
                ),
            ]
        )
    )
    past, own = results
    return (
        growth < 100 and len(own.output) < box.limits.output_bytes + 500,
        f"300 MB past the wrapper ({' '.join(past.output.split())[:80]}) and 300 MB to stdout: this "
        f"process grew {growth:.0f} MB",
    )


def trailer_unforgeable(box: Sandbox) -> tuple[bool, str]:
    forged = "printf 'hi\\036runbook-cut 0\\036runbook-exit 0\\036runbook-0123456789abcdef 0 0 0'"
    plain = box.exec(f"{forged}; exit 3", timeout=10)
    killed = box.exec(f"{forged}; sleep 0.3; kill -KILL $PPID", timeout=10)  # $PPID: the wrapper
    return (
        plain.exit_code == 3 and not plain.truncated and killed.exit_code != 0,
        f"forged then exit 3: exit {plain.exit_code}; forged then wrapper killed: exit {killed.exit_code}",
    )


def no_container_log(box: Sandbox) -> tuple[bool, str]:
    box.exec("head -c 2000000 /dev/zero > /proc/1/fd/1", timeout=10)
    container = box.container  # type: ignore[attr-defined]
    container.reload()
    kind = container.attrs["HostConfig"]["LogConfig"]["Type"]
    path = container.attrs.get("LogPath") or ""
    size = os.path.getsize(path) if path and os.path.exists(path) else 0
    return kind == "none" and size == 0, f"log driver {kind}, log file {path or '-'} ({size} bytes)"


def scratch_capped(box: Sandbox) -> tuple[bool, str]:
    mb = box.limits.scratch_mb
    half = (mb // 2 + 4) * 10**6
    first = box.exec(f"head -c {half} /dev/zero > probe-a && echo WROTE; echo ok > note && cat note", timeout=30)
    second = box.exec(
        f"head -c {half} /dev/zero > probe-b && echo WROTE; du -sk /scratch; rm -f probe-a probe-b", timeout=30
    )
    used = int(second.output.split()[-2]) if "/scratch" in second.output else -1
    return (
        "ok" in first.output and "WROTE" not in second.output and 0 <= used <= mb * 1024 + 64,
        f"two calls writing {half / 1e6:.0f} MB each: {' '.join(second.output.split())[:80]}",
    )


def _in_parallel(script: str, copies: int) -> str:
    """Python that runs `copies` processes of `script` at once and prints what they printed."""
    return (
        f"import subprocess, sys\nprocs = [subprocess.Popen([sys.executable, '-c', {script!r}]) "
        f"for _ in range({copies})]\nfor p in procs: p.wait()\n"
    )


def memory_total(box: Sandbox) -> tuple[bool, str]:
    each = box.limits.memory_mb * 2 // 5
    hold = f"import time; b = bytearray({each} * 2**20); time.sleep(3); print('HELD', flush=True)"
    result = box.exec(["python3", "-"], timeout=60, stdin=_in_parallel(hold, 5))
    held = sum(line == "HELD" for line in result.output.splitlines())
    return held <= 2, f"5 processes of {each} MB each: {held} held their memory"


def pids_total(box: Sandbox) -> tuple[bool, str]:
    each = box.limits.pids // 2
    fork = (
        f"import os, time\nn = 0\ntry:\n    for i in range({each}):\n        if os.fork() == 0:\n"
        f"            time.sleep(3); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\n"
        f"print('FORKED', n, flush=True)\n"
    )
    result = box.exec(["python3", "-"], timeout=60, stdin=_in_parallel(fork, 4))
    forked = sum(int(line.split()[1]) for line in result.output.splitlines() if line.startswith("FORKED "))
    return 0 < forked <= box.limits.pids, f"4 processes forking {each} each: {forked} forks in all"


IPC_FILL = """\
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
size = int(sys.argv[1]) << 20
made = 0
for _ in range(2):
    ident = libc.shmget(0, size, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600; never removed by this call
    addr = libc.shmat(ident, None, 0) if ident >= 0 else None
    if addr in (None, ctypes.c_void_p(-1).value):
        break
    ctypes.memset(addr, 1, size)
    made += 1
print("MADE", made, flush=True)
"""


def ipc_private(box: Sandbox) -> tuple[bool, str]:
    """System V shared memory a call leaves behind is gone for the next call, which can use the memory it held;
    and the sandbox's IPC namespace is not the host's."""
    each = box.limits.memory_mb * 2 // 5
    made = box.exec(["python3", "-", str(each)], timeout=30, stdin=IPC_FILL)
    after = box.exec(
        [
            "python3",
            "-c",
            f"import os; b = bytearray({box.limits.memory_mb // 2} * 2**20); print('ALLOCATED', "
            "len(open('/proc/sysvipc/shm').read().splitlines()) - 1, os.readlink('/proc/self/ns/ipc'))",
        ],
        timeout=30,
    )
    words = after.output.split()
    left = int(words[1]) if len(words) > 2 and words[0] == "ALLOCATED" else -1
    own = len(words) > 2 and words[2] != os.readlink("/proc/self/ns/ipc")
    seen = (
        f"a call made 2 x {each} MB of shared memory ({_seen(made)}); the next: "
        + (f"{left} segment(s) left, {box.limits.memory_mb // 2} MB allocated" if left >= 0 else _seen(after))
        + ("" if own else "; the IPC namespace is the host's")
    )
    return left == 0 and own, seen


def probes(limits: SandboxLimits) -> list[Probe]:
    """Every probe, in the order `runbook sandbox check` prints them."""
    return [*_isolation_probes(limits), *_resource_probes(limits)]


def _isolation_probes(limits: SandboxLimits) -> list[Probe]:
    """Who the calls run as, what they can see and reach, and how a call ends and reports."""
    store = "$RUNBOOK_STORE_DIR"
    return [
        Probe(
            "user",
            "runs as a non-root user without capabilities",
            command(
                "id -u; grep CapEff /proc/self/status",
                lambda r: r.ok and r.output.split()[0] != "0" and r.output.split()[-1].strip("0") == "",
            ),
        ),
        Probe("store", "store readable", command(f"ls {store} | head -3", lambda r: r.ok)),
        Probe("store", "store read-only", command(f"touch {store}/.runbook-probe", _fails)),
        Probe(
            "root_fs",
            "root filesystem read-only",
            command("touch /usr/.runbook-probe /etc/.runbook-probe /.runbook-probe", _fails),
        ),
        Probe("network", "no connection to the host's loopback", no_loopback),
        Probe("network", "no DNS", command(["python3", "-"], _fails, stdin=DNS_SCRIPT)),
        Probe("network", "no outside network", command(["python3", "-"], _fails, stdin=connect_script("1.1.1.1", 53))),
        Probe("host_files", "host files invisible", host_files_invisible),
        Probe("timeout", "timeout kills the command", command("sleep 30", lambda r: r.timed_out, timeout=1)),
        Probe("timeout_tree", "timeout ends every process (setsid child)", timeout_ends_everything),
        Probe("timeout_tree", "a returning call leaves no process", return_ends_everything),
        Probe("timeout_tree", "a stopped wrapper still ends near its timeout", stopped_wrapper_ends),
        Probe(
            "output",
            "output is cut",
            command(
                f"head -c {limits.output_bytes + 1000} /dev/zero | tr '\\0' x",
                lambda r: r.truncated and r.cut_bytes == 1000,
            ),
        ),
        Probe("output_host", "output cap holds on the host (300 MB)", output_bounded_on_host),
        Probe("trailer", "output cannot forge the exit code", trailer_unforgeable),
        Probe("log", "no container log (log driver none)", no_container_log),
        Probe("scratch", f"scratch writable, {limits.scratch_mb} MB for the query", scratch_capped),
    ]


def _resource_probes(limits: SandboxLimits) -> list[Probe]:
    """What a call may use up: shared memory and IPC, namespaces, memory, processes; and the tools it finds."""
    bomb = (
        "import os,time\nn=0\ntry:\n for i in range(%d):\n  if os.fork()==0:\n   time.sleep(2); os._exit(0)\n"
        "  n+=1\n print('NOT STOPPED', n)\nexcept OSError as e:\n print('STOPPED after', n, e)\n" % (limits.pids * 2)
    )
    return [
        Probe(
            "dev_shm",
            "no unbounded tmpfs at /dev/shm",
            command(
                "head -c 100000000 /dev/zero > /dev/shm/probe && echo WROTE; rm -f /dev/shm/probe",
                lambda r: "WROTE" not in r.output,
                timeout=30,
            ),
        ),
        Probe("ipc", "an IPC namespace of its own, emptied after each call", ipc_private),
        Probe(
            "namespaces",
            "no new user namespace or mount",
            command(
                ["python3", "-"],
                lambda r: r.ok and "ALLOWED" not in r.output and r.output.count("refused") == 4,
                stdin=UNSHARE,
            ),
        ),
        Probe(
            "memory",
            f"memory limit ({limits.memory_mb} MB) stops a hog",
            command(
                ["python3", "-c", f"b = bytearray({limits.memory_mb * 2} * 2**20); print('SURVIVED')"],
                lambda r: _fails(r) and "SURVIVED" not in r.output,
                timeout=30,
            ),
        ),
        Probe("memory_total", f"memory limit ({limits.memory_mb} MB) holds for the whole sandbox", memory_total),
        Probe(
            "pids",
            f"process limit ({limits.pids}) stops a fork bomb",
            command(["python3", "-"], lambda r: "STOPPED" in r.output, timeout=20, stdin=bomb),
        ),
        Probe("pids_total", f"process limit ({limits.pids}) holds for the whole sandbox", pids_total),
        Probe(
            "tools",
            "tools on PATH and PYTHONPATH",
            command("command -v rg python3 search show && python3 -c 'import rbk'", lambda r: r.ok),
        ),
    ]


def run_probes(box: Sandbox, only: list[Probe] | None = None) -> list[LimitResult]:
    """Every limit `box` (started) claims or disclaims: a probe's verdict, or why the backend does not enforce it."""
    claims = box.enforcement() if hasattr(box, "enforcement") else {}
    results = []
    for probe in only if only is not None else probes(box.limits):
        if probe.key not in claims:
            continue  # does not apply to this backend (a container log under bwrap)
        enforced, how = claims[probe.key]
        if not enforced:
            results.append(LimitResult(probe.key, probe.name, NOT_ENFORCED, how))
            continue
        try:
            held, seen = probe.check(box)
        except Exception as exc:
            held, seen = False, f"could not run: {type(exc).__name__}: {exc}"
        results.append(LimitResult(probe.key, probe.name, ENFORCED if held else FAILED, f"{how}; {seen}"[:400]))
    return results
