"""A hostile call knows the wrapper and the backends: it double-forks, stops its parents, writes to other
processes' stdout, forges the trailer, fills scratch and memory, and makes namespaces. Each attack here ran against
the real engine and the real bwrap, and each used to succeed (issue 9)."""
from __future__ import annotations

import pytest


# -- 6: a NUL byte in an argument is refused at the boundary ---------------------------------------------------------
def test_nul_in_argv_or_stdin_is_a_sandbox_error(make_box):
    from runbook.errors import SandboxError
    box = make_box()
    with pytest.raises(SandboxError, match="NUL"):
        box.exec(["echo", "a\0b"], timeout=5)
    with pytest.raises(SandboxError, match="NUL"):
        box.exec("echo a\0b", timeout=5)
    with pytest.raises(SandboxError, match="NUL"):
        box.exec(["cat"], timeout=5, stdin="a\0b")
    assert box.exec(["echo", "fine"], timeout=5).output == "fine\n"
