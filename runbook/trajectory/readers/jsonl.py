"""This project's JSONL / JSONL.gz and LongMemEval-V2 `states`-form trajectories (JSON or JSONL)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ...errors import InputError
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


def read(path: Path, *, screenshot_root: str | None = None) -> Iterator[Trajectory | InputError]:
    """Stream trajectories: JSONL line by line; a .json file holds one trajectory or a list of them.

    Screenshots must lie in the file's folder, or in `screenshot_root` when given."""
    try:
        with _open_text(path) as fh:
            head = fh.peek(1)[:1] if hasattr(fh, "peek") else b""
            while head in (b" ", b"\n", b"\r", b"\t"):
                fh.read(1)
                head = fh.peek(1)[:1]
            if not head:
                raise InputError("the file is empty", path=str(path))
            if path.name.lower().endswith((".json", ".json.gz")) and head == b"[":
                yield from _read_json_document(fh, path, screenshot_root)
                return
            yield from _read_lines(fh, path, screenshot_root)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read: {exc}", path=str(path)) from exc


def _read_json_document(
    fh: gzip.GzipFile | io.BufferedReader, path: Path, screenshot_root: str | None
) -> Iterator[Trajectory | InputError]:
    # A JSON array must be parsed whole; such files are single-run exports, so this is bounded in practice.
    try:
        doc = orjson.loads(fh.read())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc}", path=str(path)) from exc
    for obj in doc:
        yield _convert(obj, path=path, line=None, screenshot_root=screenshot_root)


def _read_lines(
    fh: gzip.GzipFile | io.BufferedReader, path: Path, screenshot_root: str | None
) -> Iterator[Trajectory | InputError]:
    buffered = None
    n_records = 0
    for lineno, raw in enumerate(fh, start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if lineno == 1 and path.name.lower().endswith((".json", ".json.gz")):
                # a pretty-printed single JSON object spans many lines: parse the file as one document
                buffered = raw + fh.read()
                break
            yield InputError(f"malformed JSON: {exc}", path=str(path), line=lineno)
            n_records += 1
            continue
        n_records += 1
        yield _convert(obj, path=path, line=lineno, screenshot_root=screenshot_root)
    if buffered is not None:
        try:
            obj = orjson.loads(buffered)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc}", path=str(path)) from exc
        yield _convert(obj, path=path, line=None, screenshot_root=screenshot_root)
        return
    if n_records == 0:
        raise InputError("the file is empty", path=str(path))
