"""Screenshots named by a trajectory source: confined to the source's folder and checked to be images.

A trajectory file is untrusted input: a screenshot path like `../../etc/shadow`, an absolute path or a symlink
would otherwise copy a host file into the store, where the sandbox can read it. So a screenshot must resolve
(symlinks followed, as the kernel would) inside the folder of the file that names it, or inside the screenshot
root the user gave instead; it must be a regular file of at most MAX_SCREENSHOT_BYTES that Pillow reads as an
image. Readers call `locate` while validating; the store copies with `read_screenshot`, which opens the file
once without following links and checks what it read, so a file swapped after validation is not copied.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from ..errors import InputError, ScreenshotRefused
from ..images import NotAnImage, verify_image

NO_SCREENSHOT = "screenshots/no-screenshot.png"
"""What a state without a screenshot names in `runbook export lme-v2` (LongMemEval-V2's memories need an image for
every state): an image that says so. Readers take a state naming it as a state without a screenshot."""
MAX_SCREENSHOT_BYTES = 50 * 1024 * 1024
"""A browser screenshot is a few MB at most; a larger 'screenshot' is refused before it is read."""


def allowed_root(source_folder: str, screenshot_root: str | None) -> str:
    """The folder a source's screenshots must lie in: the user's screenshot root if given, else the source's."""
    return os.path.realpath(screenshot_root or source_folder)


def locate(
    value: str,
    source_folder: str,
    *,
    screenshot_root: str | None,
    field: str,
    where: dict[str, Any],
    also_under: tuple[str, ...] = (),
) -> str:
    """The real path of the screenshot `value` names (relative to `source_folder`, or under one of its
    `also_under` subfolders), checked; InputError naming the field otherwise."""
    if "\0" in value:
        raise InputError("contains a NUL byte: not a file path", field=field, **where)
    bases = [source_folder, *(os.path.join(source_folder, sub) for sub in also_under)]
    candidates = [value] if os.path.isabs(value) else [os.path.join(base, value) for base in bases]
    found = next((c for c in candidates if os.path.lexists(c)), candidates[0])
    return confine(found, allowed_root(source_folder, screenshot_root), field=field, where=where)


def confine(path: str, allowed: str, *, field: str, where: dict[str, Any]) -> str:
    """`path`'s real path when it lies inside `allowed` and holds an image; InputError naming the field otherwise."""
    real = os.path.realpath(path)
    if os.path.commonpath([real, allowed]) != allowed:
        raise InputError(
            f"{path} resolves to {real}, outside {allowed}: a screenshot must lie inside the folder "
            f"of the file that names it; pass --screenshot-root DIR to allow another folder",
            field=field,
            **where,
        )
    if not os.path.lexists(real):
        raise InputError(f"file not found: {path}", field=field, **where)
    try:
        read_screenshot(real)
    except ScreenshotRefused as exc:
        raise InputError(f"{real} {exc}", field=field, **where) from exc
    return real


def read_screenshot(path: str) -> bytes:
    """The bytes of the image at `path`, a real path: read through one descriptor opened without following
    links, so that what is checked is what is returned. ScreenshotRefused says what is wrong."""
    if "\0" in path:
        raise ScreenshotRefused("contains a NUL byte: not a file path")
    if os.path.realpath(path) != os.path.abspath(path):
        raise ScreenshotRefused(
            "passes through a symbolic link: a screenshot is read from its real path only, "
            "so that a file swapped after the input was checked cannot be copied"
        )
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise ScreenshotRefused("does not exist") from exc
    except OSError as exc:
        raise ScreenshotRefused(f"cannot be opened safely ({exc.strerror})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ScreenshotRefused("is not a regular file (a folder, FIFO, socket or device)")
        if info.st_size > MAX_SCREENSHOT_BYTES:
            raise ScreenshotRefused(
                f"is {info.st_size:,} bytes, larger than the {MAX_SCREENSHOT_BYTES:,} bytes a screenshot may have"
            )
        _check_opened(fd, path)
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_SCREENSHOT_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SCREENSHOT_BYTES:  # it grew after fstat
        raise ScreenshotRefused(f"is larger than the {MAX_SCREENSHOT_BYTES:,} bytes a screenshot may have")
    try:
        verify_image(data)
    except NotAnImage as exc:
        raise ScreenshotRefused(str(exc)) from exc
    return data


def _check_opened(fd: int, path: str) -> None:
    """The descriptor must be the file at `path`: a folder on the way swapped for a link shows up here (Linux)."""
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return  # no /proc: O_NOFOLLOW and the realpath check above are the guard
    if opened != os.path.abspath(path):
        raise ScreenshotRefused(f"was opened as {opened}: a symbolic link was put on its path after it was checked")


def placeholder_png() -> bytes:
    """The image NO_SCREENSHOT names: a line of text saying that no screenshot was recorded."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (640, 48), "white")
    try:
        font = ImageFont.load_default(size=22)
    except (TypeError, ImportError):  # Pillow before 10.1, or without FreeType: the small bitmap font
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((14, 12), "No screenshot was recorded for this state.", fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def names_no_screenshot(value: str) -> bool:
    """Whether a state's screenshot value is the export's placeholder (read as no screenshot)."""
    return os.path.normpath(value.strip()) == os.path.normpath(NO_SCREENSHOT)
