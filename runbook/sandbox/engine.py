"""Finding a Docker engine that answers: DOCKER_HOST if set, else the default socket, else the one
scripts/docker-engine.sh starts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import SandboxError

RUNBOOK_ENGINE = "unix:///tmp/runbook-docker/docker.sock"
"""Where scripts/docker-engine.sh starts dockerd."""
CLIENT_TIMEOUT = 3600
"""Seconds docker-py waits on one API call; long, because an exec call returns only when its command ends."""
START_ENGINE_HINT = (
    'start one with `eval "$(scripts/docker-engine.sh)"` (installs Debian\'s docker.io if needed '
    "and prints the DOCKER_HOST to export)"
)

_HOST_CPUS: dict[str, int] = {}


@dataclass
class Engine:
    """A docker-py client and the URL it talks to."""

    client: Any
    """docker.DockerClient"""
    url: str
    """As a user writes it, e.g. unix:///tmp/runbook-docker/docker.sock"""

    def cpus(self) -> int:
        """The CPUs of the engine's host (docker refuses a CPU limit above them), asked once per engine URL."""
        if self.url not in _HOST_CPUS:
            _HOST_CPUS[self.url] = max(1, int(self.client.info().get("NCPU") or 1))
        return _HOST_CPUS[self.url]

    def version(self) -> str:
        info = self.client.version()
        return f"{info.get('Version', '?')} (API {info.get('ApiVersion', '?')})"


def candidate_urls() -> list[str]:
    if os.environ.get("DOCKER_HOST"):
        return [os.environ["DOCKER_HOST"]]  # an explicit choice: never silently talk to another engine
    return ["unix:///var/run/docker.sock", RUNBOOK_ENGINE]


def connect(ping_timeout: float = 3.0) -> Engine:
    """The first engine that answers; SandboxError saying how to start one otherwise."""
    try:
        import docker
    except ImportError as exc:
        raise SandboxError("the docker Python package is missing: pip install 'docker>=7'") from exc
    errors = []
    for url in candidate_urls():
        if url.startswith("unix://") and not os.path.exists(url[len("unix://") :]):
            errors.append(f"{url}: no socket")
            continue
        try:
            probe = docker.DockerClient(base_url=url, timeout=ping_timeout)
            probe.ping()
            api_version = probe.api.api_version
            probe.close()
            return Engine(docker.DockerClient(base_url=url, timeout=CLIENT_TIMEOUT, version=api_version), url)
        except Exception as exc:  # docker-py raises several unrelated types for "nothing there"
            errors.append(f"{url}: {type(exc).__name__}: {str(exc)[:200]}")
    raise SandboxError("no Docker engine answers (" + "; ".join(errors) + f"); {START_ENGINE_HINT}")


def engine_answers() -> bool:
    try:
        connect(ping_timeout=2.0).client.close()
        return True
    except SandboxError:
        return False
