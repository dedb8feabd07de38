"""Every number an option takes is checked when the command line is parsed (item 5 of issue 33): a value out of
range, nan or infinity is a usage error naming the option (exit 2), never a traceback, and never a silent surprise
(`--open-max-age 0` dropped every stream; `--max-sandboxes 0` made every C query wait 60 s for a 503)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from runbook.cli import main

BAD = [
    (["query", "Where?", "--budget", "999999999999999999999k"], "--budget"),
    (["query", "Where?", "--budget", "0"], "--budget"),
    (["answer", "Where?", "--budget", "lots"], "--budget"),
    (["insert", "x", "--workers", "0"], "--workers"),
    (["insert", "x", "--workers", "100000"], "--workers"),
    (["reindex", "--workers", "-3"], "--workers"),
    (["replay", "--lines", "-5"], "--lines"),
    (["sandbox", "exec", "--timeout", "3e6", "--", "true"], "--timeout"),
    (["sandbox", "exec", "--timeout", "nan", "--", "true"], "--timeout"),
    (["serve", "http", "--port", "99999"], "--port"),
    (["serve", "http", "--open-max-age", "nan"], "--open-max-age"),
    (["serve", "http", "--open-max-age", "1e308"], "--open-max-age"),
    (["serve", "http", "--open-max-age", "0"], "--open-max-age"),
    (["serve", "http", "--max-sandboxes", "-1"], "--max-sandboxes"),
    (["serve", "http", "--max-sandboxes", "0"], "--max-sandboxes"),
    (["serve", "http", "--max-open", "0"], "--max-open"),
    (["serve", "http", "--max-connections", "0"], "--max-connections"),
    (["serve", "http", "--header-timeout", "inf"], "--header-timeout"),
    (["serve", "http", "--body-timeout", "-1"], "--body-timeout"),
    (["serve", "http", "--idle-timeout", "0"], "--idle-timeout"),
    (["serve", "mcp", "--port", "0"], "--port"),
    (["serve", "mcp", "--max-sessions", "0"], "--max-sessions"),
    (["serve", "mcp", "--session-timeout", "nan"], "--session-timeout"),
]


@pytest.mark.parametrize("args,option", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_number_is_a_usage_error_naming_the_option(tmp_path, clean_env, args, option):
    result = CliRunner().invoke(main, ["--store", str(tmp_path / "store"), *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "store").exists()  # refused before anything ran


def test_the_budget_option_states_its_ceiling(tmp_path, clean_env):
    result = CliRunner().invoke(main, ["--store", str(tmp_path), "query", "Where?", "--budget", "2m"])
    assert result.exit_code == 2 and "over the maximum of 1,000,000 tokens" in result.output
