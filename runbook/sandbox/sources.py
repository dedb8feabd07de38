"""Where the sandbox's inputs live: the programs run inside it and the Dockerfile, shipped as package data beside
this module, and the core library they import (runbook/core), so an installed wheel can build the image and run
method C; and their hash."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import SandboxError

PROGRAMS_DIR = "programs"
CORE_DIR = "core"
DOCKERFILE = "Dockerfile"
SOURCE_ENV = "RUNBOOK_SOURCE_DIR"
"""Overrides where the programs and the Dockerfile are read from (a folder holding programs/ and Dockerfile)."""

_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache"}


def source_root() -> Path:
    """The folder holding programs/ and the Dockerfile: this package, unless RUNBOOK_SOURCE_DIR names another."""
    root = Path(os.environ.get(SOURCE_ENV) or Path(__file__).resolve().parent)
    if not (root / DOCKERFILE).is_file() or not (root / PROGRAMS_DIR).is_dir():
        raise SandboxError(
            f"no {DOCKERFILE} and {PROGRAMS_DIR}/ under {root}: the runbook installation is "
            f"incomplete (reinstall it) or {SOURCE_ENV} points at the wrong folder"
        )
    return root


def programs_dir() -> Path:
    """The programs the agent runs inside the sandbox (search, show, rbk.py)."""
    return source_root() / PROGRAMS_DIR


def dockerfile() -> Path:
    return source_root() / DOCKERFILE


def core_dir() -> Path:
    """runbook/core: the library the programs import as `runbook.core` (inside the sandbox, a namespace package
    `runbook` holding only it)."""
    return Path(__file__).resolve().parents[1] / CORE_DIR


def library_root() -> Path:
    """The folder holding the `runbook` package: on PYTHONPATH, it makes `runbook.core` importable."""
    return core_dir().parents[1]


def iter_files(folder: Path):
    """Files under `folder` in a stable order, skipping caches that do not change what the image holds."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def image_inputs() -> list[tuple[Path, str]]:
    """Every file the image is built from and its path in the build context, in a stable order: the Dockerfile,
    the programs, the core library."""
    inputs = [(dockerfile(), DOCKERFILE)]
    for folder, name in ((programs_dir(), PROGRAMS_DIR), (core_dir(), CORE_DIR)):
        inputs += [(path, f"{name}/{path.relative_to(folder).as_posix()}") for path in iter_files(folder)]
    return inputs


def content_hash() -> str:
    """A short hash of the image's inputs (paths, bytes, exec bits): the image tag, so edits force a rebuild."""
    digest = hashlib.sha256()
    for path, name in image_inputs():
        digest.update(name.encode() + b"\0")
        digest.update(b"x" if os.access(path, os.X_OK) else b"-")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]
