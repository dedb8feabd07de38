"""Picking a backend by name, limits, auto's fallbacks, the fake, and how results are read."""

from __future__ import annotations

import pytest

from runbook.errors import SandboxError
from runbook.sandbox import ExecResult, Sandbox, SandboxLimits, get_sandbox, select
from runbook.sandbox.inside import COUNT_CAP
from runbook.sandbox.output import STDIN_CHUNK, stdin_env, to_result


def test_unknown_backend_and_limit_are_named(tmp_path):
    with pytest.raises(SandboxError, match="unknown sandbox 'podman'.*auto, docker, bwrap, local"):
        get_sandbox("podman", tmp_path)
    with pytest.raises(SandboxError, match="unknown option.*memroy_mb.*limits are.*memory_mb"):
        get_sandbox("local", tmp_path, memroy_mb=5)


def test_limits_reach_the_backend(tmp_path):
    box = get_sandbox("local", tmp_path, memory_mb=99, pids=7)
    assert box.limits == SandboxLimits(memory_mb=99, pids=7)
    assert isinstance(box, Sandbox)


def test_fake_sandbox_records_calls(tmp_path):
    replies = {"search": (0, "hit"), "boom": ExecResult(2, "bad", False, False, 0.1)}
    with get_sandbox("fake", tmp_path, handler=lambda argv, stdin: replies[argv[0]]) as box:
        assert box.exec(["search", "x"], timeout=1).output == "hit"
        assert box.exec(["boom"], timeout=1).exit_code == 2
    assert box.calls == [["search", "x"], ["boom"]]


def test_auto_without_engine_or_bwrap_says_how_to_get_one(monkeypatch, tmp_path):
    def no_engine(*a, **k):
        raise SandboxError("no Docker engine answers")

    monkeypatch.setattr("runbook.sandbox.engine.connect", no_engine)
    monkeypatch.setattr(select, "bwrap_works", lambda: (False, "bubblewrap is not installed"))
    with pytest.raises(SandboxError) as info:
        get_sandbox("auto", tmp_path)
    message = str(info.value)
    assert "docker-engine.sh" in message and "apt-get install -y bubblewrap" in message
    assert "--sandbox local" in message


def test_auto_falls_back_to_bwrap(monkeypatch, tmp_path):
    def no_engine(*a, **k):
        raise SandboxError("no Docker engine answers")

    monkeypatch.setattr("runbook.sandbox.engine.connect", no_engine)
    monkeypatch.setattr(select, "bwrap_works", lambda: (True, "works"))
    assert get_sandbox("auto", tmp_path).name == "bwrap"


@pytest.mark.docker
def test_auto_prefers_docker(docker_engine, tmp_path):
    assert get_sandbox("auto", tmp_path).name == "docker"


NONCE = "0123456789abcdef"


def parse(raw: bytes, **options):
    return to_result(
        raw, **{"nonce": NONCE, "fallback_exit": None, "timeout": 5, "seconds": 0.1, "output_bytes": 100, **options}
    )


def test_result_parsing():
    result = parse(b"hello\x1erunbook-%s 3 0 0" % NONCE.encode())
    assert (result.exit_code, result.output, result.truncated, result.timed_out) == (3, "hello", False, False)
    cut = parse(b"abc\x1erunbook-%s 0 1234 0" % NONCE.encode(), output_bytes=3)
    assert cut.truncated and cut.cut_bytes == 1234 and "1,234 more bytes were not shown" in cut.output
    stopped = parse(b"y\x1erunbook-%s 137 %d 0" % (NONCE.encode(), COUNT_CAP), output_bytes=1)
    assert "at least" in stopped.output
    timed = parse(b"\x1erunbook-%s 137 0 1" % NONCE.encode(), timeout=1)
    assert timed.timed_out and timed.exit_code == 137 and "timed out after 1 s" in timed.output
    oom = parse(b"\x1erunbook-%s 137 0 0" % NONCE.encode())
    assert not oom.timed_out and oom.exit_code == 137
    no_trailer = parse(b"x" * 50, fallback_exit=9, output_bytes=10)
    assert (
        no_trailer.exit_code == 9
        and no_trailer.cut_bytes == 40
        and "killed before it could report" in no_trailer.output
    )
    late = parse(b"partial", late=True)
    assert late.timed_out and late.exit_code == 137 and late.output.startswith("partial\n[runbook: timed out")


def test_a_trailer_without_the_calls_nonce_is_output():
    forged = parse(b"hi\x1erunbook-%s 0 0 0" % (b"f" * 16), fallback_exit=137)
    assert forged.exit_code == 137 and not forged.ok and "runbook-ffff" in forged.output
    old_style = parse(b"hi\x1erunbook-cut 0\x1erunbook-exit 0", fallback_exit=137)
    assert old_style.exit_code == 137


def test_stdin_is_split_into_env_chunks():
    env = stdin_env("a" * (STDIN_CHUNK * 2 + 1))
    assert list(env) == ["RUNBOOK_STDIN_000", "RUNBOOK_STDIN_001", "RUNBOOK_STDIN_002"]
    assert stdin_env("") == {"RUNBOOK_STDIN_000": ""}
    with pytest.raises(SandboxError, match="/scratch"):
        stdin_env("x" * 2_000_000)
