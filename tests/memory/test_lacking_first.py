"""Method C puts first the states its agent chose that show a name of the question which none of R's kept evidence
shows (coding_agent.lacking names), cut to fit, and leaves R's order alone when R shows every name."""

from __future__ import annotations

import pytest

from runbook.agent.exceptions import Finished
from runbook.agent.loop import AgentRun
from runbook.agent.types import Span
from runbook.core.question import analyze, is_name
from runbook.memory import get_memory
from runbook.memory.coding_agent import RUN_ENDED_HERE
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
    # runs that changed the page they show a name on and ended there: one succeeded, one failed
    ended = [
        ended_on_the_same_page("wa-map-8", "Red Rock Library", "success (reward 1.0)"),
        ended_on_the_same_page("wa-map-9", "Pine Hill School", "failure (reward 0.0)"),
    ]
    return order_runs_store(tmp_path_factory.mktemp("lacking"), [clinic, *ended])


def ended_on_the_same_page(tid: str, place: str, outcome: str):
    """A run whose directions panel showed `place` by car (state 1), then by foot where it ended (state 3)."""
    panel = "RootWebArea 'Directions'\n\ttextbox 'To' value='" + place + "'\n\tgridcell 'Distance: {}'\n"
    texts = [
        "RootWebArea 'Map'",
        panel.format("2.4km. Time: 0:04"),
        "RootWebArea 'Map'",
        panel.format("1.9km. Time: 0:25"),
    ]
    run = make_trajectory(tid, 4, texts=texts, goal="Walk", start=50, outcome=outcome)
    run.states[1].url = run.states[3].url = "http://localhost:3000/directions?engine=car"
    return run


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


@pytest.mark.parametrize(
    "tid, place, ends", [("wa-map-8", "Red Rock Library", True), ("wa-map-9", "Pine Hill School", False)]
)
def test_a_successful_run_that_ended_on_the_page_shown_follows_with_its_last_state(store, clean_env, tid, place, ends):
    question = f"How long is the walk to {place} compared with the drive?"
    memory = get_memory("c", store, sandbox="local")
    analysis = analyze(question)
    recall = [(hit, item) for hit, item in memory.recall(question, analysis, 800) if hit.trajectory_id != tid]
    for hit, _ in recall:
        hit.packed = True
    context = memory.context_of(question, 800, run_with([Span(tid, 0, 1)], recall), recall)
    first, second = context.items[:2]
    assert (first.trajectory_id, first.state_index) == (tid, 1) and "Time: 0:04" in first.text
    if ends:  # the foot time the agent read off the same panel, once it had switched it
        assert (second.trajectory_id, second.state_index) == (tid, 3) and RUN_ENDED_HERE in second.label
        assert "Time: 0:25" in second.text
    else:  # a failed run's last page is no answer
        assert (second.trajectory_id, second.state_index) != (tid, 3)
        assert not any(RUN_ENDED_HERE in (item.label or "") for item in context.items)
    assert context.tokens <= 800
