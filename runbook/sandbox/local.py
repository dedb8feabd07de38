"""LocalSandbox: plain subprocesses in a temporary scratch folder. It isolates NOTHING (network, files, memory);
only for development, and only when asked for by name."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from .base import ExecResult, SandboxBase, SandboxLimits
from .process import run_wrapped
from .sources import library_root

WARNING = (
    "the local sandbox isolates nothing: tool calls run as you, with your network and files; "
    "use --sandbox docker or bwrap for anything but development"
)


class LocalSandbox(SandboxBase):
    """No isolation; same commands, limits on time and output only."""

    name = "local"

    def __init__(
        self, store_path: str | Path, limits: SandboxLimits | None = None, *, tools_path: str | Path | None = None
    ):
        super().__init__(store_path, limits)
        self.tools_path = Path(tools_path) if tools_path else None
        self.scratch: Path | None = None

    def _start(self) -> None:
        from .sources import programs_dir

        logging.getLogger(__name__).warning(WARNING)
        self.tools_path = self.tools_path or programs_dir()
        self.scratch = Path(tempfile.mkdtemp(prefix="runbook-local-"))

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            RUNBOOK_STORE_DIR=str(self.store_path),
            HOME=str(self.scratch),
            PATH=f"{self.tools_path}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(self.tools_path), str(library_root()), env.get("PYTHONPATH")])
            ),
            PYTHONDONTWRITEBYTECODE="1",
        )
        return env

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        return run_wrapped(argv, limits=self.limits, timeout=timeout, stdin=stdin, cwd=self.scratch, env=self._env())

    def enforcement(self) -> dict[str, tuple[bool, str]]:
        nothing = (False, "the local sandbox isolates nothing")
        return {
            **{
                key: nothing
                for key in (
                    "user",
                    "store",
                    "root_fs",
                    "network",
                    "host_files",
                    "scratch",
                    "dev_shm",
                    "ipc",
                    "namespaces",
                    "memory",
                    "memory_total",
                    "pids",
                    "pids_total",
                )
            },
            "timeout": (True, "the wrapper kills the command's process group"),
            "timeout_tree": (False, "a setsid child leaves the process group and outlives the call"),
            "output_host": (False, "the command runs as you and can write to any of your processes' output"),
            "output": (True, f"{self.limits.output_bytes:,} bytes per call, read capped"),
            "trailer": (True, "a per-call nonce"),
            "tools": (True, "the programs from the package, your python3 and ripgrep"),
        }

    def _stop(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
