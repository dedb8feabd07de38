"""Method C puts first the states its agent chose that show a name of the question which none of R's kept evidence
shows (coding_agent.lacking names), cut to fit, and leaves R's order alone when R shows every name."""

from __future__ import annotations

import pytest

from runbook.agent.exceptions import Finished
from runbook.agent.loop import AgentRun
from runbook.agent.types import Span
from runbook.core.question import analyze, is_name
from runbook.memory import get_memory
from tests.conftest import make_trajectory, order_runs_store

CLINIC = (
    "RootWebArea 'Directions'\n\ttextbox 'To' value='Blue Harbor Clinic, 12 Pier Road'\n"
    "\tgridcell 'Distance: 3.1km. Time: 0:41'\n"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    # many runs that match the question's common words well, one whose middle state shows the name it gives
    clinic = make_trajectory(
        "wa-map-7", 3, texts=["RootWebArea 'Map'", CLINIC, "RootWebArea 'Map'"], goal="Walk", start=40
    )
    return order_runs_store(tmp_path_factory.mktemp("lacking"), [clinic])


def run_with(spans: list[Span], recall) -> AgentRun:
    """A finished run with these spans that kept R's packed hits, as the offline planner does."""
    kept = [hit.id for hit, _ in recall if hit.packed]
    return AgentRun(stop=Finished("", spans, kept), steps=2, seconds=0.1, tokens={}, cost=None, seen=[])


def test_a_state_showing_a_name_r_lacks_leads(store, clean_env):
    question = "What order status and shipping does the order total show for Blue Harbor Clinic?"
    memory = get_memory("c", store, sandbox="local")
    analysis = analyze(question)
    assert "Blue Harbor Clinic" in analysis.phrases
    # R's evidence as if its ranking had missed the clinic's run (a small store's BM25 finds it)
    recall = [(hit, item) for hit, item in memory.recall(question, analysis, 600) if hit.trajectory_id != "wa-map-7"]
    for hit, _ in recall:
        hit.packed = True
    context = memory.context_of(
        question, 600, run_with([Span("wa-orders-0", 0, 2), Span("wa-map-7", 0, 2)], recall), recall
    )
    first = context.items[0]
    assert (first.trajectory_id, first.state_index, first.end_state_index) == ("wa-map-7", 1, None)
    assert "shows 'Blue Harbor Clinic'" in first.label and "Time: 0:41" in first.text
    assert context.tokens <= 600
    # the span it sat in is split around it: its other states follow, after R's evidence
    rest = [(i.trajectory_id, i.state_index) for i in context.items[1:] if i.trajectory_id == "wa-map-7"]
    assert ("wa-map-7", 1) not in rest


def test_no_reordering_when_r_shows_every_name(store, clean_env):
    question = "What order status does the order total show?"
    memory = get_memory("c", store, sandbox="local")
    analysis = analyze(question)
    recall = memory.recall(question, analysis, 2000)
    context = memory.context_of(question, 2000, run_with([Span("wa-map-7", 0, 2)], recall), recall)
    assert context.items[0].trajectory_id != "wa-map-7"
    assert not any("shows '" in (item.label or "") for item in context.items)


def test_what_counts_as_a_name():
    assert is_name("University of Pittsburgh") and is_name("000000302") and is_name("SKU WS05")
    assert not is_name("OSM")  # an acronym the pages may write out in full
