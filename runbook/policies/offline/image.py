"""The question image's signature, computed the same way the sandbox reads stored screenshots."""

from __future__ import annotations

import os

from ...core.images import image_hash, thumbnail


def question_image(path: str) -> dict[str, str] | None:
    """{hash: dHash hex, thumb: grey thumbnail hex} of the question's image; None without Pillow or when it
    cannot be read. The planner sees the image as a model would, and sends only this to the sandbox."""
    if not path or not os.path.isfile(path):
        return None
    try:
        bits, thumb = image_hash(path), thumbnail(path)
    except OSError:
        return None
    if bits is None:
        return None
    return {"hash": format(bits, "x"), "thumb": thumb or ""}
