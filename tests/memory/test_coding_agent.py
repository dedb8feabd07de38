"""Method C end to end: fake OpenAI-compatible and Anthropic servers on loopback replay scripted tool calls, which
drive the real SDK clients through the real loop, a real sandbox and a real store; the context is checked item by
item."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from runbook.agent.loop import NUDGE
from runbook.agent.transcript import read_transcript
from runbook.errors import ConfigError
from runbook.memory.coding_agent import NOT_CHOSEN, UNCHECKED, CodingAgentMemory
from runbook.memory.spans import focus_page, water_level
from runbook.models.fakes import FakeAnthropicServer, FakeOpenAIServer, call, fail, finish, raw_call, text
from runbook.policies import POLICIES, get_policy
from runbook.pools.build import insert_with_pools
from runbook.store import Store
from tests.conftest import make_trajectory, sandbox_missing

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
FILLER = "\n".join(f"\t[{200 + n}] link 'Menu entry {n}'" for n in range(300))
PRICE_PAGE = (
    "RootWebArea 'Edit Product'\n{filler}\n\t[900] textbox 'Price' value='{price}'\n\tStaticText 'Quest Lumaflex Band'"
)
PRICE_OLD = PRICE_PAGE.format(filler=FILLER, price="$19.00")
PRICE_NEW = PRICE_PAGE.format(filler=FILLER, price="$24.00")


@pytest.fixture(autouse=True)
def _no_machine_settings(clean_env):
    """Every test here runs without the machine's keys and settings (tests/conftest.py)."""


@pytest.fixture
def store(tmp_path) -> Store:
    """Three trajectories: a price seen at 06:02 and changed by 06:21, and an app page with a screenshot."""
    shot = tmp_path / "shot.png"
    shot.write_bytes(PNG)
    older = make_trajectory(
        "wa-admin-1",
        4,
        site="shopping_admin",
        goal="Check the price of Quest Lumaflex Band",
        texts=["RootWebArea 'Dashboard'", "RootWebArea 'Catalog'", PRICE_OLD, "RootWebArea 'Saved'"],
    )
    newer = make_trajectory(
        "wa-admin-2",
        3,
        site="shopping_admin",
        goal="Set the price of Quest Lumaflex Band to 24",
        start=20,
        texts=["RootWebArea 'Catalog'", PRICE_NEW, "RootWebArea 'Saved'"],
        outcome="success (reward 1.0)",
    )
    app = make_trajectory(
        "inf-app-1",
        2,
        site="linear",
        goal="Rename the team",
        start=40,
        texts=["[1]<button>Team settings</button>", "[2]<input value='Platform'>"],
        outcome="failure (reward 0.0)",
    )
    app.states[0].screenshot = str(shot)
    root = tmp_path / "store"
    store = Store(root, create=True)
    for trajectory in (older, newer, app):  # with their pools, as `runbook insert` writes them
        insert_with_pools(store, trajectory)
    for path in [tmp_path, root, *root.rglob("*")]:  # the sandbox user (nobody) reads the store
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store


def chosen(context) -> list:
    """The items the agent chose; R's evidence it did not check follows them in what is left, labelled so."""
    items = context.items
    n = next((k for k, item in enumerate(items) if UNCHECKED in item.label), len(items))
    assert all(UNCHECKED in item.label for item in items[n:])
    return items[:n]


def memory(store, sandbox="local", **options):
    return CodingAgentMemory(store, sandbox=sandbox, **options)


def openai_memory(store, server, **options):
    os.environ["OPENAI_BASE_URL"] = server.base_url  # cleaned by monkeypatch's delenv on teardown
    return memory(store, policy="openai", model="fake-model", **options)


PRICE_SCRIPT = [
    call("search", pattern="Lumaflex", field="text"),
    call("show", trajectory_id="wa-admin-2", states="1", max_chars=300),
    finish(
        "The latest price is $24.00 (wa-admin-2 state 1, 06:21); it was $19.00 before (wa-admin-1 state 2).",
        [("wa-admin-2", 1, 1), ("wa-admin-1", 2, 3)],
    ),
]


def test_openai_policy_drives_the_real_loop_and_the_context_is_checked_item_by_item(store):
    with FakeOpenAIServer(PRICE_SCRIPT) as server:
        context = openai_memory(store, server).query("What is the current price of Quest Lumaflex Band?", budget=4000)
    first, second = chosen(context)
    assert context.analysis.startswith("The latest price is $24.00")
    assert (first.kind, first.trajectory_id, first.state_index, first.end_state_index) == (
        "state",
        "wa-admin-2",
        1,
        None,
    )
    assert first.url == "http://localhost:7770/page/1" and first.timestamp == "2025-12-16T06:21:00.000Z"
    assert first.path == "trajectories/wa-admin-2/states/0001.md" and first.goal.startswith("Set the price")
    assert first.label == "successful run" and first.screenshot is None
    assert first.text.startswith("state 1 | 2025-12-16T06:21:00.000Z | http://localhost:7770/page/1\n")
    assert "action: click('11')" in first.text and "error: TimeoutError: Locator.click" in first.text
    assert "thought: step 1\nsecond line" in first.text and "'Price' = $24.00" in first.text
    assert (second.kind, second.trajectory_id, second.state_index, second.end_state_index) == (
        "span",
        "wa-admin-1",
        2,
        3,
    )
    assert second.path == "trajectories/wa-admin-1/states/0002.md" and "'Price' = $19.00" in second.text
    assert "\n\nstate 3 | 2025-12-16T06:03:00.000Z" in second.text and "action: send_msg_to_user('done')" in second.text
    assert context.tokens <= 4000 and context.method == "c"
    assert context.meta["finished"] is True and context.meta["stop"] == "finished" and context.meta["steps"] == 3
    assert context.meta["policy"] == "openai" and context.meta["model"] == "fake-model"
    assert context.meta["sandbox"] == "local" and context.meta["tokens_used"]["input_tokens"] > 0

    # what the model was shown came from the real sandbox tools, over the real protocol
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "wa-admin-1 state 2 @ 2025-12-16T06:02:00.000Z" in tool_messages[0]["content"]
    assert "wa-admin-2 state 1 @" in tool_messages[0]["content"]
    shown = [m for m in server.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert shown.startswith("== wa-admin-2 state 1 of 3")
    records = read_transcript(context.meta["transcript"])
    assert [r["type"] for r in records].count("tool") == 3 and records[-1]["type"] == "result"
    assert records[-1]["citations"][0].startswith("trajectory wa-admin-2, state 1")


def test_anthropic_policy_returns_a_screenshot_with_its_state(store):
    script = [
        call("search", pattern="Team settings"),
        finish("The team settings page is inf-app-1 state 0.", [("inf-app-1", 0, 0)]),
    ]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        os.environ["ANTHROPIC_API_KEY"] = "test-key"
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        context = memory(store, policy="anthropic", model="claude-test").query("Where are team settings?", budget=3000)
    (item,) = chosen(context)
    assert (item.trajectory_id, item.state_index, item.kind) == ("inf-app-1", 0, "state")
    assert item.screenshot == "trajectories/inf-app-1/screenshots/0000.png" and item.label == "failed run"
    lme = context.to_lme_items()
    assert lme[0] == {"type": "text", "value": "Analysis: The team settings page is inf-app-1 state 0.\n"}
    assert lme[2]["type"] == "image" and Path(lme[2]["value"]).read_bytes() == PNG
    second = server.requests[1]
    assert second["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"
    assert "inf-app-1 state 0 @" in second["messages"][-1]["content"][0]["content"]


def test_a_question_image_goes_to_the_model(store, tmp_path):
    image = tmp_path / "question.png"
    image.write_bytes(PNG)
    with FakeOpenAIServer([finish("none", [])]) as server:
        openai_memory(store, server).query("Which page is this?", budget=1000, image=str(image))
    content = server.requests[0]["messages"][1]["content"]
    assert "The question comes with the image attached below" in content[0]["text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_429_then_success_is_retried_inside_the_loop(store):
    with FakeOpenAIServer([fail(429), *PRICE_SCRIPT]) as server:
        context = openai_memory(store, server).query("What is the current price?", budget=4000)
    assert context.meta["finished"] and len(server.requests) == 4 and context.items[0].trajectory_id == "wa-admin-2"


def test_a_loop_that_never_finishes_returns_what_it_saw_marked_as_such(store):
    script = [
        call("search", pattern="Lumaflex"),
        call("show", trajectory_id="wa-admin-2", states="1"),
        call("search", pattern="Price"),
        call("search", pattern="Saved"),
    ]
    with FakeOpenAIServer(script) as server:
        context = openai_memory(store, server, max_steps=3).query("What is the price?", budget=4000)
    assert context.meta["finished"] is False and context.meta["stop"] == "steps"
    assert context.meta["stop_reason"] == "step limit reached: 3 of 3 steps without finish"
    assert context.analysis.startswith("The agent stopped before choosing its evidence (step limit reached")
    seen = chosen(context)
    assert [(i.trajectory_id, i.state_index) for i in seen][:1] == [("wa-admin-2", 1)]  # shown, so first
    assert {(i.trajectory_id, i.state_index) for i in seen} >= {("wa-admin-1", 2), ("wa-admin-2", 1)}
    assert seen and all(item.label == NOT_CHOSEN for item in seen)


def test_a_malformed_call_is_reported_to_the_model_which_recovers(store):
    script = [raw_call("search", '{"pattern": "Lumaflex"'), call("search", pattern="Lumaflex", bogus=1), *PRICE_SCRIPT]
    with FakeOpenAIServer(script) as server:
        context = openai_memory(store, server).query("What is the price?", budget=4000)
    told = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert told[0].startswith("error: the arguments of 'search' could not be parsed (not valid JSON")
    assert (
        told[1] == "error: search: unknown argument(s) bogus; expected pattern, ignore_case, fixed, field, "
        "trajectory, site, outcome, since, until, sort, max_results, context, summaries, count"
    )
    assert context.meta["finished"] and context.meta["steps"] == 5


def test_the_repeated_call_catch_and_span_checks_reach_the_model(store):
    script = [call("search", pattern="Lumaflex")] * 3 + [
        finish("x", [("wa-admin-9", 0, 0)]),
        finish("x", [("wa-admin-2", 1, 7)]),
        finish("ok", [("wa-admin-2", 1, 2)]),
    ]
    with FakeOpenAIServer(script) as server:
        context = openai_memory(store, server).query("price?", budget=4000)
    last_tool = [[m["content"] for m in r["messages"] if m["role"] == "tool"][-1] for r in server.requests[1:]]
    assert last_tool[2].startswith("error: this exact search call was already made 2 times")
    assert last_tool[3].startswith("error: no trajectory 'wa-admin-9' in the store")
    assert last_tool[4] == "error: trajectory wa-admin-2 has states 0-2; the span 1-7 goes past its end"
    assert context.meta["finished"] and context.items[0].end_state_index == 2


def test_text_without_a_tool_call_is_nudged(store):
    with FakeOpenAIServer([text("I think the answer is 24."), *PRICE_SCRIPT]) as server:
        context = openai_memory(store, server).query("price?", budget=4000)
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": NUDGE}
    assert context.meta["finished"]


def test_a_small_budget_cuts_pages_around_the_answer_not_at_their_head(store):
    script = [finish("The latest price is $24.00.", [("wa-admin-2", 1, 1), ("wa-admin-1", 2, 2)])]
    with FakeOpenAIServer(script) as server:
        context = openai_memory(store, server).query("What is the current price of Quest Lumaflex Band?", budget=1200)
    assert context.tokens <= 1200
    first, second = chosen(context)
    assert "'Price' = $24.00" in first.text and "'Price' = $19.00" in second.text
    # the page parsed at insert is cut by the excerpter: the matching field stays, the menu goes (marked "…")
    assert "\n…\n" in first.text and "Menu entry 150" not in first.text


def test_focus_page_and_water_level():
    assert water_level([10, 10, 100], 200) is None and water_level([10, 10, 100], 60) == 40
    page = "\n".join(f"line {n}" for n in range(500)) + "\nthe Grand Total is $5\n" + "tail"
    cut = focus_page(page, ["Grand Total"], 60)
    assert cut.startswith("line 0\nline 1\nline 2") and "the Grand Total is $5" in cut and "line 300" not in cut


def test_a_missing_policy_module_is_a_clear_config_error(monkeypatch):
    monkeypatch.setitem(POLICIES, "ghost", "runbook.policies.ghost_planner:Ghost")
    with pytest.raises(
        ConfigError,
        match=r"the ghost policy is not part of this installation "
        r"\(runbook.policies.ghost_planner is missing\)",
    ):
        get_policy("ghost")
    with pytest.raises(ConfigError, match="unknown policy 'nope': choose one of offline, anthropic, openai"):
        get_policy("nope")


def test_insert_goes_into_the_store(store):
    status = memory(store).insert(make_trajectory("wa-admin-3", 2))
    assert status == "inserted" and store.row("wa-admin-3").n_states == 2


@pytest.fixture(scope="module")
def docker_ready():
    from runbook.errors import SandboxError
    from runbook.sandbox.engine import connect
    from runbook.sandbox.image import ensure_image

    try:
        ensure_image(connect())
    except SandboxError as exc:
        sandbox_missing(f"no docker sandbox here: {exc}")


@pytest.mark.docker
def test_the_same_query_in_the_docker_sandbox(store, docker_ready):
    with FakeOpenAIServer(PRICE_SCRIPT) as server:
        context = openai_memory(store, server, sandbox="docker").query("What is the current price?", budget=4000)
    assert context.meta["sandbox"] == "docker" and context.meta["finished"]
    assert [(i.trajectory_id, i.state_index, i.end_state_index) for i in chosen(context)] == [
        ("wa-admin-2", 1, None),
        ("wa-admin-1", 2, 3),
    ]
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "wa-admin-2 state 1 @" in tool_messages[0]["content"]
    assert json.loads(json.dumps(context.to_json()))["items"][0]["path"] == "trajectories/wa-admin-2/states/0001.md"


def test_overlapping_spans_do_not_repeat_states(store):
    spans = [("wa-admin-1", 2, 2), ("wa-admin-1", 1, 3), ("wa-admin-1", 2, 2)]
    with FakeOpenAIServer([finish("x", spans)]) as server:
        context = openai_memory(store, server).query("price?", budget=8000)
    assert [(i.state_index, i.end_state_index) for i in chosen(context)] == [(2, None), (1, None), (3, None)]


SECRET = "HOST-SECRET-4f1c: root password is hunter2"


@pytest.mark.parametrize("where", ["state file", "states folder", "trajectory folder"])
def test_span_expansion_skips_planted_symlinks(store, tmp_path, caplog, where):
    import logging

    host = tmp_path / "host"
    host.mkdir()
    folder = store.trajectory_dir("wa-admin-2")
    if where == "state file":
        (host / "secret.md").write_text(f"trajectory: wa-admin-2\n---\n{SECRET}\n")
        link, target = folder / "states" / "0001.md", host / "secret.md"
        link.unlink()
    else:
        link = folder / "states" if where == "states folder" else folder
        target = host / "copy"
        os.rename(link, target)
        for state in target.rglob("*.md"):
            state.write_text(f"trajectory: wa-admin-2\n---\n{SECRET}\n")
    os.symlink(target, link)
    with FakeOpenAIServer([finish("Prices.", [("wa-admin-2", 0, 1), ("wa-admin-1", 2, 2)])]) as server:
        with caplog.at_level(logging.WARNING, logger="runbook"):
            context = openai_memory(store, server).query("What is the current price?", budget=4000)
    assert SECRET not in context.to_markdown() + context.to_json_text()
    assert ("wa-admin-1", 2) in [(i.trajectory_id, i.state_index) for i in context.items]
    assert any("symbolic link" in record.getMessage() for record in caplog.records)


def test_a_planted_screenshot_symlink_is_not_handed_on(store, tmp_path):
    shot = store.trajectory_dir("inf-app-1") / "screenshots" / "0000.png"
    shot.unlink()
    os.symlink("/etc/hostname", shot)
    with FakeOpenAIServer([finish("Team settings.", [("inf-app-1", 0, 0)])]) as server:
        context = openai_memory(store, server).query("Where are team settings?", budget=3000)
    (item,) = chosen(context)
    assert item.screenshot is None and not any(part["type"] == "image" for part in context.to_lme_items())


@pytest.mark.parametrize("damage", ["older format", "no pools"])
def test_pools_that_cannot_be_read_stop_c_as_they_stop_r(store, damage):
    import shutil

    from runbook.core.pools import FORMAT, MANIFEST
    from runbook.errors import StoreError
    from runbook.pools import Retriever

    pools = store.layout.pools
    if damage == "older format":
        manifest = json.loads((pools / MANIFEST).read_text())
        (pools / MANIFEST).write_text(json.dumps(manifest | {"format": FORMAT - 1}))
    else:
        shutil.rmtree(pools)
    with pytest.raises(StoreError, match="runbook reindex"):
        Retriever(store).search("What is the current price?", 4000)
    with FakeOpenAIServer(PRICE_SCRIPT) as server:  # C would answer without R's evidence and not say so
        with pytest.raises(StoreError, match="runbook reindex"):
            openai_memory(store, server).query("What is the current price?", budget=4000)


def test_a_states_driver_retry_log_is_cut_to_its_gist():
    # a real state of ../shared/data whose click timed out: 30 lines of Playwright's retries behind the first line
    from runbook.memory.spans import state_header
    from tests.conftest import shared_runs

    state = shared_runs("wa-map-54")["wa-map-54"]["states"][5]
    assert state["action_error"].count("retrying click action") >= 5
    header = state_header(5, {"time": "t", "url": state["url"], "error": state["action_error"]})
    error_line = next(line for line in header.splitlines() if line.startswith("error: "))
    assert error_line.startswith("error: TimeoutError: Locator.click: Timeout 500ms exceeded.")
    assert "intercepts pointer events" in error_line and "retrying" not in header and len(header.splitlines()) == 2
