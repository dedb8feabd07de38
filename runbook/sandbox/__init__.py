"""Run an agent's tool calls in isolation: one sandbox per query, network off, store read-only at /store.

get_sandbox(name, store_path, **limits) -> Sandbox
  "auto"    docker if an engine answers and the image exists or can be built, else bwrap, else SandboxError
  "docker"  DockerSandbox: one container per query (the real isolation)
  "bwrap"   BwrapSandbox: bubblewrap jails, for hosts without an engine
  "local"   LocalSandbox: plain subprocesses; isolates nothing, only when asked for by name
  "fake"    FakeSandbox: scripted replies for tests

with get_sandbox("auto", store) as box:
    result = box.exec(["rg", "-n", "checkout", "/store"], timeout=10)   # ExecResult
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from ..errors import SandboxError
from .base import STORE_MOUNT, ExecResult, Sandbox, SandboxBase, SandboxLimits

BACKENDS = {
    "docker": "runbook.sandbox.docker.DockerSandbox",
    "bwrap": "runbook.sandbox.bwrap.BwrapSandbox",
    "local": "runbook.sandbox.local.LocalSandbox",
    "fake": "runbook.sandbox.fake.FakeSandbox",
}
NAMES = ("auto", *BACKENDS)


def backend_class(name: str) -> type[SandboxBase]:
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}; choose one of {', '.join(NAMES)}")
    module, _, attr = BACKENDS[name].rpartition(".")
    return getattr(importlib.import_module(module), attr)


def get_sandbox(
    name: str = "auto", store_path: str | Path = ".", *, log: Callable[[str], None] | None = None, **options
) -> Sandbox:
    """A not-yet-started sandbox. Keyword arguments naming a SandboxLimits field are limits; the rest go to the
    backend (docker: image=, engine=; bwrap/local: tools_path=; fake: handler=)."""
    limit_names = {f.name for f in fields(SandboxLimits)}
    limits = SandboxLimits.from_kwargs(**{k: v for k, v in options.items() if k in limit_names})
    backend_options = {k: v for k, v in options.items() if k not in limit_names}
    if name == "auto":
        from .select import pick_backend

        name, extra, _reason = pick_backend(log=log)
        backend_options = {**extra, **backend_options}
    cls = backend_class(name)
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "store_path", "limits"}
    unknown = sorted(set(backend_options) - accepted)
    if unknown:
        raise SandboxError(
            f"unknown option(s) {', '.join(unknown)} for the {name} sandbox; limits are "
            f"{', '.join(sorted(limit_names))}; {name} also takes {', '.join(sorted(accepted)) or '-'}"
        )
    return cls(store_path, limits, **backend_options)


__all__ = [
    "get_sandbox",
    "backend_class",
    "BACKENDS",
    "NAMES",
    "Sandbox",
    "SandboxLimits",
    "ExecResult",
    "SandboxError",
    "STORE_MOUNT",
]
