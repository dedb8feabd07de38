"""BwrapSandbox: bubblewrap, for hosts without a container engine. Each call is a fresh bwrap jail (~10 ms) over
the host's /usr, sharing one scratch folder per query; no network, store and tools read-only, rlimits inside.

Weaker than docker in two ways: memory is limited per process (address space), not for the whole sandbox, and
the programs are the host's. When run as root, the jail drops to uid 65534 inside, because the kernel does not
apply the process limit to root.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import SandboxError
from .base import SCRATCH_MOUNT, STORE_MOUNT, TOOLS_MOUNT, ExecResult, SandboxBase, SandboxLimits
from .process import run_wrapped

BIN_MOUNT = "/opt/runbook/bin"
"""Where a ripgrep that does not live under /usr (a pip install) is bound."""
SANDBOX_UID = 65534
"""nobody: the identity a root caller's jail runs as."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def find_rg() -> Path | None:
    """A real ripgrep binary (not a pyenv shim script), preferring the system one."""
    candidates = [Path("/usr/bin/rg"), Path(sys.executable).parent / "rg"]
    if shutil.which("rg"):
        candidates.append(Path(shutil.which("rg")))
    for path in candidates:
        path = path.resolve()
        if path.is_file() and os.access(path, os.X_OK) and path.open("rb").read(4) == b"\x7fELF":
            return path
    return None


class BwrapSandbox(SandboxBase):
    """bubblewrap backend."""

    name = "bwrap"

    def __init__(self, store_path: str | Path, limits: SandboxLimits | None = None, *,
                 tools_path: str | Path | None = None):
        super().__init__(store_path, limits)
        self.tools_path = Path(tools_path) if tools_path else None
        self.scratch: Path | None = None
        self._base: list[str] = []
        self._as_root = os.geteuid() == 0

    def _start(self) -> None:
        from .sources import programs_dir
        bwrap = bwrap_path()
        if not bwrap:
            raise SandboxError("bubblewrap is not installed: apt-get install -y bubblewrap (or use the docker backend)")
        if not Path("/usr/bin/python3").exists():
            raise SandboxError("the bwrap sandbox runs the host's /usr/bin/python3, which is missing: "
                               "apt-get install -y python3")
        self.tools_path = self.tools_path or programs_dir()
        self.scratch = Path(tempfile.mkdtemp(prefix="runbook-scratch-"))
        if self._as_root:
            os.chown(self.scratch, SANDBOX_UID, SANDBOX_UID)
        self._base = self._jail_args(bwrap)
        probe = self._exec(["test", "-r", STORE_MOUNT, "-a", "-x", STORE_MOUNT], timeout=10, stdin=None)
        if probe.exit_code != 0:
            who = f"uid {SANDBOX_UID}" if self._as_root else "your user"
            raise SandboxError(f"the bwrap sandbox ({who}) cannot read the store {self.store_path} "
                               f"(exit {probe.exit_code}: {probe.output.strip()[:300]}); "
                               f"make it readable: chmod -R o+rX {self.store_path}")

    def _jail_args(self, bwrap: str) -> list[str]:
        limits = self.limits
        args = [bwrap, "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"]
        for etc in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime"):  # /usr/bin links point into these
            if os.path.exists(etc):
                args += ["--ro-bind", etc, etc]
        args += ["--perms", "0755", "--dir", "/opt/runbook",
                 "--ro-bind", str(self.tools_path), TOOLS_MOUNT,
                 "--ro-bind", str(self.store_path), STORE_MOUNT,
                 "--bind", str(self.scratch), SCRATCH_MOUNT,
                 "--perms", "1777", "--size", str(limits.scratch_mb * 2**20), "--tmpfs", "/tmp",
                 "--proc", "/proc", "--dev", "/dev",
                 "--hostname", "runbook-sandbox", "--chdir", SCRATCH_MOUNT,
                 "--die-with-parent", "--new-session", "--clearenv"]
        rg = find_rg()
        if rg and not str(rg).startswith("/usr/"):
            args += ["--perms", "0755", "--dir", BIN_MOUNT, "--ro-bind", str(rg), f"{BIN_MOUNT}/rg"]
        args += ["--remount-ro", "/"]  # last mount step: the jail's own root tmpfs must not take writes either
        env = {"PATH": f"{TOOLS_MOUNT}:{BIN_MOUNT}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": TOOLS_MOUNT,
               "PYTHONDONTWRITEBYTECODE": "1", "RUNBOOK_STORE_DIR": STORE_MOUNT, "HOME": SCRATCH_MOUNT,
               "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "MALLOC_ARENA_MAX": "2"}  # glibc reserves 64 MB of address space per arena; RLIMIT_AS counts it
        for key, value in env.items():
            args += ["--setenv", key, value]
        # the kernel skips RLIMIT_NPROC for uid 0: as root, stay out of a user namespace and drop to nobody inside
        if self._as_root:
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                     "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                     "setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        else:
            args += ["--unshare-all", "--"]
        # limits set inside the new namespaces, so the process count is the jail's own, not the whole user's
        args += ["prlimit", f"--nproc={limits.pids}", f"--as={limits.memory_mb * 2**20}",
                 f"--fsize={limits.scratch_mb * 2**20}", "--"]
        return args

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        return run_wrapped(self._base, argv, limits=self.limits, timeout=timeout, stdin=stdin)

    def _stop(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
