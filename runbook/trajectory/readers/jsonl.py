"""This project's JSONL / JSONL.gz and LongMemEval-V2 `states`-form trajectories (JSON or JSONL)."""

from __future__ import annotations

import gzip
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ...errors import InputError
from ..limits import DEFAULT_LIMITS, ReadLimits, bounded_lines, read_document
from ..model import Trajectory, trajectory_from_dict
from .content_form import from_content_form, is_content_form

NAME = "jsonl"
_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson")


def detect(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(_SUFFIXES)


def _open_text(path: Path) -> gzip.GzipFile | io.BufferedReader:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _convert(obj: Any, *, path: Path, line: int | None, screenshot_root: str | None) -> Trajectory | InputError:
    options: dict[str, Any] = {
        "path": str(path),
        "line": line,
        "base_dir": str(path.parent),
        "screenshot_root": screenshot_root,
    }
    try:
        if isinstance(obj, dict) and "states" not in obj:
            if is_content_form(obj):  # LongMemEval-V2's content+metadata form
                return from_content_form(obj, **options)
        return trajectory_from_dict(obj, **options)
    except InputError as exc:
        return exc


def read(
    path: Path, *, screenshot_root: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> Iterator[Trajectory | InputError]:
    """Stream trajectories: JSONL line by line; a .json file holds one trajectory or a list of them.

    Screenshots must lie in the file's folder, or in `screenshot_root` when given. The decompressed bytes of the
    file and of each line (a .json file's whole document) are bounded by `limits` (trajectory/limits.py)."""
    try:
        with _open_text(path) as fh:
            lines = bounded_lines(fh, str(path), limits)
            first = next(lines, None)
            if first is None:
                raise InputError("the file is empty", path=str(path))
            if _is_document(path, first[1]):
                yield from _read_json_document(path, screenshot_root, limits)
                return
            for lineno, raw in itertools.chain([first], lines):
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    yield InputError(f"malformed JSON: {exc}", path=str(path), line=lineno)
                    continue
                yield _convert(obj, path=path, line=lineno, screenshot_root=screenshot_root)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read: {exc}", path=str(path)) from exc


def _is_document(path: Path, first_line: bytes) -> bool:
    """A .json file that is one JSON document: a list of trajectories, or one object pretty-printed over many
    lines (its first line alone is not JSON); otherwise it is read as JSONL."""
    if not path.name.lower().endswith((".json", ".json.gz")):
        return False
    if first_line.lstrip()[:1] == b"[":
        return True
    try:
        orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return True
    return False


def _read_json_document(
    path: Path, screenshot_root: str | None, limits: ReadLimits
) -> Iterator[Trajectory | InputError]:
    with _open_text(path) as fh:
        data = read_document(fh, str(path), limits)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc}", path=str(path)) from exc
    for obj in doc if isinstance(doc, list) else [doc]:
        yield _convert(obj, path=path, line=None, screenshot_root=screenshot_root)
