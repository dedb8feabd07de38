"""The judges: LongMemEval-V2's rubrics, the verdict parsed from what a model writes, over the real OpenAI client."""

from __future__ import annotations

import json

import pytest

from runbook.models.fakes import FakeOpenAIServer, Reply, text
from runbook.models.judge import Judge, JudgeError, judge_messages, parse_verdict
from runbook.models.openai import OpenAIModel


@pytest.mark.parametrize(
    "reply, label",
    [
        ('{"label": 1, "reason": "names the missing page"}', 1),
        ('```json\n{"label": 0, "reason": "follows the premise"}\n```', 0),
        ('Verdict: {"label": "1", "reason": "ok"} done', 1),
        ("{'label': 0, 'reason': 'python dict'}", 0),
        ("label = 1 because the flaw is named", 1),
    ],
)
def test_verdicts_are_read_from_json_or_loose_text(reply, label):
    assert parse_verdict(reply)[0] == label


def test_a_reply_without_a_label_is_an_error():
    with pytest.raises(JudgeError):
        parse_verdict("I think the answer is good.")
    with pytest.raises(JudgeError):
        parse_verdict('{"label": 2}')


def test_the_messages_carry_question_reference_response_and_rubric():
    system, user = judge_messages(
        "llm_abstention_checker",
        question="Where is the Shipping Policy page?",
        reference="There is no such page",
        response="It does not exist. \\boxed{none}",
        final_answer="none",
    )
    assert system.text.startswith("You are a strict grader for flawed-premise")
    for part in (
        "Question:\nWhere is the Shipping Policy page?",
        "Reference answer (the expected flaw-aware conclusion):\nThere is no such page",
        "Model extracted final answer:\nnone",
        "Label 0 for generic UNKNOWN",
        '{"label": 0 or 1, "reason": "short rationale"}',
    ):
        assert part in user.text
    _, gotcha = judge_messages("llm_gotchas_checker", question="q", reference="r", response="a", final_answer="a")
    assert "at least one correct insight point" in gotcha.text


def test_judge_grades_through_the_openai_client():
    def respond(request):
        user = request["messages"][-1]["content"]
        named = (
            "Reference answer (insight points):\nclear the filters" in user
            and "clear" in user.split("Model full response:")[1]
        )
        return Reply(text=json.dumps({"label": int(named), "reason": "insight present" if named else "missing"}))

    with FakeOpenAIServer(respond=respond) as server:
        judge = Judge(OpenAIModel("judge-model", base_url=server.base_url))
        good = judge.grade(
            "llm_gotchas_checker",
            question="Why is the grid empty?",
            reference="clear the filters",
            response="You must clear the old filters first.",
            final_answer="clear filters",
        )
        bad = judge.grade(
            "llm_gotchas_checker",
            question="Why is the grid empty?",
            reference="clear the filters",
            response="Reload the page.",
            final_answer="reload",
        )
    assert (good.label, good.reason) == (1, "insight present")
    assert (bad.label, bad.reason) == (0, "missing")
    assert server.requests[0]["model"] == "judge-model" and "tools" not in server.requests[0]


def test_unknown_judge_kind():
    with FakeOpenAIServer([text("{}")]) as server:
        with pytest.raises(JudgeError):
            Judge(OpenAIModel("m", base_url=server.base_url)).grade(
                "no_such", question="q", reference="r", response="a", final_answer="a"
            )


def test_a_server_that_html_escapes_is_understood():
    # llama-cpp-python's chatml-function-calling escapes the prompt, and small models copy the entities;
    # this reply was also cut off before its closing brace
    escaped = "{&#34;label&#34;: 0, &#34;reason&#34;: &#34;misses the filters&#34;"
    with FakeOpenAIServer([text(escaped)]) as server:
        verdict = Judge(OpenAIModel("m", base_url=server.base_url)).grade(
            "llm_gotchas_checker", question="q", reference="r", response="a", final_answer="a"
        )
    assert verdict.label == 0 and verdict.raw.startswith('{"label": 0')
