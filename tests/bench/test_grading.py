"""Grading one context: the reader from the config or the RUNBOOK_READER_* settings, rules, judges, UNKNOWN."""

from __future__ import annotations

from pathlib import Path

import pytest

from runbook.bench.config import ReaderSpec
from runbook.bench.grading import build_grader
from runbook.bench.questions import Haystack, Question
from runbook.context import Context, EvidenceItem
from runbook.errors import ConfigError
from runbook.models.fakes import FakeOpenAIServer, Reply, fail, text

CONTEXT = Context("q", 1000, items=[EvidenceItem("t-1", "Price $32.88", state_index=2)])


def question(eval_function="norm_phrase_set_match", answer="$32.88") -> Question:
    return Question(
        "q", "dynamic-environment", "What is the price now?", answer, eval_function, Haystack(Path("unused.jsonl"))
    )


def test_unset_reader_fields_come_from_the_settings_and_the_reader_judges(monkeypatch, clean_env):
    with FakeOpenAIServer(
        [text("It is \\boxed{$32.88}"), text("\\boxed{yes}"), text('{"label": 1, "reason": "ok"}')],
        models=["served-model"],
    ) as server:
        monkeypatch.setenv("RUNBOOK_READER_PROVIDER", "openai")
        monkeypatch.setenv("RUNBOOK_READER_BASE_URL", server.base_url)
        grader = build_grader(ReaderSpec(max_output_tokens=50), None)
        assert grader.reader.client.model == "served-model" and grader.judge.client.model == "served-model"
        right = grader.grade(question(), CONTEXT)
        judged = grader.grade(question("llm_gotchas_checker", "check the price first"), CONTEXT)
    assert (right.score, right.response_parsed_boxed, right.usage["output_tokens"] > 0) == (1.0, "$32.88", True)
    assert (judged.score, judged.judge_label, judged.judge_reason) == (1.0, 1, "ok")
    assert server.requests[2]["messages"][0]["content"].startswith("You are a strict grader for gotchas")


def test_unknown_is_zero_and_never_reaches_the_judge(clean_env):
    with FakeOpenAIServer([text("I cannot tell. \\boxed{UNKNOWN}")]) as server:
        grader = build_grader(ReaderSpec(provider="openai", model="m", base_url=server.base_url), None)
        grade = grader.grade(question("llm_abstention_checker", "no such page"), CONTEXT)
    assert grade.is_unknown and grade.score == 0.0 and grade.judge_label is None and len(server.requests) == 1


def test_a_failing_reader_or_judge_scores_zero_and_says_why(clean_env):
    with FakeOpenAIServer([fail(500), fail(500), text("\\boxed{fine}"), text("no label at all")]) as server:
        grader = build_grader(ReaderSpec(provider="openai", model="m", base_url=server.base_url), None)
        grader.reader.client.attempts = grader.judge.client.attempts = 2
        broken_reader = grader.grade(question(), CONTEXT)
        broken_judge = grader.grade(question("llm_gotchas_checker", "x"), CONTEXT)
    assert broken_reader.score == 0.0 and broken_reader.grade_error.startswith("reader: ")
    assert broken_judge.score == 0.0 and "no label 0 or 1" in broken_judge.grade_error


def test_without_a_reader_the_error_says_how_to_get_one(clean_env):
    with pytest.raises(ConfigError, match="--no-reader"):
        build_grader(ReaderSpec(), None)


def test_the_cut_and_the_question_domain_reach_the_reader(clean_env):
    long = Context("q", 10_000, items=[EvidenceItem("t-1", "word " * 300, state_index=i) for i in range(3)])
    with FakeOpenAIServer(respond=lambda request: Reply(text="\\boxed{x}")) as server:
        grader = build_grader(
            ReaderSpec(provider="openai", model="m", base_url=server.base_url, memory_context_max_tokens=700), None
        )
        q = question()
        q.domain = "enterprise"
        grade = grader.grade(q, long)
    assert grade.memory_context_was_truncated and grade.memory_context_token_count <= 700
    assert len(server.requests[0]["messages"][1]["content"]) == 1 + 2 + 1  # intro, two whole items, question
    assert "ServiceNow" in server.requests[0]["messages"][0]["content"]
