"""Method R and the BM25 baseline behind the Memory interface."""

import pytest

from runbook.core.actions import describe, error_gist
from runbook.errors import StoreError
from runbook.ingest import insert_paths
from runbook.memory import Memory, get_memory
from runbook.pools import insert_listener
from tests.conftest import make_trajectory, write_jsonl

PAGES = [
    "RootWebArea 'Orders'\n\t[736] button 'Cancel'\n\t[737] button 'Hold'",
    "RootWebArea 'Orders'\n\tdialog ''\n\t\tStaticText 'Are you sure you want to cancel this order?'\n"
    "\t\t[2741] button 'OK'",
    "RootWebArea 'Orders'\n\tStaticText 'You canceled the order.'\n\tgridcell 'Canceled'",
]


@pytest.fixture
def filled(store, tmp_path):
    traj = make_trajectory("wa-admin-1", 3, texts=PAGES, goal="Cancel order 305")
    traj.states[0].action, traj.states[1].action = "click('736')", "click('2741')"
    other = make_trajectory("wa-admin-2", 2, goal="Find the newest review", start=30)
    insert_paths(
        store, [write_jsonl(tmp_path / "a.jsonl", [traj, other])], listeners=[insert_listener(store)], workers=1
    )
    return store


def test_r_orders_notes_events_states_within_budget(filled):
    memory = get_memory("r", filled)
    assert isinstance(memory, Memory) and memory.name == "r"
    context = memory.query("How is a pending order canceled in this admin?", budget=3000)
    kinds = [item.kind for item in context.items]
    assert kinds and kinds == sorted(kinds, key=["note", "event", "state"].index)
    assert context.tokens <= 3000
    text = "\n".join(item.text for item in context.items)
    assert "click button 'Cancel'" in text and "You canceled the order." in text
    assert context.analysis.startswith("question kind: procedure")


def test_bm25_baseline_returns_whole_states(filled):
    context = get_memory("bm25", filled).query("Are you sure you want to cancel this order?", budget=2000)
    assert context.items[0].trajectory_id == "wa-admin-1" and context.items[0].state_index == 1


def test_shortlist_for_method_c(filled):
    top = get_memory("r", filled).shortlist("canceled order", k=2)
    assert top[0]["trajectory_id"] == "wa-admin-1" and "state_index" in top[0]


def test_store_without_pools_says_to_reindex(store, tmp_path):
    insert_paths(store, [write_jsonl(tmp_path / "a.jsonl", [make_trajectory("t-1")])], workers=1)
    with pytest.raises(StoreError, match="runbook reindex"):
        get_memory("r", store).query("anything at all?", budget=1000)


def test_actions_are_described_by_their_controls():
    tree = "\t[1151] LabelText ''\n\t\tStaticText 'Set yourself as busy'\n\t[431] button 'Cancel'"
    assert describe("click('431')", tree) == "click button 'Cancel'"
    assert describe("click('1151')", tree) == "click LabelText 'Set yourself as busy'"
    dom = "[29]<button id=save />\n\tSave changes\n[16]<input type=text placeholder=Name />"
    assert describe("click(index=29)", dom) == "click button 'Save changes'"
    assert describe("input(index=16, text='Jordan', clear=True)", dom) == "input textbox 'Name' with 'Jordan'"


def test_error_gist_keeps_the_reason():
    error = (
        'TimeoutError: Locator.click: Timeout 500ms exceeded.\nCall log:\nwaiting for get_by_test_id("1150")\n'
        '  -   locator resolved to <input bid="1150" type="checkbox"/>\n  - attempting click action\n'
        '  -   <label for="1" bid="1151">…</label> intercepts pointer events\n  - retrying click action'
    )
    gist = error_gist(error)
    assert gist.startswith("TimeoutError") and "intercepts pointer events" in gist and "retrying" not in gist
