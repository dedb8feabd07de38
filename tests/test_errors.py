"""One error tree: every exception class runbook defines is drawn in errors.py's docstring, where it really sits,
importable from runbook.errors, or named there as outside the tree on purpose."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import runbook
from runbook import errors

_NODE = re.compile(r"^(?P<indent>(?:[│ ]   )*)(?:[├└]── )?(?P<name>[A-Z]\w+)\s")


def drawn_tree() -> tuple[dict[str, str | None], set[str]]:
    """({class: its parent in the drawing}, names listed as outside the tree) from errors.py's docstring."""
    tree_text, _, outside_text = (errors.__doc__ or "").partition("Outside the tree")
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in tree_text.splitlines():
        node = _NODE.match(line)
        if not node or not line.startswith(("RunbookError", "│", "├", "└")):
            continue
        depth = len(node["indent"]) // 4 + (0 if line.startswith("RunbookError") else 1)
        path[depth:] = [node["name"]]
        parents[node["name"]] = path[depth - 1] if depth else None
    outside = {m.group(1) for m in re.finditer(r"^([A-Z]\w+)\s{2,}", outside_text, re.M)}
    return parents, outside


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the runbook package, by name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(runbook.__path__, "runbook."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("runbook."):
                assert found.get(obj.__name__, obj) is obj, f"two exception classes are called {obj.__name__}"
                found[obj.__name__] = obj
    return found


def test_the_drawing_is_the_class_tree():
    parents, _ = drawn_tree()
    assert parents["RunbookError"] is None and len(parents) > 20
    for name, parent in parents.items():
        cls = getattr(errors, name, None)
        assert cls is not None and name in errors.__all__, f"{name} is drawn but not importable from runbook.errors"
        if parent is not None:
            assert getattr(errors, parent) in cls.__bases__, f"{name} is drawn under {parent}, but its bases differ"


def test_every_exception_class_is_in_the_tree_or_outside_it_on_purpose():
    parents, outside = drawn_tree()
    assert outside == {"AgentStop", "BodyOverLimit", "Interrupted"}
    for name, cls in defined_exceptions().items():
        if name in parents:
            assert issubclass(cls, errors.RunbookError) and getattr(errors, name) is cls
            continue
        roots = [base.__name__ for base in cls.__mro__ if base.__name__ in outside]
        assert roots, f"{cls.__module__}.{name} is neither drawn in runbook/errors.py's tree nor outside it"
        assert not issubclass(cls, errors.RunbookError), f"{name} is named outside the tree but is under it"


def test_the_core_errors_are_caught_as_runbook_errors_on_the_host():
    from runbook.core.files import open_regular
    from runbook.core.pools import PoolError

    assert issubclass(PoolError, runbook.RunbookError) and runbook.RunbookError is errors.RunbookError
    try:
        open_regular("/dev/null")
    except runbook.RunbookError as exc:
        assert isinstance(exc, OSError) and "not a regular file" in str(exc)
    else:
        raise AssertionError("a device opened as a store file")
