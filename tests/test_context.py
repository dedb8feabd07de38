"""Packing evidence into a budget and rendering it as markdown, JSON and LongMemEval-V2 items."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runbook.budget import IMAGE_TOKENS, count_tokens
from runbook.context import EvidenceItem, pack


def item(tid="t", text="x " * 50, index=0, **kw):
    return EvidenceItem(trajectory_id=tid, text=text, state_index=index, url="http://u", timestamp="2025-12-16", **kw)


def test_items_in_order_until_budget_and_last_one_cut():
    ctx = pack("q", 300, [item("a", "alpha " * 200), item("b", "beta " * 200), item("c", "gamma " * 10)])
    assert [i.trajectory_id for i in ctx.items] == ["a", "b"]
    assert ctx.items[1].elided_tokens > 0 and "tokens elided" in ctx.items[1].text
    assert ctx.tokens <= 300


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=20, max_value=3000),
    sizes=st.lists(st.integers(min_value=0, max_value=900), min_size=0, max_size=8),
    analysis_words=st.integers(min_value=0, max_value=800),
    shots=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_pack_never_exceeds_the_budget(budget, sizes, analysis_words, shots):
    items = [
        item(f"t{i}", "tok " * n, i, screenshot="screenshots/0001.png" if shots[i] else None)
        for i, n in enumerate(sizes)
    ]
    ctx = pack("q", budget, items, analysis="because " * analysis_words)
    assert ctx.tokens <= budget
    assert ctx.tokens == ctx.analysis_tokens + sum(
        count_tokens(i.render_text()) + (IMAGE_TOKENS if i.screenshot else 0) for i in ctx.items
    )


def test_screenshot_dropped_before_text_is_cut():
    ctx = pack("q", 200, [item("a", "short text", screenshot="screenshots/0001.png")])
    assert ctx.items[0].screenshot is None and ctx.items[0].elided_tokens == 0


def test_json_names_trajectory_and_state_or_span():
    ctx = pack("q", 2000, [item("a", index=3), EvidenceItem("b", "span text", 2, 5, kind="span")], analysis="why")
    data = json.loads(ctx.to_json_text())
    assert data["items"][0]["trajectory_id"] == "a" and data["items"][0]["state_index"] == 3
    assert (data["items"][1]["start_state_index"], data["items"][1]["end_state_index"]) == (2, 5)
    assert "state_index" not in data["items"][1]
    assert data["tokens"] == ctx.tokens and data["analysis"] == "why" and data["budget"] == 2000


def test_lme_items_put_images_after_their_text():
    ctx = pack("q", 5000, [item("a", screenshot="trajectories/a/screenshots/0000.png")], store_root="/s")
    items = ctx.to_lme_items()
    assert [i["type"] for i in items] == ["text", "image"]
    assert items[-1] == {"type": "image", "value": "/s/trajectories/a/screenshots/0000.png"}
    assert "trajectory a, state 0" in items[0]["value"]


def test_every_lme_text_item_ends_with_a_line_break_so_joined_items_stay_apart():
    ctx = pack("q", 5000, [item("a", "the grid (per page = 100)."), item("b")], analysis="Two views (per page = 100).")
    texts = [i["value"] for i in ctx.to_lme_items() if i["type"] == "text"]
    assert len(texts) == 3 and all(t.endswith("\n") for t in texts)
    assert ").[" not in "".join(texts)  # LongMemEval-V2's harness joins the items as they are
    assert ctx.analysis_tokens == count_tokens(texts[0])


def test_markdown_cites_every_item():
    md = pack("which?", 2000, [item("a", index=1, label="latest value")]).to_markdown()
    assert "trajectory a, state 1 (http://u, 2025-12-16) [latest value]" in md and "of 2,000 tokens" in md


def _rendered_tokens(ctx) -> int:
    """The tokens of the LongMemEval-V2 rendering, recounted from what a reader would be given."""
    parts = ctx.to_lme_items()
    return sum(count_tokens(p["value"]) for p in parts if p["type"] == "text") + IMAGE_TOKENS * sum(
        1 for p in parts if p["type"] == "image"
    )


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=1, max_value=200),
    sizes=st.lists(st.integers(min_value=0, max_value=300), min_size=0, max_size=5),
    analysis_words=st.integers(min_value=0, max_value=300),
    shots=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_pack_never_exceeds_even_a_tiny_budget(budget, sizes, analysis_words, shots):
    items = [
        item(f"t{i}", "tok " * n, i, screenshot="screenshots/0001.png" if shots[i] else None)
        for i, n in enumerate(sizes)
    ]
    ctx = pack("q", budget, items, analysis="because " * analysis_words)
    assert ctx.tokens <= budget and _rendered_tokens(ctx) == ctx.tokens
    assert json.loads(ctx.to_json_text())["tokens"] <= budget
    assert f"{ctx.tokens:,} of {budget:,} tokens" in ctx.to_markdown()


def test_a_budget_of_one_returns_nothing_and_says_so_where_it_can():
    ctx = pack("q", 1, [item("a")], analysis="The price is $24.")
    assert (ctx.items, ctx.tokens, ctx.analysis) == ([], 0, "")
    assert ctx.meta["left_out"] == 1 and "1 item did not fit in 1 token" in ctx.to_markdown()
    roomier = pack("q", 30, [item("a", "x " * 100)], analysis="The price is $24.")
    assert roomier.items == [] and roomier.tokens <= 30
    assert "no evidence item fits" in roomier.analysis.lower()


def test_the_text_an_agent_reads_costs_what_tokens_says():
    """Item 6 of issue 24: MCP returned JSON in a text block (a 2k budget cost 3,275 tokens); to_text is the
    counted text itself."""
    items = [item(f"t-{n}", f"trajectory body {n} " + "word " * 300) for n in range(6)]
    for budget in (300, 700, 2000):
        context = pack("What is the price?", budget, [copy.deepcopy(i) for i in items], analysis="The price is $24.")
        text = context.to_text()
        assert text.startswith("Analysis: The price is $24.\n[state] trajectory t-0")
        assert count_tokens(text) <= budget
