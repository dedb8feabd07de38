"""Is it an image? Pillow's verdict on bytes or an open file, shared by insert (screenshots) and query (--image)."""

from __future__ import annotations

import io
import warnings
from typing import BinaryIO


class NotAnImage(ValueError):
    """Pillow cannot read these bytes as an image; the message says why."""


def verify_image(data: bytes | BinaryIO) -> str:
    """The image's format ('PNG', 'JPEG', ...), or NotAnImage: the file is parsed, not just its first bytes."""
    from PIL import Image, UnidentifiedImageError

    fh = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        with warnings.catch_warnings():
            # a huge pixel count is refused outright below; a large one is only a warning, not worth showing
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(fh) as img:
                fmt = img.format or "image"
                img.verify()
    except UnidentifiedImageError as exc:
        raise NotAnImage("is not an image (Pillow recognises no image format in it)") from exc
    except Image.DecompressionBombError as exc:
        raise NotAnImage(f"has too many pixels to be a screenshot ({exc})") from exc
    except Exception as exc:  # Pillow signals a bad image with many exception types; all mean the same here
        raise NotAnImage(f"is not an image Pillow can read ({type(exc).__name__}: {exc})"[:300]) from exc
    return fmt
