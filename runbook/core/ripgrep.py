"""Running ripgrep over a store's state files: the binary, literal patterns, header-field anchoring and its JSON
output read back into lines and match spans."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable

from .records import RbkError
from .statefile import FIELDS  # noqa: F401  (the fields a pattern can be anchored to)

_RG_META = set("\\.+*?()|[]{}^$")


def ripgrep_binary() -> str:
    """ripgrep's path: env RUNBOOK_RG, one installed beside this Python, or the one on PATH."""
    if os.environ.get("RUNBOOK_RG"):
        return os.environ["RUNBOOK_RG"]
    for python in (sys.executable, os.path.realpath(sys.executable)):
        sibling = os.path.join(os.path.dirname(python), "rg")
        if python and os.access(sibling, os.X_OK):
            return sibling  # avoids version-manager shims, which cost ~100 ms per call
    found = shutil.which("rg")
    if not found:
        raise RbkError(
            "ripgrep (rg) is not on PATH: install it (apt-get install ripgrep / pip install ripgrep) "
            "or set RUNBOOK_RG to its path"
        )
    return found


def escape_regex(text: str) -> str:
    """A ripgrep regex matching `text` literally."""
    return "".join("\\" + ch if ch in _RG_META else ch for ch in text)


def _pattern_body(pattern: str, fixed: bool, word: bool) -> str:
    body = escape_regex(pattern) if fixed else pattern
    return rf"\b(?:{body})\b" if word else body


def _anchored(body: str, fields: Iterable[str]) -> str:
    """A regex matching `body` only on the header lines of `fields`."""
    names = "|".join(fields)  # case-sensitive even under -i, so that page lines like 'Error: ...' stay out
    if body.startswith("^"):
        return f"^(?-i:{names}): (?:{body[1:]})"
    return f"^(?-i:{names}): .*?(?:{body})"


def _field_of(text: str, line_number: int, n_header: int) -> str:
    if n_header and line_number < n_header:
        return text.partition(": ")[0].strip() or "text"
    return "text"


def _decode(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "replace")


def _parse_rg_json(output: str) -> dict:
    """path -> {line_number: (text, is_match, [(start, end) char spans])} from `rg --json` output."""
    by_path: dict = {}
    for raw in output.splitlines():
        if not raw.startswith('{"type":"match"') and not raw.startswith('{"type":"context"'):
            continue
        msg = json.loads(raw)
        data = msg["data"]
        path = _decode(data["path"])
        text = _decode(data["lines"]).rstrip("\n")
        spans = []
        if msg["type"] == "match":
            encoded = text.encode("utf-8")
            for sub in data.get("submatches", []):
                start = len(encoded[: sub["start"]].decode("utf-8", "replace"))
                end = len(encoded[: sub["end"]].decode("utf-8", "replace"))
                spans.append((start, end))
        by_path.setdefault(path, {})[data["line_number"]] = (text, msg["type"] == "match", spans)
    return by_path


def _python_regex(pattern: str, filters: dict) -> re.Pattern | None:
    """The pattern as a Python regex when it compiles as one (ripgrep's syntax is close), else None."""
    flags = re.I if filters.get("ignore_case") else 0
    body = re.escape(pattern) if filters.get("fixed") else pattern
    try:
        return re.compile(body, flags)
    except re.error:
        return None
