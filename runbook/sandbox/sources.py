"""Where the sandbox's inputs live on the host: the repo's tools/ and sandbox_image/ folders, and their hash."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import SandboxError

_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache"}


def project_root() -> Path:
    """The runbook checkout holding tools/ and sandbox_image/ (env RUNBOOK_SOURCE_DIR overrides)."""
    root = Path(os.environ.get("RUNBOOK_SOURCE_DIR") or Path(__file__).resolve().parents[2])
    if not (root / "sandbox_image" / "Dockerfile").is_file():
        raise SandboxError(f"no sandbox_image/Dockerfile under {root}; the sandbox is built from a runbook checkout: "
                           f"set RUNBOOK_SOURCE_DIR to one")
    return root


def tools_dir() -> Path:
    path = project_root() / "tools"
    if not path.is_dir():
        raise SandboxError(f"the tools folder {path} is missing; restore it from the runbook repository")
    return path


def image_dir() -> Path:
    return project_root() / "sandbox_image"


def iter_files(folder: Path):
    """Files under `folder` in a stable order, skipping caches that do not change what the image holds."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def content_hash() -> str:
    """A short hash of tools/ and sandbox_image/ (paths, bytes, exec bits): the image tag, so edits force a rebuild."""
    digest = hashlib.sha256()
    root = project_root()
    for folder in (root / "tools", root / "sandbox_image"):
        for path in iter_files(folder):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]
