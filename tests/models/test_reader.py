"""The reader: LongMemEval-V2's prompt and message layout, \\boxed{} extraction, and set-up instructions."""

from __future__ import annotations

import base64

import pytest

from runbook.config import load_settings
from runbook.context import Context, EvidenceItem
from runbook.errors import ConfigError
from runbook.models.fakes import FakeOpenAIServer, text
from runbook.models.openai import OpenAIModel
from runbook.models.reader import READER_PROMPTS, Reader, extract_boxed

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize(
    "response, answer",
    [
        ("The price is \\boxed{$32.00}.", "$32.00"),
        ("first \\boxed{a} then \\boxed{b}", "b"),
        ("\\boxed{The premise is wrong: {nested} braces}", "The premise is wrong: {nested} braces"),
        ("no box at all", "no box at all"),
        ("\\boxed{}", "\\boxed{}"),
    ],
)
def test_the_answer_is_the_last_boxed(response, answer):
    assert extract_boxed(response) == answer


def test_the_benchmark_prompts_keep_their_rules():
    for prompt in READER_PROMPTS.values():
        assert "output exactly \\boxed{UNKNOWN}" in prompt and "explanation in \\boxed{}" in prompt
    assert READER_PROMPTS["web"].startswith("You are an experienced colleague in a web browsing environment")


def test_reader_sends_memory_items_then_the_question_and_its_image(tmp_path):
    shot = tmp_path / "s.png"
    shot.write_bytes(PNG)
    context = Context(
        "What is the price?",
        1000,
        analysis="The latest price is on state 3.",
        store_root=str(tmp_path),
        items=[EvidenceItem("t-1", "price: $32.00", state_index=3, screenshot="s.png")],
    )
    with FakeOpenAIServer([text("It costs \\boxed{$32.00}")]) as server:
        reader = Reader(OpenAIModel("reader", base_url=server.base_url), domain="web")
        result = reader.answer(context, image=str(shot))
    assert result.answer == "$32.00" and not result.is_unknown
    system, user = server.requests[0]["messages"]
    assert system == {"role": "system", "content": READER_PROMPTS["web"]}
    kinds = [(p["type"], p.get("text", "")[:22]) for p in user["content"]]
    assert kinds == [
        ("text", "### Memory context:\n"),
        ("text", "Analysis: The latest p"),
        ("text", "[state] trajectory t-1"),
        ("image_url", ""),
        ("text", "\n\n### Question to answ"),
        ("image_url", ""),
    ]
    assert user["content"][-2]["text"].endswith("What is the price?")
    assert user["content"][3]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "tools" not in server.requests[0]


def test_an_empty_context_says_so():
    with FakeOpenAIServer([text("\\boxed{UNKNOWN}")]) as server:
        result = Reader(OpenAIModel("r", base_url=server.base_url)).answer(Context("q?", 100))
    assert result.is_unknown
    assert server.requests[0]["messages"][1]["content"][0]["text"] == "### Memory context:\n(empty)"


def test_no_reader_configured_says_exactly_how(tmp_path):
    with pytest.raises(ConfigError) as error:
        Reader.from_settings(load_settings())
    message = str(error.value)
    assert message.startswith("No reader is configured.")
    assert "RUNBOOK_READER_PROVIDER=anthropic RUNBOOK_READER_MODEL=" in message
    assert "RUNBOOK_READER_BASE_URL=http://127.0.0.1:8765/v1" in message
    assert str(tmp_path / "config" / "runbook" / "config.toml") in message


def test_a_configured_reader_uses_its_own_base_url(monkeypatch):
    with FakeOpenAIServer([text("\\boxed{42}")]) as server:
        monkeypatch.setenv("RUNBOOK_READER_PROVIDER", "openai")
        monkeypatch.setenv("RUNBOOK_READER_MODEL", "reader-model")
        monkeypatch.setenv("RUNBOOK_READER_BASE_URL", server.base_url)
        result = Reader.from_settings(load_settings()).answer(Context("q?", 100))
    assert result.answer == "42" and server.requests[0]["model"] == "reader-model"


def test_the_context_is_cut_to_whole_items_as_the_harness_cuts_it():
    from runbook.models.reader import lme_items_tokens, whole_items_within

    items = [EvidenceItem("t-1", f"state {i}: " + "word " * 60, state_index=i) for i in range(4)]
    context = Context("q?", 10_000, items=items)
    lme = context.to_lme_items()
    one = lme_items_tokens(lme[:1])
    assert whole_items_within(lme, 2 * one + 1) == lme[:2]
    assert whole_items_within(lme, one - 1) == []
    with FakeOpenAIServer([text("\\boxed{x}")]) as server:
        result = Reader(OpenAIModel("r", base_url=server.base_url)).answer(context, max_context_tokens=2 * one + 1)
    sent = [p["text"] for p in server.requests[0]["messages"][1]["content"]]
    assert sent[1].startswith("[state] trajectory t-1, state 0") and sent[2].startswith(
        "[state] trajectory t-1, state 1"
    )
    assert sent[3].startswith("\n\n### Question to answer:")
    assert (result.original_tokens, result.context_tokens) == (lme_items_tokens(lme), lme_items_tokens(lme[:2]))


def test_a_text_only_reader_is_sent_no_images(tmp_path):
    shot = tmp_path / "s.png"
    shot.write_bytes(PNG)
    context = Context(
        "q?", 1000, store_root=str(tmp_path), items=[EvidenceItem("t-1", "price", state_index=3, screenshot="s.png")]
    )
    with FakeOpenAIServer([text("\\boxed{x}")]) as server:
        Reader(OpenAIModel("r", base_url=server.base_url), images=False).answer(context, image=str(shot))
    assert [p["type"] for p in server.requests[0]["messages"][1]["content"]] == ["text", "text", "text"]


def test_a_question_may_pick_another_benchmark_prompt():
    with FakeOpenAIServer([text("\\boxed{x}")]) as server:
        Reader(OpenAIModel("r", base_url=server.base_url)).answer(Context("q?", 100), domain="enterprise")
    assert server.requests[0]["messages"][0]["content"] == READER_PROMPTS["enterprise"]


def test_html_entities_from_the_server_are_undone():
    with FakeOpenAIServer([text("Open Sales &gt; Orders: \\boxed{Sales &gt; Orders &amp; View}")]) as server:
        result = Reader(OpenAIModel("r", base_url=server.base_url)).answer(Context("q?", 100))
    assert result.answer == "Sales > Orders & View" and result.response.startswith("Open Sales > Orders")
