"""A question's image sent as base64 (HTTP, MCP), held as a temporary file for the query that reads it."""

from __future__ import annotations

import base64
import binascii
import tempfile
from pathlib import Path
from typing import IO

from ..errors import InputError


class image_file:
    """The question's base64 image as a temporary file for the query (None without one)."""

    def __init__(self, data: str | None):
        self.data = data
        self.tmp: IO[bytes] | None = None

    def __enter__(self) -> str | None:
        if not self.data:
            return None
        try:
            raw = base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InputError(f"is not base64: {exc}", field="image_base64") from exc
        self.tmp = tempfile.NamedTemporaryFile(prefix="runbook-query-", suffix=".img", delete=False)
        self.tmp.write(raw)
        self.tmp.close()
        return self.tmp.name

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            Path(self.tmp.name).unlink(missing_ok=True)
