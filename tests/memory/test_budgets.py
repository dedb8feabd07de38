"""No method ever returns more tokens than its budget, however small: fewer items, down to none, and it says so.
Checked over budgets 1..N on a real store for methods r, bm25 and c, in all three renderings."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from runbook.agent.exceptions import Finished
from runbook.agent.loop import AgentRun
from runbook.agent.types import Span
from runbook.budget import IMAGE_TOKENS, count_tokens
from runbook.cli import main
from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from tests.conftest import make_trajectory, write_jsonl

QUESTION = "How is a pending order canceled in this admin?"
PAGES = [
    "RootWebArea 'Orders'\n\t[736] button 'Cancel'\n\t[737] button 'Hold'",
    "RootWebArea 'Orders'\n\tdialog ''\n\t\tStaticText 'Are you sure you want to cancel this order?'\n"
    "\t\t[2741] button 'OK'",
    "RootWebArea 'Orders'\n\tStaticText 'You canceled the order.'\n\tgridcell 'Canceled'",
]
BUDGETS = list(range(1, 121)) + [150, 200, 333, 500, 800, 1200, 2000, 4000]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    from runbook.store import Store

    tmp = tmp_path_factory.mktemp("budgets")
    store = Store(tmp / "store", create=True)
    trajectories = [
        make_trajectory(f"wa-admin-{n}", 3, texts=PAGES, goal="Cancel order 305", start=10 * n) for n in range(4)
    ]
    insert_paths(store, [write_jsonl(tmp / "a.jsonl", trajectories)], listeners=[insert_listener(store)], workers=1)
    return store


def assert_within(context, budget: int) -> None:
    """Every rendering's counted tokens fit the budget, and the counts are what a reader would be given."""
    assert context.tokens <= budget, f"{context.tokens} of {budget} tokens"
    data = json.loads(context.to_json_text())
    assert data["tokens"] == context.tokens and data["budget"] == budget
    assert data["tokens"] == (count_tokens(f"Analysis: {data['analysis']}\n") if data["analysis"] else 0) + sum(
        item["tokens"] for item in data["items"]
    )
    lme = context.to_lme_items()
    assert (
        sum(count_tokens(p["value"]) for p in lme if p["type"] == "text")
        + IMAGE_TOKENS * sum(p["type"] == "image" for p in lme)
        == context.tokens
    )
    shown = re.search(r"_(\d+) items?, ([\d,]+) of ([\d,]+) tokens", context.to_markdown())
    assert shown and int(shown.group(2).replace(",", "")) <= int(shown.group(3).replace(",", "")) == budget
    if not context.items:
        assert context.meta.get("left_out", 0) > 0 or not context.meta.get("candidates", 1)


@pytest.mark.parametrize("method", ["r", "bm25"])
def test_r_and_bm25_fit_every_budget(filled, method):
    memory = get_memory(method, filled)
    for budget in BUDGETS:
        assert_within(memory.query(QUESTION, budget=budget), budget)
    assert memory.query(QUESTION, budget=1).items == []


def test_c_fits_every_budget(filled, clean_env):
    memory = get_memory("c", filled, sandbox="local")
    run = AgentRun(
        stop=Finished(
            "The Cancel button, then OK in the dialog (wa-admin-0 states 0-2).",
            [Span("wa-admin-0", 0, 2), Span("wa-admin-1", 1, 1), Span("wa-admin-3", 2, 2)],
        ),
        steps=2,
        seconds=0.1,
        tokens={},
        cost=None,
        seen=[],
    )
    for budget in BUDGETS:
        assert_within(memory.context_of(QUESTION, budget, run), budget)


def test_c_offline_query_with_a_budget_of_one(filled, clean_env):
    context = get_memory("c", filled, sandbox="local").query(QUESTION, budget=1)
    assert_within(context, 1)
    assert context.items == []


def test_the_cli_says_nothing_fit_a_budget_of_one(filled):
    result = CliRunner().invoke(
        main, ["--store", str(filled.root), "query", QUESTION, "--method", "r", "--budget", "1"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "0 of 1 tokens" in result.output and "did not fit" in result.output
