"""The state file: a header of single-line fields, a `---` line, then the page text. Defined once for the host (which
writes and reads it) and the sandbox programs (which read it); stdlib only.

    trajectory: wa-shopping_admin-782
    state: 9 of 12
    time: 2025-12-18T22:17:41.342Z
    url: http://localhost:7780/admin/catalog/product/
    ...
    ---
    RootWebArea 'Products / Inventory / Catalog / Magento Admin', focused
"""

from __future__ import annotations

import os

from .files import open_regular

HEADER_END = "---"
NEWLINE_MARK = " ⏎ "
HEADER_FIELDS = ("trajectory", "state", "time", "url", "title", "action", "error", "thought", "screenshot")
FIELDS = HEADER_FIELDS + ("text",)
"""What a search can be limited to: a header field, or the page text."""
UNKNOWN_TIME = "unknown"
"""A state's `time:` line when its source recorded no time (never blank: a reader can tell it was not recorded)."""
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character some reader of a state file ends a line at: ripgrep (\\n), Python's text files (\\r too) and
str.splitlines (all of them)."""
_TO_MARK = {ord(ch): NEWLINE_MARK for ch in LINE_BREAKS}


def one_line(value: str | None) -> str:
    """`value` on one line for every parser: each line break (\\r\\n counts as one) becomes NEWLINE_MARK."""
    if not value:
        return ""
    return value.replace("\r\n", "\n").translate(_TO_MARK)


def header_time(fields: dict[str, str]) -> str | None:
    """A state file's time, or None when none was recorded (`time: unknown`, or blank in stores written before)."""
    value = (fields.get("time") or "").strip()
    return None if value in ("", UNKNOWN_TIME) else value


def render_header(fields: dict[str, str | None]) -> str:
    """The header lines and the `---` line, every field (in HEADER_FIELDS order) on one line."""
    return "\n".join(f"{key}: {one_line(fields.get(key))}" for key in HEADER_FIELDS) + f"\n{HEADER_END}\n"


def parse_state(text: str) -> tuple[dict[str, str], str, int]:
    """(header fields, page text, number of header lines incl. '---') of a state file's content."""
    head, sep, body = text.partition(f"\n{HEADER_END}\n")
    if not sep:
        return {}, text, 0
    fields = {}
    for line in head.split("\n"):
        key, _, value = line.partition(": ")
        fields[key.strip()] = value.replace(NEWLINE_MARK, "\n")
    return fields, body, head.count("\n") + 2


def read_header(path: str | os.PathLike) -> tuple[dict[str, str], int]:
    """(header fields, number of header lines incl. '---') of a state file, reading only the header."""
    fields: dict[str, str] = {}
    n = 0
    with open_regular(path, encoding="utf-8", errors="replace", newline="\n") as fh:
        for line in fh:
            n += 1
            line = line.rstrip("\n")
            if line == HEADER_END:
                return fields, n
            key, _, value = line.partition(": ")
            fields[key.strip()] = value.replace(NEWLINE_MARK, "\n")
    return fields, 0
