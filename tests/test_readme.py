"""The README's first commands, run as a new user runs them in a fresh clone (item 8 of issue 24)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from runbook.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    return README[start : README.index("\n## ", start + 1)]


def test_the_set_up_and_quick_start_need_nothing_a_clone_lacks():
    for title in ("Set-up", "Quick start"):
        assert "../shared" not in section(title), title


def test_the_first_query_on_the_quick_start_sample_does_not_mislead(tmp_path, clean_env):
    """It printed "Found in no stored state: 'must', 'data' - the question's premise may be false" and led with
    an unrelated run."""
    line = next(line for line in section("Set-up").splitlines() if "runbook query" in line)
    query = shlex.split(line.split("runbook query", 1)[1])
    store = str(tmp_path / ".runbook")
    assert CliRunner().invoke(main, ["--store", store, "insert", str(ROOT / "trajectories")]).exit_code == 0
    result = CliRunner().invoke(main, ["--store", store, "query", *query, "--json"])
    assert result.exit_code == 0, result.output
    context = json.loads(result.output)
    assert "premise may be false" not in context["analysis"] and "Found in no stored state" not in context["analysis"]
    assert context["items"][0]["trajectory_id"] == "gen-acme-6"  # the Bestsellers run
    assert re.search(r"'From'|From/To|textbox 'From'", context["analysis"] + context["items"][0]["text"])
