"""Screenshots compared without a model: a dHash of each (its bits: brighter than the right neighbour) and grey
thumbnails for near ties. The host hashes the question's image with the same functions the sandbox uses on the
stored screenshots. Pillow is optional (None without it)."""

from __future__ import annotations

import os

from .catalog import Catalog
from .files import open_regular
from .layout import trajectory_relpath
from .scanout import ScoredState

HASH_SIZE = 16
THUMB = (64, 40)
MAX_PIXELS = 25_000_000
"""What the host lets in (runbook.images.MAX_IMAGE_PIXELS; this side runs in the sandbox, without runbook)."""
NO_PILLOW = "Pillow is not available in the sandbox"
"""What the scan prints instead of look-alike screenshots when it cannot read pictures."""
TIE_BITS, TIE_POOL = 4, 16
"""Screenshots within this many bits of the closest hash (at most this many) are told apart by their thumbnails."""


def grey_pixels(path: str, width: int, height: int) -> bytes | None:
    """The image in grey at width x height (bytes), or None without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return None
    with open_regular(path, "rb") as fh, Image.open(fh) as img:
        if img.size[0] * img.size[1] > MAX_PIXELS:  # from the header, before decoding: callers skip it
            raise OSError(f"{path}: {img.size[0]} x {img.size[1]} pixels is more than {MAX_PIXELS:,}")
        img.draft("L", (width * 4, height * 4))  # a JPEG decodes at a fraction of its size: far faster
        # Pillow defines the module-level Image.BILINEAR at import time (from Image.Resampling); its type hints
        # do not declare it
        return img.convert("L").resize((width, height), Image.BILINEAR).tobytes()  # type: ignore[attr-defined]


def image_hash(path: str, size: int = HASH_SIZE) -> int | None:
    """A dHash of `size` x `size` bits as an int: one bit per pixel brighter than its right neighbour (None
    without Pillow). Stored screenshots and the question's image go through the same function."""
    px = grey_pixels(path, size + 1, size)
    if px is None:
        return None
    bits = 0
    for row in range(size):
        for col in range(size):
            at = row * (size + 1) + col
            bits = bits << 1 | (px[at] > px[at + 1])
    return bits


def thumbnail(path: str) -> str | None:
    """The image in grey at THUMB size, hex: compared pixel by pixel when hashes tie (pages that differ in text)."""
    px = grey_pixels(path, *THUMB)
    return None if px is None else px.hex()


def nearest_screenshots(root: str, catalog: Catalog, question: dict, top: int) -> list[ScoredState] | None:
    """The stored screenshots that look most like the question's image (None without Pillow): dHash distance first,
    then, among the near ties, the mean difference of grey thumbnails."""
    found = []
    for (d, index), state in catalog.states.items():
        if not state.screenshot:
            continue
        # the header names it from the trajectory's folder
        path = os.path.join(root, trajectory_relpath(d), state.screenshot)
        try:
            h = image_hash(path)
        except OSError:
            continue
        if h is None:
            return None
        found.append((bin(h ^ int(question["hash"], 16)).count("1"), state.time, d, index, path))
    found.sort()
    if not found:
        return []
    near = [f for f in found if f[0] <= found[0][0] + TIE_BITS][:TIE_POOL]
    wanted = bytes.fromhex(question.get("thumb") or "")
    ranked = sorted((pixel_distance(wanted, f[4]), f) for f in near) + [(None, f) for f in found[len(near) :]]
    return [
        ScoredState(catalog.rows[d].id, index, time=time, hash_bits=dist, grey=px)
        for px, (dist, time, d, index, _path) in ranked[:top]
    ]


def pixel_distance(wanted: bytes, path: str) -> float:
    """Mean absolute grey difference to the question's thumbnail (0 = the same picture)."""
    if not wanted:
        return 0.0
    try:
        have = bytes.fromhex(thumbnail(path) or "")
    except OSError:
        return 255.0
    if len(have) != len(wanted):
        return 255.0
    return round(sum(abs(a - b) for a, b in zip(wanted, have)) / len(wanted), 3)
