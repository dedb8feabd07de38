"""`runbook sandbox ...` through click, as a user types it."""
from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from runbook.cli.sandbox import sandbox


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
    result = runner.invoke(cli(tiny_store), ["sandbox", "exec", "--sandbox", "local", "--stdin", "--", "cat"],
                           input="from stdin")
    assert result.output.startswith("from stdin")


def test_exec_in_a_real_sandbox(backend, tiny_store):
    result = CliRunner().invoke(cli(tiny_store), ["sandbox", "exec", "--sandbox", backend, "--",
                                                  "rg", "-c", "Checkout", "/store"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "/store/trajectories/t-1/states/0000.md:1"


def test_check_json_reports_every_probe(backend, tiny_store):
    result = CliRunner().invoke(cli(tiny_store), ["sandbox", "check", "--sandbox", backend, "--json"])
    report = json.loads(result.output)
    assert report["backend"] == backend and report["passed"], result.output
    names = {p["name"] for p in report["probes"]}
    assert {"no DNS", "store read-only", "no connection to the host's loopback"} <= names
    assert result.exit_code == 0


def test_check_without_a_store_still_probes(backend, tmp_path):
    result = CliRunner().invoke(cli(tmp_path / "none"), ["sandbox", "check", "--sandbox", backend, "--json"])
    report = json.loads(result.output)
    assert "missing" in report["store"] and report["passed"]
