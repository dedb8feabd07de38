"""A hostile call knows the wrapper and the backends: it double-forks, stops its parents, writes to other
processes' stdout, forges the trailer, fills scratch and memory, and makes namespaces. Each attack here ran against
the real engine and the real bwrap, and each used to succeed (issue 9)."""
from __future__ import annotations

import os

import pytest

from conftest import TEST_LIMITS  # noqa: E402  (tests/sandbox/conftest.py)


# -- 3: no container log to fill -------------------------------------------------------------------------------------
@pytest.mark.docker
def test_sandbox_container_keeps_no_log(docker_engine, tiny_store):
    from runbook.sandbox import get_sandbox
    with get_sandbox("docker", tiny_store, engine=docker_engine[0], **TEST_LIMITS) as box:
        box.exec("head -c 5000000 /dev/zero > /proc/1/fd/1; head -c 5000000 /dev/zero > /proc/1/fd/2", timeout=20)
        box.container.reload()
        assert box.container.attrs["HostConfig"]["LogConfig"]["Type"] == "none"
        log_path = box.container.attrs.get("LogPath") or ""
        assert not log_path or not os.path.exists(log_path) or os.path.getsize(log_path) == 0


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
