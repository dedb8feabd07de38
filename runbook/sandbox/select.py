"""Choosing a backend for `auto`: docker when an engine answers and the image exists or can be built, else
bubblewrap when it can make a jail here, else an error that says how to get either."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from ..errors import SandboxError
from .bwrap import bwrap_path
from .engine import START_ENGINE_HINT


def bwrap_works() -> tuple[bool, str]:
    """Whether bwrap can create a jail on this host (user namespaces may be disabled for non-root users)."""
    path = bwrap_path()
    if not path:
        return False, "bubblewrap is not installed (apt-get install -y bubblewrap)"
    unshare = ["--unshare-net", "--unshare-pid"] if os.geteuid() == 0 else ["--unshare-all"]
    result = subprocess.run(
        [path, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", *unshare, "true"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return False, f"bwrap cannot create a jail here: {result.stderr.strip()[:200]}"
    return True, f"{path} works"


def pick_backend(log: Callable[[str], None] | None = None) -> tuple[str, dict, str]:
    """(backend name, options for it, why it was chosen)."""
    from .engine import connect
    from .image import ensure_image, stderr_log

    reasons = []
    try:
        engine = connect()
    except SandboxError as exc:
        reasons.append(f"docker: {exc}")
    else:
        try:
            tag = ensure_image(engine, log=log or stderr_log)
            return "docker", {"engine": engine, "image": tag}, f"engine at {engine.url}, image {tag}"
        except SandboxError as exc:
            reasons.append(f"docker: the engine at {engine.url} answers but the image cannot be built: {exc}")
    ok, why = bwrap_works()
    if ok:
        return "bwrap", {}, f"no usable Docker engine; {why}"
    reasons.append(f"bwrap: {why}")
    raise SandboxError(
        "no sandbox backend can run here:\n  "
        + "\n  ".join(reasons)
        + f"\nTo fix: {START_ENGINE_HINT}; or apt-get install -y bubblewrap; "
        "or pass --sandbox local (runs tools WITHOUT isolation)"
    )
