"""The no-memory and full-trajectories baselines, taken from the registry by name over a real store."""

from __future__ import annotations

from runbook.budget import count_tokens
from runbook.memory import METHODS, get_memory
from tests.conftest import make_trajectory


def _fill(store, n=3, states=4):
    memory = get_memory("full", store)
    for k in range(n):
        assert memory.insert(
            make_trajectory(
                f"t-{k}",
                states,
                start=10 * k,
                goal=f"goal {k}",
                texts=[f"page {k}.{i} " + "filler " * 80 for i in range(states)],
            )
        )
    return memory


def test_baselines_are_registered_by_name():
    assert {"none", "full", "bm25"} <= set(METHODS)


def test_no_memory_gives_an_empty_context(store):
    _fill(store, 1)
    context = get_memory("none", store).query("What is the price?", budget=8000)
    assert context.items == [] and context.tokens == 0 and context.method == "none"
    assert context.to_lme_items() == []


def test_full_trajectories_come_newest_first_whole(store):
    memory = _fill(store)
    context = memory.query("anything", budget=100_000)
    assert [i.trajectory_id for i in context.items] == ["t-2", "t-1", "t-0"]
    first = context.items[0]
    assert (first.state_index, first.end_state_index, first.goal) == (0, 3, "goal 2")
    assert "page 2.0" in first.text and "page 2.3" in first.text and first.elided_tokens == 0


def test_full_trajectories_are_cut_to_the_budget(store):
    memory = _fill(store)
    whole = memory.query("anything", budget=100_000).items[0].tokens
    context = memory.query("anything", budget=whole + 200)
    assert context.tokens <= whole + 200
    assert [i.trajectory_id for i in context.items] == ["t-2", "t-1"]
    cut = context.items[1]
    assert cut.elided_tokens > 0 and "tokens elided" in cut.text
    assert count_tokens(cut.render_text()) <= 200
