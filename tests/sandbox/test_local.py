"""The local backend: no isolation, but the same commands, limits on time and output, and the same env."""

from __future__ import annotations

import logging

import pytest

from runbook.errors import SandboxError
from runbook.sandbox import get_sandbox


@pytest.fixture
def local(tiny_store):
    with get_sandbox("local", tiny_store, output_bytes=500) as box:
        yield box


def test_warns_that_it_isolates_nothing(tiny_store, caplog):
    with caplog.at_level(logging.WARNING):
        with get_sandbox("local", tiny_store):
            pass
    assert "isolates nothing" in caplog.text


def test_store_env_and_scratch_cwd(local, tiny_store):
    result = local.exec('echo "$RUNBOOK_STORE_DIR"; pwd; ls "$RUNBOOK_STORE_DIR"', timeout=10)
    store_dir, cwd, *listing = result.output.split("\n")
    assert store_dir == str(tiny_store) and cwd == str(local.scratch) and "runbook.json" in listing


def test_search_the_store(local):
    result = local.exec(["rg", "-n", "Checkout", "."], timeout=10)  # cwd is scratch: nothing there
    assert result.exit_code == 1
    result = local.exec('rg -n Checkout "$RUNBOOK_STORE_DIR"', timeout=10)
    assert result.ok and "0000.md:2:Checkout button" in result.output


def test_timeout_output_cut_exit_code_stdin(local):
    slow = local.exec("sleep 20", timeout=0.5)
    assert slow.timed_out and slow.seconds < 3
    big = local.exec("seq 1 100000", timeout=10)
    assert big.truncated and big.cut_bytes == len("".join(f"{i}\n" for i in range(1, 100001))) - 500
    assert local.exec(["bash", "-c", "exit 4"], timeout=10).exit_code == 4
    assert local.exec(["cat"], timeout=10, stdin="in\n").output == "in\n"


def test_scratch_removed_at_stop(tiny_store):
    with get_sandbox("local", tiny_store) as box:
        box.exec("touch file", timeout=10)
        scratch = box.scratch
        assert (scratch / "file").exists()
    assert not scratch.exists()


def test_exec_before_start_and_bad_commands_say_what_to_do(tiny_store):
    box = get_sandbox("local", tiny_store)
    with pytest.raises(SandboxError, match="not started"):
        box.exec("true", timeout=1)
    with box:
        with pytest.raises(SandboxError, match="non-empty list"):
            box.exec([], timeout=1)
        with pytest.raises(SandboxError, match="timeout must be a positive number"):
            box.exec("true", timeout=0)


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(SandboxError, match="does not exist.*runbook insert"):
        get_sandbox("local", tmp_path / "nope").start()
