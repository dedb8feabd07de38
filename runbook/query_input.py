"""What every query checks before any work: a question with words in it, and an image that is an image."""

from __future__ import annotations

import os
import stat

from .errors import QueryError
from .images import NotAnImage, verify_image

MAX_QUESTION_CHARS = 10_000
"""A question is a question, not a document: the longest dev question has 232 characters. The analysis is linear,
but every method reads the question many times (patterns, excerpts, the agent's prompt)."""


def check_query(question: str, image: str | os.PathLike | None = None) -> tuple[str, str | None]:
    """(question, image path) when both can be asked; QueryError saying what is wrong and what to do otherwise."""
    if not isinstance(question, str) or not question.strip():
        raise QueryError('the question is empty: ask something, e.g. runbook query "Where is the Bestsellers report?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryError(
            f"the question has {len(question):,} characters, over the limit of {MAX_QUESTION_CHARS:,}: ask it in "
            "fewer words (the evidence comes from the store, not from the question)"
        )
    if "\0" in question:
        raise QueryError("the question contains a NUL character: send the question as plain text")
    if not any(char.isalnum() for char in question):
        raise QueryError(f"the question {question[:40]!r} has no letter or digit: ask it in words")
    if image is None:
        return question, None
    path = os.fspath(image)
    if not os.path.exists(path):
        raise QueryError(f"image {path} does not exist: give the path of the screenshot the question is about")
    if os.path.isdir(path):
        raise QueryError(f"image {path} is a folder: give the path of one image file (PNG, JPEG, ...)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opened to wait for a writer hung the query
    except OSError as exc:
        raise QueryError(f"image {path} cannot be read ({exc.strerror}): check the path and its permissions") from exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise QueryError(f"image {path} is not a regular file (a FIFO, socket or device): give an image file")
        os.set_blocking(fd, True)
        try:
            verify_image(fh)
        except NotAnImage as exc:
            raise QueryError(f"image {path} {exc}: give a PNG, JPEG or other image file") from exc
        except OSError as exc:
            raise QueryError(
                f"image {path} cannot be read ({exc.strerror}): check the path and its permissions"
            ) from exc
    return question, path
