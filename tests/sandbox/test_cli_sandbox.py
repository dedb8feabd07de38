"""`runbook sandbox ...` through click, as a user types it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from runbook.cli.sandbox import sandbox
from runbook.errors import SandboxError
from runbook.sandbox import get_sandbox


def cli(store) -> click.Group:
    @click.group()
    @click.pass_context
    def main(ctx):
        ctx.ensure_object(dict)
        ctx.obj["store_path"] = str(store)

    main.add_command(sandbox)
    return main


@pytest.mark.parametrize("command", [[], ["build"], ["check"], ["exec"]])
def test_every_command_has_help_with_an_example(command, tmp_path):
    result = CliRunner().invoke(cli(tmp_path), ["sandbox", *command, "--help"])
    assert result.exit_code == 0 and "Example:" in result.output


def test_exec_local_exits_with_the_command_code(tiny_store):
    runner = CliRunner()
    result = runner.invoke(cli(tiny_store), ["sandbox", "exec", "--sandbox", "local", "--", "ls", "-a"])
    assert result.exit_code == 0
    result = runner.invoke(cli(tiny_store), ["sandbox", "exec", "--sandbox", "local", "--", "echo hi; exit 5"])
    assert result.exit_code == 5 and "hi" in result.output
    result = runner.invoke(
        cli(tiny_store), ["sandbox", "exec", "--sandbox", "local", "--stdin", "--", "cat"], input="from stdin"
    )
    assert result.output.startswith("from stdin")


def test_exec_in_a_real_sandbox(backend, tiny_store):
    result = CliRunner().invoke(
        cli(tiny_store), ["sandbox", "exec", "--sandbox", backend, "--", "rg", "-c", "Checkout", "/store"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "/store/trajectories/t-1/states/0000.md:1"


def test_check_reports_every_limit_and_runs_every_agent_tool(backend, tiny_store):
    result = CliRunner().invoke(cli(tiny_store), ["sandbox", "check", "--sandbox", backend, "--json"])
    report = json.loads(result.output)
    assert report["backend"] == backend and report["passed"] and result.exit_code == 0, result.output
    status = {limit["name"]: limit["status"] for limit in report["limits"]}
    for name in (
        "no DNS",
        "store read-only",
        "no connection to the host's loopback",
        "timeout ends every process (setsid child)",
        "a stopped wrapper still ends near its timeout",
        "output cap holds on the host (300 MB)",
        "output cannot forge the exit code",
        "no new user namespace or mount",
        "no unbounded tmpfs at /dev/shm",
        "an IPC namespace of its own, emptied after each call",
        "agent tool search runs",
        "agent tool show runs",
        "agent tool read runs",
        "agent tool python runs",
    ):
        assert status.get(name) == "enforced", (name, status.get(name))
    assert set(status.values()) <= {"enforced", "NOT ENFORCED"}
    if backend == "docker":
        assert status["no container log (log driver none)"] == "enforced" and not report["not_enforced"]
    assert "every claimed limit holds" in report["verdict"]
    docker, as_root, as_user = readme_check_counts()
    if backend == "docker":
        assert len(report["limits"]) == docker[0], "the README's count of docker's checks"
    elif os.geteuid() == 0:
        assert len(report["limits"]) == as_root[0], "the README's count of bwrap's checks, run as root"
    else:
        enforced = sum(limit["status"] == "enforced" for limit in report["limits"])
        assert [enforced, len(report["limits"]) - enforced] == as_user, "the README's counts for bwrap as a user"


def readme_check_counts() -> list[list[int]]:
    """The numbers in the README's row for `runbook sandbox check`: docker, bwrap as root, bwrap as a user."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `runbook sandbox check` |"))
    return [[int(n) for n in re.findall(r"\d+", cell)] for cell in row.strip().strip("|").split("|")[1:]]


def test_the_readme_states_the_docker_sandboxs_cpus():
    from runbook.sandbox.base import SandboxLimits

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| CPU |"))
    assert row.split("|")[2].strip().startswith(f"{SandboxLimits().cpus:g} CPUs"), row
    assert f"gets {('one', 'two')[int(SandboxLimits().cpus) - 1]} CPUs" in readme


def test_check_without_a_store_still_probes(tmp_path):
    from runbook.checks.sandbox import check_sandbox
    from runbook.sandbox.probes import Probe, command

    echo = Probe("timeout", "echo runs", command(["echo", "hi"], lambda r: r.output == "hi\n"))
    report = check_sandbox("local", tmp_path / "none", probes=[echo], tools=False)
    assert "missing" in report.store and report.passed and report.limits[0].status == "enforced"


def test_check_exits_1_when_a_claimed_limit_does_not_hold(tiny_store, monkeypatch):
    from runbook.sandbox import probes

    broken = probes.Probe("timeout", "a limit that does not hold", lambda box: (False, "the attack worked"))
    unclaimed = probes.Probe("network", "no network", lambda box: (True, "not run: local claims no network"))
    monkeypatch.setattr(probes, "probes", lambda limits: [broken, unclaimed])
    monkeypatch.setattr("runbook.checks.sandbox.agent_tool_results", lambda *args: [])
    result = CliRunner().invoke(cli(tiny_store), ["sandbox", "check", "--sandbox", "local"])
    assert result.exit_code == 1
    assert "FAILED        a limit that does not hold" in result.output and "the attack worked" in result.output
    assert "NOT ENFORCED  no network" in result.output and "isolates nothing" in result.output
    monkeypatch.setattr(probes, "probes", lambda limits: [unclaimed])
    assert CliRunner().invoke(cli(tiny_store), ["sandbox", "check", "--sandbox", "local"]).exit_code == 0
    strict = CliRunner().invoke(cli(tiny_store), ["sandbox", "check", "--sandbox", "local", "--strict"])
    assert strict.exit_code == 1 and "NOT ENFORCED here: network" in strict.output


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1", "0", "3e6"])
def test_exec_refuses_a_timeout_that_is_not_a_positive_number_without_a_traceback(tiny_store, timeout):
    """Item 5 of issue 33: `--timeout 3e6` ended in an OverflowError traceback; now every bad timeout is a usage
    error when the command line is parsed."""
    from runbook.cli import main

    result = CliRunner().invoke(
        main, ["--store", str(tiny_store), "sandbox", "exec", "--sandbox", "local", "--timeout", timeout, "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # a clear line, not an uncaught error
    assert "Invalid value for '--timeout'" in result.output and "Traceback" not in result.output


def test_the_library_refuses_a_timeout_past_the_ceiling(tiny_store):
    with get_sandbox("local", tiny_store) as box, pytest.raises(SandboxError, match="at most 86400"):
        box.exec("true", timeout=3e6)
