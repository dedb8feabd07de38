"""Method auto: R's context when R's own signals say its evidence is strong, C's when they say it is weak. Real
store, real pools, real R; C runs the offline planner in a local sandbox (the isolation is tested elsewhere)."""

from __future__ import annotations

import pytest

from runbook.context import Context, EvidenceItem
from runbook.memory import get_memory
from runbook.memory.auto import AutoMemory
from runbook.memory.weakness import MIN_TERM_COVERAGE, weakness
from runbook.pools.build import insert_with_pools
from runbook.store import Store
from tests.conftest import make_trajectory

PRICE_PAGE = (
    "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n"
    "\tStaticText 'Quest Lumaflex Band'\n\tStaticText 'SKU QLB-24'"
)


@pytest.fixture(autouse=True)
def _no_machine_settings(clean_env):
    """No keys or machine settings: C's policy is the offline planner."""


@pytest.fixture
def store(tmp_path) -> Store:
    price = make_trajectory(
        "wa-admin-1",
        3,
        site="shopping_admin",
        goal="Check the price of Quest Lumaflex Band",
        texts=["RootWebArea 'Dashboard'", "RootWebArea 'Catalog'", PRICE_PAGE],
    )
    other = make_trajectory(
        "wa-admin-2",
        2,
        site="shopping_admin",
        goal="Open the customer grid",
        start=20,
        texts=["RootWebArea 'Customers'", "RootWebArea 'All Customers'\n\t'70 records found'"],
    )
    store = Store(tmp_path / "store", create=True)
    for trajectory in (price, other):
        insert_with_pools(store, trajectory)
    return store


def auto(store: Store) -> AutoMemory:
    return get_memory("auto", store, sandbox="local")


def item(text: str) -> EvidenceItem:
    return EvidenceItem("t-1", text, state_index=0)


def test_signals_name_what_r_misses():
    question = "What price does the admin list for 'Quest Lumaflex Band'?"
    strong = weakness(Context(question, 4000, items=[item("Price $24.00 Quest Lumaflex Band admin list")]))
    assert not strong.weak and strong.reasons() == []
    missing = weakness(Context(question, 4000, items=[item("Price $24.00 admin list")]))
    assert missing.weak and missing.missing_phrases == ["Quest Lumaflex Band"]
    assert "not in R's evidence: 'Quest Lumaflex Band'" in missing.reasons()
    thin = weakness(Context("Which warehouse ships the heavy pallets overnight?", 4000, items=[item("warehouse")]))
    assert thin.term_coverage < MIN_TERM_COVERAGE and thin.weak


def test_strong_evidence_stays_with_r(store):
    context = auto(store).query("What price does the admin list for Quest Lumaflex Band?", budget=2000)
    assert context.method == "auto"
    assert context.meta["escalated"] is False and context.meta["weak"]["weak"] is False
    assert "policy" not in context.meta  # C never ran
    assert any(it.trajectory_id == "wa-admin-1" and "$24.00" in it.text for it in context.items)


def test_weak_evidence_escalates_to_c(store):
    question = "What price does the admin list for the 'Zephyr Gravity Ball'?"  # a name stored nowhere
    context = auto(store).query(question, budget=2000)
    assert context.method == "auto"
    assert context.meta["escalated"] is True and context.meta["policy"] == "offline"
    assert "Zephyr Gravity Ball" in context.meta["weak"]["missing_phrases"]
    assert "Zephyr Gravity Ball" in context.analysis  # C's planner names the phrase found nowhere


def test_escalated_context_keeps_what_r_found(store):
    question = "What went wrong when the agent opened the 'Customers' grid, and which records were found?"
    r = get_memory("r", store).query(question, budget=2000)
    context = auto(store).query(question, budget=2000)
    assert context.meta["escalated"] is True  # a question about errors and pitfalls
    cited = {(it.trajectory_id, it.state_index, it.end_state_index) for it in context.items}
    assert {(it.trajectory_id, it.state_index, it.end_state_index) for it in r.items[:2]} <= cited


def test_term_shares_say_how_common_each_word_is(store):
    from runbook.pools.search import Retriever

    shares = Retriever(store).term_shares("Which RootWebArea shows the Lumaflex prices?")
    assert shares["rootwebarea"] == 1.0  # every stored state
    assert 0 < shares["lumaflex"] < 1 and shares["prices"] == shares["price"] > 0
    assert shares["which"] == 0.0
