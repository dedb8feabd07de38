"""No function over 60 lines outside tests: a reader can hold one in their head."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60
"""From the `def` line to the last line of the body, nested functions counted in their outer one too."""
PROGRAMS = ["runbook/sandbox/programs/recall", "runbook/sandbox/programs/search", "runbook/sandbox/programs/show",
            "runbook/sandbox/programs/rbplan"]  # fmt: skip
"""The sandbox programs: Python files without a suffix."""


def code_files() -> list[str]:
    found = [
        str(p.relative_to(ROOT))
        for folder in ("runbook", "benchmarks", "scripts")
        for p in (ROOT / folder).rglob("*.py")
    ]
    return sorted(found + PROGRAMS)


def long_functions(path: str, root: Path = ROOT) -> list[str]:
    tree = ast.parse((root / path).read_text(encoding="utf-8"), filename=path)
    return [
        f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_LINES
    ]


def test_no_function_is_over_60_lines():
    files = code_files()
    assert len(files) > 150 and all((ROOT / p).is_file() for p in PROGRAMS)
    too_long = [f for path in files for f in long_functions(path)]
    assert not too_long, "split these into functions of at most 60 lines:\n" + "\n".join(too_long)


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def planted():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions("long.py", tmp_path) == [f"long.py:1 planted ({MAX_LINES + 1} lines)"]
