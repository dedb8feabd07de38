"""DockerSandbox: one container per query (network off, store read-only, root fs read-only, limits on memory,
processes and CPU, no log), reused by every tool call through `docker exec`, removed at the end even on error or a
signal.

PID 1 is runbook's own init (inside.py): it reaps orphans and, on SIGUSR1, kills every other process. Each call's
wrapper kills every process of the sandbox user but itself when the call ends, so nothing a call started (setsid,
double fork) outlives it. The host reads the exec stream itself, capped and with a deadline, and kills the call from
outside when the wrapper did not report in time (it was stopped or killed).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from .base import SCRATCH_MOUNT, STORE_MOUNT, ExecResult, SandboxBase, SandboxLimits, wrapper_claims
from .output import (
    GRACE_S,
    TRAILER_ROOM,
    init_argv,
    inside_env,
    kill_all_scope,
    new_nonce,
    nonce_env,
    reported,
    stdin_env,
    to_result,
    wrapper_argv,
)
from .stream import read_capped

LABEL = "runbook.sandbox"
"""Every sandbox container carries LABEL=1, so leftovers can be listed: docker ps -a --filter label=runbook.sandbox"""
USER = "1000:1000"
PYTHON = "python3"
"""The image's interpreter, which runs the wrapper and the init."""


class DockerSandbox(SandboxBase):
    """The real isolation backend (docker-py)."""

    name = "docker"

    def __init__(
        self, store_path: str | Path, limits: SandboxLimits | None = None, *, image: str | None = None, engine=None
    ):
        super().__init__(store_path, limits)
        self.image = image
        self._engine = engine
        self.container: Any = None  # a docker-py Container once started (docker-py has no type hints)

    @property
    def container_id(self) -> str | None:
        return self.container.id if self.container is not None else None

    def _start(self) -> None:
        import docker.errors

        from .engine import connect
        from .image import ensure_image

        self._engine = self._engine or connect()
        client = self._engine.client
        reap_leftovers(client)
        self.image = self.image or ensure_image(self._engine)
        try:
            self.container = self._run_container(client)
        except docker.errors.ImageNotFound:  # a concurrent rebuild for newer programs removed it: build and retry
            self.image = ensure_image(self._engine)
            self.container = self._run_container(client)
        self._check_store_readable()

    def _run_container(self, client):
        import docker.types

        limits = self.limits
        tmpfs_opts = f"rw,nosuid,nodev,size={limits.scratch_mb}m,mode=1777"
        # create + start, not run: run() answers a missing image by pulling it, which only fails slowly here
        container = client.containers.create(
            self.image,
            # the init ends itself after the lifetime, so a container whose owner was SIGKILLed cannot linger forever
            init_argv(PYTHON, limits.lifetime_s),
            name=f"runbook-sandbox-{uuid.uuid4().hex[:12]}",
            auto_remove=True,
            init=False,
            log_config=docker.types.LogConfig(type="none"),  # a call writing to PID 1's stdout fills no host disk
            labels={LABEL: "1", "runbook.owner_pid": str(os.getpid()), "runbook.owner_host": socket.gethostname()},
            network_mode="none",
            ipc_mode="private",  # an IPC namespace of its own, which no other container may join
            read_only=True,
            mounts=[docker.types.Mount(STORE_MOUNT, str(self.store_path), type="bind", read_only=True)],
            tmpfs={SCRATCH_MOUNT: tmpfs_opts, "/tmp": tmpfs_opts},
            user=USER,
            working_dir=SCRATCH_MOUNT,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            pids_limit=limits.pids,
            nano_cpus=int(min(limits.cpus, self._engine.cpus()) * 1e9),
            environment={"RUNBOOK_STORE_DIR": STORE_MOUNT, **inside_env()},
        )
        try:
            container.start()
        except BaseException:
            container.remove(force=True)
            raise
        return container

    def _check_store_readable(self) -> None:
        result = self._exec(["test", "-r", STORE_MOUNT, "-a", "-x", STORE_MOUNT], timeout=10, stdin=None)
        if result.exit_code != 0:
            raise SandboxError(
                f"the sandbox user (uid 1000) cannot read the store {self.store_path}; make it "
                f"readable: chmod -R o+rX {self.store_path}"
            )

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        if self.container is None:
            raise SandboxError(
                "this query's docker sandbox was ended because a call could not be stopped; start a new query"
            )
        api = self._engine.client.api
        started = time.monotonic()
        nonce = new_nonce()
        limit = self.limits.output_bytes
        try:
            exec_id = api.exec_create(
                self.container.id,
                wrapper_argv(PYTHON, argv, output_bytes=limit, timeout=timeout, scope=kill_all_scope()),
                user=USER,
                workdir=SCRATCH_MOUNT,
                environment={**inside_env(), **nonce_env(nonce), **stdin_env(stdin)},
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except Exception as exc:
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(
                f"docker exec in {self.container.name} failed: {exc}; the container may have been "
                f"removed (its lifetime is {self.limits.lifetime_s:g} s)"
            ) from exc
        try:
            fd, first = _exec_stream(sock)
            got = read_capped(
                fd, cap=limit + TRAILER_ROOM, deadline=started + timeout + GRACE_S, frames=True, first=first
            )
        finally:
            sock.close()
        fallback = None
        if not (got.ended and reported(got.data, nonce)):
            # the wrapper did not end the call itself (stopped, killed, or outrun): end it, and ask how it exited
            self._kill_calls()
            fallback = None if got.late else _exit_code(api, exec_id)
        return to_result(
            got.data,
            nonce=nonce,
            fallback_exit=fallback,
            timeout=timeout,
            seconds=time.monotonic() - started,
            output_bytes=limit,
            late=got.late,
            over_cap=got.over_cap,
        )

    def _kill_calls(self) -> None:
        """Kill every process of the sandbox user, as the wrapper does when a call ends. Through `docker exec`
        first (it returns when the kill is done); when no process can start (the process limit is reached), the
        init kills them on SIGUSR1 (no fork needed); when neither works, the container goes."""
        api = self._engine.client.api
        try:
            # as the wrapper does: kill, then remove what is left in the IPC namespace (ipcrm: util-linux)
            end = "kill -KILL -1; s=$?; ipcrm --all 2>/dev/null; exit $s"
            exec_id = api.exec_create(self.container.id, ["bash", "-c", end], user=USER)["Id"]
            api.exec_start(exec_id)
            if api.exec_inspect(exec_id).get("ExitCode") in (0, 1):  # 1: nothing was left to kill
                return
        except Exception:
            pass
        try:
            self.container.kill(signal="SIGUSR1")
            time.sleep(0.2)
        except Exception:
            self._stop()

    def enforcement(self) -> dict[str, tuple[bool, str]]:
        limits = self.limits
        engine = "the container's cgroup"
        return {
            **wrapper_claims(limits),
            "user": (True, f"uid {USER.split(':')[0]}, all capabilities dropped, no-new-privileges"),
            "store": (True, "bind-mounted read-only at /store"),
            "root_fs": (True, "read-only root filesystem"),
            "network": (True, "network_mode none: loopback only"),
            "host_files": (True, "only the image, the store and two tmpfs"),
            "timeout_tree": (
                True,
                "the wrapper kills every process of the sandbox user when a call ends; the host "
                f"does at timeout + {GRACE_S:g} s (docker exec, else SIGUSR1 to the init)",
            ),
            "output_host": (True, "the host reads the exec stream capped; the wrapper is non-dumpable"),
            "log": (True, "log driver none"),
            "dev_shm": (True, "docker's 64 MB /dev/shm, counted in the memory limit"),
            "ipc": (True, "ipc_mode private; the wrapper removes what a call left in it when the call ends"),
            "namespaces": (True, "docker's default seccomp profile, no capabilities"),
            "memory": (True, f"{engine}: {limits.memory_mb} MB, no swap"),
            "memory_total": (True, f"{engine}: {limits.memory_mb} MB for all processes"),
            "pids": (True, f"{engine}: pids_limit {limits.pids}"),
            "pids_total": (True, f"{engine}: pids_limit {limits.pids} for all processes"),
            "tools": (True, f"the image {self.image}"),
        }

    def _stop(self) -> None:
        if self.container is None:
            return
        import docker.errors

        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):  # auto_remove raced us: the container is going anyway
                raise
        self.container = None


def _exec_stream(sock) -> tuple[int, bytes]:
    """(fd, bytes the HTTP client already buffered) of docker-py's exec socket, made non-blocking."""
    raw = getattr(sock, "_sock", sock)
    raw.setblocking(False)
    first = b""
    buffered = getattr(getattr(getattr(getattr(sock, "_response", None), "raw", None), "_fp", None), "fp", None)
    if buffered is not None:
        try:
            first = buffered.read1(65536) or b""  # empty when nothing is buffered: the socket is non-blocking
        except BlockingIOError:
            first = b""
    return raw.fileno(), first


def _exit_code(api, exec_id: str) -> int | None:
    try:
        return api.exec_inspect(exec_id).get("ExitCode")
    except Exception:
        return None


def leftover_containers(client) -> list[dict]:
    """Sandbox containers on the engine, as the engine's summaries (one call; no per-container lookup that could
    race a container being removed)."""
    return client.api.containers(all=True, filters={"label": f"{LABEL}=1"})


def reap_leftovers(client) -> int:
    """Remove sandbox containers on this host whose owning process is gone (killed with SIGKILL, a crash).
    Best effort: never stops a sandbox from starting."""
    removed = 0
    try:
        summaries = leftover_containers(client)
    except Exception:
        return 0
    for summary in summaries:
        labels = summary.get("Labels") or {}
        if labels.get("runbook.owner_host") != socket.gethostname():
            continue
        try:
            os.kill(int(labels.get("runbook.owner_pid", "")), 0)
            continue  # the owner still runs
        except ProcessLookupError:
            pass
        except (PermissionError, ValueError, OverflowError):
            continue
        try:
            client.api.remove_container(summary["Id"], force=True)
            removed += 1
        except Exception:
            pass  # already going (auto_remove) or removed by another process
    return removed
