"""The declared dependencies are exactly what the code imports, and the sandbox's files ship inside the package."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "runbook"
PROGRAMS = PACKAGE / "sandbox" / "programs"
BINARY_ONLY = {"ripgrep"}
"""Declared for the executable they install, never imported."""
HARNESS_MODULES = {"memory_modules", "data", "evaluation"}
"""LongMemEval-V2's own packages: the harness adapter imports them from the harness checkout it runs in."""


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower().replace("_", "-")


def _imported_modules() -> set[str]:
    """Top-level modules the host package imports (the sandbox programs run elsewhere, on the stdlib alone)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if PROGRAMS in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    sandbox_modules = {p.stem for p in PROGRAMS.glob("*.py")}  # imported by code that runs inside the sandbox
    return {
        m
        for m in found
        if m not in sys.stdlib_module_names and m != "runbook" and m not in sandbox_modules and m not in HARNESS_MODULES
    }


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_declared_dependencies_are_exactly_the_imported_ones():
    project = _project()
    required = {_requirement_name(spec) for spec in project["dependencies"]}
    extras = {_requirement_name(spec) for group in project.get("optional-dependencies", {}).values() for spec in group}
    dists = packages_distributions()
    imported = set()
    for module in _imported_modules():
        names = dists.get(module)
        assert names, f"runbook imports {module!r}, which no installed distribution provides"
        imported.update(name.lower().replace("_", "-") for name in names)
    undeclared = imported - required - extras
    assert not undeclared, f"imported but not declared in pyproject.toml: {sorted(undeclared)}"
    unused = required - imported - BINARY_ONLY
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_no_dependency_needs_a_source_build_of_ripgrep():
    pins = [spec for spec in _project()["dependencies"] if _requirement_name(spec) == "ripgrep"]
    assert pins == ["ripgrep==14.1.0"], "ripgrep 15.x has no wheels; its source build needs the Rust crate registry"


def test_sandbox_files_ship_as_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["runbook.sandbox"]
    shipped = {
        p.relative_to(PACKAGE / "sandbox").as_posix()
        for pattern in patterns
        for p in (PACKAGE / "sandbox").glob(pattern)
        if p.is_file()
    }
    assert {"Dockerfile", "programs/search", "programs/show", "programs/rbk.py"} <= shipped
    assert not (ROOT / "tools").exists() and not (ROOT / "sandbox_image").exists()


def test_a_missing_sandbox_fails_the_suite_unless_skipping_is_asked_for(monkeypatch):
    import pytest

    from tests.conftest import ALLOW_SKIP_ENV, sandbox_missing

    monkeypatch.delenv(ALLOW_SKIP_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="scripts/docker-engine.sh"):
        sandbox_missing("no Docker engine")
    monkeypatch.setenv(ALLOW_SKIP_ENV, "1")
    with pytest.raises(pytest.skip.Exception):
        sandbox_missing("no Docker engine")
    monkeypatch.setenv("CI", "true")  # CI never skips an isolation test
    with pytest.raises(pytest.fail.Exception):
        sandbox_missing("no Docker engine")
