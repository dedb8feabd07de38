"""Where the sandbox's inputs live: the programs run inside it and the Dockerfile, shipped as package data beside
this module (so an installed wheel can build the image and run method C), and their hash."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import SandboxError

PROGRAMS_DIR = "programs"
DOCKERFILE = "Dockerfile"
SOURCE_ENV = "RUNBOOK_SOURCE_DIR"
"""Overrides where the programs and the Dockerfile are read from (a folder holding programs/ and Dockerfile)."""

_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache"}


def source_root() -> Path:
    """The folder holding programs/ and the Dockerfile: this package, unless RUNBOOK_SOURCE_DIR names another."""
    root = Path(os.environ.get(SOURCE_ENV) or Path(__file__).resolve().parent)
    if not (root / DOCKERFILE).is_file() or not (root / PROGRAMS_DIR).is_dir():
        raise SandboxError(f"no {DOCKERFILE} and {PROGRAMS_DIR}/ under {root}: the runbook installation is "
                           f"incomplete (reinstall it) or {SOURCE_ENV} points at the wrong folder")
    return root


def programs_dir() -> Path:
    """The programs the agent runs inside the sandbox (search, show, rbk.py)."""
    return source_root() / PROGRAMS_DIR


def dockerfile() -> Path:
    return source_root() / DOCKERFILE


def iter_files(folder: Path):
    """Files under `folder` in a stable order, skipping caches that do not change what the image holds."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def image_inputs() -> list[Path]:
    """Every file the image is built from, in a stable order: the Dockerfile, then the programs."""
    return [dockerfile(), *iter_files(programs_dir())]


def content_hash() -> str:
    """A short hash of the image's inputs (paths, bytes, exec bits): the image tag, so edits force a rebuild."""
    digest = hashlib.sha256()
    root = source_root()
    for path in image_inputs():
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(b"x" if os.access(path, os.X_OK) else b"-")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]
