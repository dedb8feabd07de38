"""Opening a store file where the core reads one (the sandbox's programs above all): a regular file only; a symbolic
link is not followed and a FIFO is never waited on. The host reads through runbook.store.safe_read, which also
refuses a link anywhere on the path; inside the sandbox only the store is mounted, so the file itself is what matters
(a FIFO planted among the state files held each tool call that opened it for its whole timeout: method C took 61 s).
And the one way an array file (a cache) is written: into a temporary file of its own, renamed into place.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from .errors import NotRegularFile

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def check_regular(path: str | os.PathLike) -> None:
    """NotRegularFile unless `path` itself (not what a link points to) is a regular file; FileNotFoundError when
    it does not exist. For a file opened by another library (SQLite)."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", os.fspath(path))


def open_regular(path: str | os.PathLike, mode: str = "r", **text_options: Any) -> IO:
    """`path` opened for reading ('r' text, with `text_options` such as encoding; 'rb' bytes); NotRegularFile when it
    is not a regular file or is a symbolic link."""
    try:
        fd = os.open(path, _FLAGS)  # non-blocking: opening a FIFO returns at once instead of waiting for a writer
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "a symbolic link, not followed", os.fspath(path)) from exc
        raise
    try:
        file_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(file_mode):
            raise NotRegularFile(errno.EINVAL, f"{_kind(file_mode)}, not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **text_options)
    except BaseException:
        os.close(fd)
        raise


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def save_atomic(path: Path, **arrays: Any) -> bool:
    """`np.savez` into a temporary file of its own, renamed over `path`; best effort (False on an OSError).
    A name of its own: two threads of one server once shared `<name>.tmp<pid>`, and one renamed the other's
    half-written file into place (EOFError for every reader after it)."""
    import numpy as np

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz", dir=path.parent)  # O_EXCL
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


def load_arrays(fh: IO[bytes]) -> dict[str, Any]:
    """The arrays of an `np.savez` file (save_atomic's), memory-mapped from the open file `fh`: a reader pages in
    only the parts it reads (a query reads its own terms' postings), so a billion-token store's indexes do not all
    become resident. Members stored compressed, or a layout this does not know, are read whole (np.load).
    A mapped file must never be cut short in place (a read past its new end is a bus error): every cache is written
    by save_atomic, a new file renamed into place, and the mapping keeps the old one while it lives."""
    import mmap
    import zipfile

    import numpy as np

    try:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # an empty file, or one that cannot be mapped
        mapped = None
    arrays: dict[str, Any] = {}
    with zipfile.ZipFile(fh) as archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            array = _mapped_member(mapped, info) if mapped is not None else None
            if array is None:
                with archive.open(info) as member:
                    array = np.lib.format.read_array(member, allow_pickle=False)
            arrays[name] = array
    return arrays


def _mapped_member(mapped: Any, info: Any) -> Any:
    """One stored (uncompressed) .npy member of a zip file as an array over `mapped`; None when it cannot be."""
    import io
    import struct
    import zipfile

    import numpy as np

    if info.compress_type != zipfile.ZIP_STORED:
        return None
    local = mapped[info.header_offset : info.header_offset + 30]
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_len + extra_len
    head = io.BytesIO(mapped[start : start + min(info.file_size, 1 << 16)])
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    else:
        return None
    if fortran or dtype.hasobject:
        return None
    count = int(np.prod(shape, dtype=np.int64))
    offset = start + head.tell()
    if offset + count * dtype.itemsize > start + info.file_size:
        return None  # truncated: np.load says so
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=offset).reshape(shape)
