"""`runbook serve ...` started as a user starts it (a process of its own), for the tests that need the real command:
its options, its start-up and access log, its signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CliServer:
    """`runbook --store STORE serve ARGS...` listening on `port`; stopped with SIGTERM at the end (its stderr is then
    in `.log` and its exit code in `.returncode`)."""

    def __init__(self, store: Path, *args: str, port: int | None = None, env: dict | None = None):
        self.port = port or free_port()
        self.args = [
            sys.executable,
            "-m",
            "runbook.cli",
            "--store",
            str(store),
            "serve",
            *args,
            "--port",
            str(self.port),
        ]
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.log = ""
        self.returncode: int | None = None

    def __enter__(self) -> CliServer:
        self.proc = subprocess.Popen(
            self.args,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start: {self.log[-2000:]}")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.log += self.proc.communicate(timeout=60)[1]
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.log += self.proc.communicate()[1]
        self.returncode = self.proc.returncode

    def __exit__(self, *exc: object) -> None:
        if self.returncode is None:
            self.stop()
