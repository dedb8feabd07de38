"""A run's goal matches a question by what the task says, not by the text the agent was to type: a question word found
only inside the goal's quotes counts for less (core.scan.QUOTED_TERM_WEIGHT)."""

from __future__ import annotations

import pytest

from runbook.core.catalog import Catalog, TrajectoryRow
from runbook.core.patterns import pattern_regex, python_regex
from runbook.core.question import analyze
from runbook.core.scan import QUOTED_TERM_WEIGHT, run_records
from runbook.core.scoring import WeightedPatterns
from runbook.policies.offline.terms import patterns_for


def row(seq: int, folder: str, goal: str) -> TrajectoryRow:
    return TrajectoryRow(
        seq, folder, folder, "webarena", "site", goal, "", None, 1, 5, 0, 0, 100, 1000, None, None, "fp", None, "t"
    )


def goal_scores(question: str, goals: dict[str, str]) -> dict[str, float]:
    items = patterns_for(analyze(question))
    compiled = [python_regex(pattern_regex(item)) for item in items]
    goals = {**goals, **{f"other-{n}": f"Open the settings page {n}" for n in range(40)}}  # goals to weigh words by
    rows = {folder: row(n, folder, goal) for n, (folder, goal) in enumerate(goals.items())}
    patterns = WeightedPatterns(items, compiled, [1.0] * len(items))
    runs = run_records([], {}, rows, Catalog(rows, {f: f for f in rows}, {}), patterns, limit=10)
    return {run.trajectory_id: run.goal_score for run in runs}


def test_a_word_only_inside_the_goals_quotes_counts_less():
    scores = goal_scores(
        "What are the steps to buy a pouch?",
        {
            "forum-post": 'Post my question, "what is the recommended console to buy these days"',
            "forum-post-unquoted": "Post my question, what is the recommended console to buy these days",
            "shop-buy": "Buy the cheapest pouch from the switch category",
        },
    )
    assert scores["forum-post"] == pytest.approx(QUOTED_TERM_WEIGHT * scores["forum-post-unquoted"], abs=0.06)
    assert 0 < scores["forum-post"] < scores["shop-buy"]


def test_a_quoted_phrase_the_question_gives_counts_whole():
    question = "How did the agent post 'real user feedback' on the forum?"
    scores = goal_scores(
        question,
        {
            "posted": 'Post them under the title "real user feedback on the VR headset"',
            "other": "Post a question about a headset",
        },
    )
    assert scores["posted"] > scores["other"]
