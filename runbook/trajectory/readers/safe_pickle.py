"""Reading AgentLab's pickled steps (step_<N>.pkl.gz) without running anything they name: only known harmless
classes are rebuilt, everything else becomes an inert stand-in whose fields can still be read."""

from __future__ import annotations

import gzip
import pickle
import warnings
from pathlib import Path
from typing import Any

from ...errors import FolderUnreadable, InputError
from ..limits import DEFAULT_LIMITS, Counted, ReadLimits


def load_pickle(file: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Any:
    """The step pickle's content, its decompressed bytes bounded by `limits` (`ReadLimits.file_bytes`)."""
    try:
        with gzip.open(file, "rb") as fh, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _StepUnpickler(Counted(fh, str(file), limits)).load()
    except InputError:
        raise
    except (OSError, EOFError) as exc:
        raise FolderUnreadable(f"cannot read: {exc}", path=str(file)) from exc
    except Exception as exc:  # unpickling can fail in any way; all mean the same to the user
        raise FolderUnreadable(
            f"cannot rebuild this AgentLab pickle without AgentLab/BrowserGym installed ({type(exc).__name__}: "
            f"{exc}); export the steps as steps_info_<N>.json and read that folder instead",
            path=str(file),
        ) from exc


class _Opaque:
    """Stands in for a class that is not installed here, keeping the state it was pickled with."""

    _class_name = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Opaque:
        obj = object.__new__(cls)
        obj.__dict__["_args"] = args
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and all(s is None or isinstance(s, dict) for s in state):
            state = {**(state[0] or {}), **(state[1] or {})}  # (dict, slots) of a class with __slots__
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.__dict__["_state"] = state

    def append(self, item: Any) -> None:
        self.__dict__.setdefault("_items", []).append(item)

    def extend(self, items: Any) -> None:
        self.__dict__.setdefault("_items", []).extend(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__.setdefault("_mapping", {})[key] = value


_SAFE_GLOBALS = (
    {
        ("builtins", name)
        for name in (
            "set",
            "frozenset",
            "slice",
            "range",
            "complex",
            "bytearray",
            "bytes",
            "list",
            "dict",
            "tuple",
            "object",
            "int",
            "float",
            "str",
            "bool",
        )
    }
    | {
        ("copyreg", "_reconstructor"),
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("decimal", "Decimal"),
    }
    | {
        (module, name)
        for module in ("pathlib", "pathlib._local")
        for name in ("PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath")
    }
)
_NUMPY_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
}


class _StepUnpickler(pickle.Unpickler):
    """Rebuilds plain data and numpy arrays; every other class becomes an _Opaque holding its state.

    No pickled callable outside the allow-lists can run, so reading a step file never executes its code.
    """

    _opaque: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS or ((module, name) in _NUMPY_GLOBALS and _has_numpy()):
            return super().find_class(module, name)
        key = (module, name)
        if key not in self._opaque:
            self._opaque[key] = type(name, (_Opaque,), {"_class_name": f"{module}.{name}"})
        return self._opaque[key]


def _has_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def fields_of(obj: Any) -> dict:
    """A record's fields: the dict itself, or the attributes of a rebuilt or stand-in object."""
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, _Opaque):
        return {k: v for k, v in vars(obj).items() if k not in ("_args", "_state", "_items", "_mapping")}
    return dict(getattr(obj, "__dict__", {}) or {})
