"""Isolation probes: small commands run inside a started sandbox, each checking one promise (no network, store
read-only, limits hold). `runbook sandbox check` prints them; the tests check the same promises in depth."""
from __future__ import annotations

import os
import socket
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

from .base import ExecResult, Sandbox


@dataclass(frozen=True)
class ProbeResult:
    """One promise checked."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


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
    return (f"import socket,sys\ntry:\n s=socket.create_connection(({host!r},{port}),timeout=3)\n"
            f" print('CONNECTED', s.recv(64)); sys.exit(0)\nexcept OSError as e:\n print('FAILED', e); sys.exit(1)\n")


DNS_SCRIPT = ("import socket,sys\ntry:\n print('RESOLVED', socket.getaddrinfo('deb.debian.org', 80)[0][4]); "
              "sys.exit(0)\nexcept OSError as e:\n print('FAILED', e); sys.exit(1)\n")


def _fails(result: ExecResult) -> bool:
    return result.exit_code != 0 or result.timed_out


def run_probes(box: Sandbox) -> list[ProbeResult]:
    """Run every probe in `box` (started) and return the results; takes a few seconds."""
    results: list[ProbeResult] = []

    def probe(name: str, cmd: list[str] | str, passed: Callable[[ExecResult], bool], *, timeout: float = 10,
              stdin: str | None = None) -> None:
        try:
            result = box.exec(cmd, timeout=timeout, stdin=stdin)
        except Exception as exc:
            results.append(ProbeResult(name, False, f"could not run: {exc}"))
            return
        detail = f"exit {result.exit_code}: " + " ".join(result.output.split())[:160]
        results.append(ProbeResult(name, bool(passed(result)), detail))

    limits = box.limits
    store = "$RUNBOOK_STORE_DIR"
    probe("runs as a non-root user", "id -u", lambda r: r.ok and r.output.strip() not in ("", "0"))
    probe("store readable", f"ls {store} | head -3", lambda r: r.ok)
    probe("store read-only", f"touch {store}/.runbook-probe", _fails)
    probe("scratch writable", "echo ok > probe.txt && cat probe.txt && rm probe.txt",
          lambda r: r.ok and "ok" in r.output)
    probe("root filesystem read-only", "touch /usr/.runbook-probe /etc/.runbook-probe /.runbook-probe", _fails)
    with host_server() as port:
        probe("no connection to the host's loopback", ["python3", "-"],
              lambda r: _fails(r) and "HOST-SECRET" not in r.output, stdin=connect_script("127.0.0.1", port))
    probe("no DNS", ["python3", "-"], _fails, stdin=DNS_SCRIPT)
    probe("no outside network", ["python3", "-"], _fails, stdin=connect_script("1.1.1.1", 53))
    fd, host_file = tempfile.mkstemp(prefix="runbook-probe-")
    os.write(fd, b"HOST-FILE\n")
    os.close(fd)
    try:
        probe("host files invisible", ["cat", host_file], lambda r: _fails(r) and "HOST-FILE" not in r.output)
    finally:
        os.unlink(host_file)
    probe("timeout kills the command", "sleep 30", lambda r: r.timed_out, timeout=1)
    probe("output is cut", f"head -c {limits.output_bytes + 1000} /dev/zero | tr '\\0' x",
          lambda r: r.truncated and r.cut_bytes == 1000)
    probe(f"memory limit ({limits.memory_mb} MB) stops a hog",
          ["python3", "-c", f"b = bytearray({limits.memory_mb * 2} * 2**20); print('SURVIVED')"],
          lambda r: _fails(r) and "SURVIVED" not in r.output, timeout=20)
    probe(f"process limit ({limits.pids}) stops a fork bomb", ["python3", "-"],
          lambda r: "STOPPED" in r.output, timeout=20, stdin=(
              "import os,time\nn=0\ntry:\n for i in range(%d):\n  if os.fork()==0:\n   time.sleep(2); os._exit(0)\n"
              "  n+=1\n print('NOT STOPPED', n)\nexcept OSError as e:\n print('STOPPED after', n, e)\n"
              % (limits.pids * 2)))
    probe("tools on PATH and PYTHONPATH", "command -v rg python3 && python3 -c "
          "\"import sys; assert '/opt/runbook/tools' in sys.path or any(p.endswith('tools') for p in sys.path)\"",
          lambda r: r.ok)
    return results
