"""Method C keeps all of method R's context when R's evidence looks strong, and leaves its agent a share of the
budget (coding_agent.RECALL_SHARE) when R's signals call it weak or the question asks for the newest value: the agent
orders every sighting by time, which R's ranking does not."""

from __future__ import annotations

import pytest

from runbook.core.question import analyze
from runbook.memory import get_memory
from runbook.memory.coding_agent import RECALL_SHARE
from tests.conftest import order_runs_store

BUDGET = 1500


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return get_memory("c", order_runs_store(tmp_path_factory.mktemp("share")), sandbox="local")


def packed_state_tokens(memory, question: str) -> tuple[int, int]:
    """(tokens of R's packed page states, tokens of all R's page states the whole budget holds)."""
    recall = memory.recall(question, analyze(question), BUDGET)
    states = [(hit, item) for hit, item in recall if hit.pool == "slices"]
    return sum(item.measure() for hit, item in states if hit.packed), sum(item.measure() for _, item in states)


def test_strong_evidence_is_kept_whole(memory, clean_env):
    question = "What order status does the order total show?"
    assert not analyze(question).wants_newest
    packed, _ = packed_state_tokens(memory, question)
    assert packed > RECALL_SHARE * BUDGET  # R's whole context: the agent's spans come after it


def test_a_question_for_the_newest_value_leaves_the_agent_room(memory, clean_env):
    question = "What order status does the order total show now?"
    assert analyze(question).wants_newest
    packed, available = packed_state_tokens(memory, question)
    assert available > RECALL_SHARE * BUDGET  # R had more than the share to give
    assert 0 < packed <= RECALL_SHARE * BUDGET
