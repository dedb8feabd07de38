"""Is it an image? Pillow's verdict on bytes or an open file, shared by insert (screenshots) and query (--image)."""

from __future__ import annotations

import io
import warnings
from typing import BinaryIO

from .errors import NotAnImage

MAX_IMAGE_PIXELS = 25_000_000
"""Images with more pixels are refused from their header, before any pixel is decoded: a 12000 x 12000 PNG of
419 KB once took the host to 800 MB (Pillow itself only warns up to 179 million pixels). 25 million is a
5000 x 5000 image, or a full-page screenshot 1280 pixels wide and 19,500 tall."""


def verify_image(data: bytes | BinaryIO) -> str:
    """The image's format ('PNG', 'JPEG', ...), or NotAnImage: the file is parsed, not just its first bytes."""
    from PIL import Image, UnidentifiedImageError

    fh = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        with warnings.catch_warnings():
            # a huge pixel count is refused outright below; a large one is only a warning, not worth showing
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(fh) as img:  # reads the header only
                fmt = img.format or "image"
                width, height = img.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise NotAnImage(
                        f"has {width} x {height} = {width * height:,} pixels, more than the "
                        f"{MAX_IMAGE_PIXELS:,} an image may have here (a screenshot of 5000 x 5000)"
                    )
                img.verify()
    except NotAnImage:
        raise
    except UnidentifiedImageError as exc:
        raise NotAnImage("is not an image (Pillow recognises no image format in it)") from exc
    except Image.DecompressionBombError as exc:
        raise NotAnImage(f"has too many pixels to be a screenshot ({exc})") from exc
    except Exception as exc:  # Pillow signals a bad image with many exception types; all mean the same here
        raise NotAnImage(f"is not an image Pillow can read ({type(exc).__name__}: {exc})"[:300]) from exc
    return fmt
