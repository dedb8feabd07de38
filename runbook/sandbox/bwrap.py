"""BwrapSandbox: bubblewrap, for hosts without a container engine. One jail per query over the host's /usr: no
network, store and tools read-only, size-capped tmpfs /scratch and /tmp kept for the whole query, a seccomp filter
against new namespaces and mounts, and a cgroup for memory and processes where the host allows one.

runbook's init (inside.py) is the jail's PID 1. The host sends it each call over a unix socket, with a pipe for the
output; it forks the call's wrapper, which kills every process in the jail's PID namespace when the call ends. When
the wrapper does not report in time, the host asks the init to kill them, and failing that ends the jail.

Weaker than docker (see the README): the programs are the host's; without a cgroup (not root, or no cgroup the
host lets us write) memory is limited per process (address space) and processes per uid, not for the whole
sandbox. When run as root, the jail drops to uid 65534 inside, outside any user namespace.
"""

from __future__ import annotations

import array
import os
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from ..errors import SandboxError
from . import seccomp
from .base import (
    CORE_MOUNT,
    LIBRARY_MOUNT,
    SCRATCH_MOUNT,
    STORE_MOUNT,
    TOOLS_MOUNT,
    ExecResult,
    SandboxBase,
    SandboxLimits,
    wrapper_claims,
)
from .cgroup import PREFIX, Cgroup, reap_leftovers
from .inside import recv_message
from .output import (
    GRACE_S,
    TRAILER_ROOM,
    init_argv,
    inside_env,
    kill_all_scope,
    new_nonce,
    reported,
    stdin_fd,
    to_result,
)
from .sources import core_dir
from .stream import read_capped

BIN_MOUNT = "/opt/runbook/bin"
"""Where a ripgrep that does not live under /usr (a pip install) is bound."""
SANDBOX_UID = 65534
"""nobody: the identity a root caller's jail runs as."""
PYTHON = "/usr/bin/python3"
"""The host's interpreter, which runs the init and the wrappers inside the jail."""
REQUEST_TIMEOUT_S = 10.0
"""Seconds the host waits for the init to answer (it answers at once unless the jail is gone)."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def find_rg() -> Path | None:
    """A real ripgrep binary (not a pyenv shim script), preferring the system one."""
    candidates = [Path("/usr/bin/rg"), Path(sys.executable).parent / "rg"]
    on_path = shutil.which("rg")
    if on_path:
        candidates.append(Path(on_path))
    for path in candidates:
        path = path.resolve()
        if path.is_file() and os.access(path, os.X_OK) and path.open("rb").read(4) == b"\x7fELF":
            return path
    return None


class BwrapSandbox(SandboxBase):
    """bubblewrap backend."""

    name = "bwrap"

    def __init__(
        self,
        store_path: str | Path,
        limits: SandboxLimits | None = None,
        *,
        tools_path: str | Path | None = None,
        cgroup: bool = True,
    ):
        super().__init__(store_path, limits)
        self.tools_path = Path(tools_path) if tools_path else None
        self.use_cgroup = cgroup
        self.jail_id: str | None = None
        """runbook-bwrap-<owner pid>-<hex>: names the jail's cgroup and appears in its init's command line."""
        self.cgroup = Cgroup()
        self.process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._log: IO[bytes] | None = None
        self._lost = ""
        self._as_root = os.geteuid() == 0
        self._filter = seccomp.build_filter()

    def _start(self) -> None:
        from .sources import programs_dir

        bwrap = bwrap_path()
        if not bwrap:
            raise SandboxError("bubblewrap is not installed: apt-get install -y bubblewrap (or use the docker backend)")
        if not Path(PYTHON).exists():
            raise SandboxError(
                f"the bwrap sandbox runs the host's {PYTHON}, which is missing: apt-get install -y python3"
            )
        self.tools_path = self.tools_path or programs_dir()
        reap_leftovers()
        self.jail_id = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        if self.use_cgroup:
            limits = self.limits
            self.cgroup = Cgroup.create(self.jail_id, memory_bytes=limits.memory_mb * 2**20, pids=limits.pids)
        self._launch(bwrap)
        probe = self._exec(["test", "-r", STORE_MOUNT, "-a", "-x", STORE_MOUNT], timeout=10, stdin=None)
        if probe.exit_code != 0:
            who = f"uid {SANDBOX_UID}" if self._as_root else "your user"
            raise SandboxError(
                f"the bwrap sandbox ({who}) cannot read the store {self.store_path} "
                f"(exit {probe.exit_code}: {probe.output.strip()[:300]}); "
                f"make it readable: chmod -R o+rX {self.store_path}"
            )

    def _launch(self, bwrap: str) -> None:
        """Start the jail with the init as PID 1 and wait until it answers."""
        host_end, jail_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = host_end
        filter_fd = stdin_fd(self._filter) if self._filter else None  # bwrap reads the program from an fd
        fds = [jail_end.fileno()] + ([filter_fd] if filter_fd is not None else [])
        self._log = tempfile.TemporaryFile()  # bwrap's and the init's own errors, for the message if start fails
        try:
            argv = self.cgroup.enter(self._jail_args(bwrap, jail_end.fileno(), filter_fd))
            # the jail dies with this thread (--die-with-parent): a query starts, uses and stops it in one thread
            self.process = subprocess.Popen(
                argv, pass_fds=fds, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, start_new_session=True
            )
        finally:
            jail_end.close()
            if filter_fd is not None:
                os.close(filter_fd)
        host_end.settimeout(REQUEST_TIMEOUT_S)
        try:
            hello, _ = recv_message(host_end)
        except OSError:
            hello = None
        if not hello or not hello.get("ready"):
            raise SandboxError(f"the bwrap jail did not start: {self._jail_log() or 'no message'}")

    def _jail_args(self, bwrap: str, control_fd: int, filter_fd: int | None) -> list[str]:
        limits = self.limits
        scratch = ["--perms", "1777", "--size", str(limits.scratch_mb * 2**20), "--tmpfs"]
        # bwrap's arguments read as flag-value pairs: one mount a line
        # fmt: off
        args = [bwrap, "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                # made before binding into it: bwrap run as root would leave it 0700, closed to uid 65534
                "--perms", "0755", "--dir", "/etc"]
        # fmt: on
        for etc in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime"):  # /usr/bin links point into these
            if os.path.exists(etc):
                args += ["--ro-bind", etc, etc]
        # fmt: off
        args += ["--perms", "0755", "--dir", "/opt/runbook",
                 "--ro-bind", str(self.tools_path), TOOLS_MOUNT,
                 # the folders above the core's mount point made first, for the same reason as /etc above
                 "--perms", "0755", "--dir", LIBRARY_MOUNT, "--perms", "0755", "--dir", f"{LIBRARY_MOUNT}/runbook",
                 "--ro-bind", str(core_dir()), CORE_MOUNT,
                 "--ro-bind", str(self.store_path), STORE_MOUNT,
                 *scratch, SCRATCH_MOUNT, *scratch, "/tmp",
                 "--proc", "/proc", "--dev", "/dev",
                 "--remount-ro", "/dev",  # /dev/shm would be a tmpfs of unlimited size
                 "--hostname", "runbook-sandbox", "--chdir", SCRATCH_MOUNT,
                 "--die-with-parent", "--new-session", "--clearenv", "--as-pid-1"]
        # fmt: on
        if filter_fd is not None:
            args += ["--seccomp", str(filter_fd)]
        rg = find_rg()
        if rg and not str(rg).startswith("/usr/"):
            args += ["--perms", "0755", "--dir", BIN_MOUNT, "--ro-bind", str(rg), f"{BIN_MOUNT}/rg"]
        args += ["--remount-ro", "/"]  # last mount step: the jail's own root tmpfs must not take writes either
        env = {
            "PATH": f"{TOOLS_MOUNT}:{BIN_MOUNT}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": f"{TOOLS_MOUNT}:{LIBRARY_MOUNT}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "RUNBOOK_STORE_DIR": STORE_MOUNT,
            "HOME": SCRATCH_MOUNT,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            **inside_env(),
        }
        if not self.cgroup.memory:
            env["MALLOC_ARENA_MAX"] = "2"  # glibc reserves 64 MB of address space per arena; RLIMIT_AS counts it
        for key, value in env.items():
            args += ["--setenv", key, value]
        # the kernel skips RLIMIT_NPROC for uid 0: as root, stay out of a user namespace and drop to nobody inside
        if self._as_root:
            # fmt: off
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                     "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                     "setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
            # fmt: on
        else:
            args += ["--unshare-all", "--"]
        return args + init_argv(PYTHON, limits.lifetime_s, str(control_fd), self.jail_id or "")

    def _rlimits(self) -> dict[str, int]:
        """Per-call rlimits, for what the cgroup does not limit for the whole jail."""
        limits = self.limits
        rlimits = {"FSIZE": limits.scratch_mb * 2**20}
        if not self.cgroup.memory:
            rlimits["AS"] = limits.memory_mb * 2**20
        if not self.cgroup.pids:
            rlimits["NPROC"] = limits.pids
        return rlimits

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        if self._lost:
            raise SandboxError(f"this query's bwrap sandbox was ended ({self._lost}); start a new query")
        started = time.monotonic()
        nonce = new_nonce()
        limit = self.limits.output_bytes
        read_fd, write_fd = os.pipe()
        in_fd = stdin_fd(stdin)
        try:
            reply = self._request(
                {
                    "op": "run",
                    "argv": argv,
                    "limit": limit,
                    "timeout": timeout,
                    "nonce": nonce,
                    "scope": kill_all_scope(),
                    "rlimits": self._rlimits(),
                },
                [write_fd, in_fd],
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
            os.close(in_fd)
        try:
            if not reply.get("ok"):
                raise SandboxError(f"the bwrap sandbox could not start the call: {reply.get('error')}")
            got = read_capped(read_fd, cap=limit + TRAILER_ROOM, deadline=started + timeout + GRACE_S)
        finally:
            os.close(read_fd)
        if not (got.ended and reported(got.data, nonce)):
            self._kill_calls()  # the wrapper did not end the call itself (stopped, killed, or outrun)
        return to_result(
            got.data,
            nonce=nonce,
            fallback_exit=None,
            timeout=timeout,
            seconds=time.monotonic() - started,
            output_bytes=limit,
            late=got.late,
            over_cap=got.over_cap,
        )

    def _request(self, request: dict, fds: list[int]) -> dict:
        """Send one request with fds to the init and return its answer; a jail that does not answer is ended."""
        import json

        body = json.dumps(request).encode()
        message = struct.pack("<I", len(body)) + body
        if self._sock is None:
            raise SandboxError("the bwrap jail is not running")
        try:
            sent = self._sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            self._sock.sendall(message[sent:])
            reply, _ = recv_message(self._sock)
        except OSError as exc:
            reply, why = None, str(exc)
        else:
            why = "it closed its socket"
        if reply is None:
            self._end_jail(f"its init did not answer: {why}; {self._jail_log()}")
            raise SandboxError(f"the bwrap sandbox ended: {self._lost}")
        return reply

    def _kill_calls(self) -> None:
        """Ask the init to kill every process but itself; when it cannot, end the jail."""
        try:
            self._request({"op": "kill"}, [])
        except SandboxError:
            pass  # _request ended the jail

    def _end_jail(self, why: str) -> None:
        self._lost = why
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # --die-with-parent: the init, PID 1 of the jail, dies, and the kernel ends the rest

    def _jail_log(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(0)
            return self._log.read(2000).decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _stop(self) -> None:
        if self._sock is not None:
            self._sock.close()  # the init sees EOF and exits; the PID namespace ends with it
            self._sock = None
        if self.process is not None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        self.cgroup.remove()
        if self._log is not None:
            self._log.close()
            self._log = None

    def enforcement(self) -> dict[str, tuple[bool, str]]:
        limits, group = self.limits, self.cgroup
        filtered, filter_how = seccomp.describe()
        cgroup_why = group.why or ("turned off" if not self.use_cgroup else "")
        return {
            **wrapper_claims(limits),
            "user": (
                True,
                f"uid {SANDBOX_UID} inside, no user namespace"
                if self._as_root
                else "your uid, in a user namespace, no capabilities",
            ),
            "store": (True, "bound read-only at /store"),
            "root_fs": (True, "the host's /usr read-only, the jail's root read-only"),
            "network": (True, "a network namespace of its own: loopback only"),
            "host_files": (True, "only /usr, three /etc files, the store and the tools are bound"),
            "timeout_tree": (
                True,
                "the wrapper kills every process in the jail's PID namespace when a call ends; "
                f"the host asks the init to at timeout + {GRACE_S:g} s, else ends the jail",
            ),
            "output_host": (True, "the host reads the call's pipe capped; the wrapper is non-dumpable"),
            "dev_shm": (True, "/dev is read-only"),
            "ipc": (True, "--unshare-ipc; the wrapper removes what a call left in it when the call ends"),
            "namespaces": (filtered, filter_how),
            "memory": (
                True,
                f"{group.how} memory limit, {limits.memory_mb} MB for the jail"
                if group.memory
                else f"RLIMIT_AS {limits.memory_mb} MB per process",
            ),
            "memory_total": (
                group.memory,
                f"{group.how}: {limits.memory_mb} MB for the jail" if group.memory else f"no cgroup: {cgroup_why}",
            ),
            "pids": (
                True,
                f"{group.how} pids.max {limits.pids} for the jail"
                if group.pids
                else f"RLIMIT_NPROC {limits.pids}, counting every process of the jail's uid",
            ),
            "pids_total": (group.pids, f"{group.how} pids.max" if group.pids else f"no cgroup: {cgroup_why}"),
            "tools": (True, "the host's python3 and ripgrep, the programs bound read-only"),
        }
