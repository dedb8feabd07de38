"""What the servers say when they refuse, and what they log (items 4, 5, 7 and 9 of issue 34): a duplicate id with
other content is a 409 with its reason (and the client raises), a step's state_index must be the next index, a
budget is refused under its own name, the OpenAPI shows each error's own example, invalid MCP arguments are refused
in runbook's words and logged, the MCP resources have names, a screenshot refusal names no temporary folder, a
trajectory discarded for age is logged, the client reads RUNBOOK_API_KEY, and library log lines take runbook's
format."""

from __future__ import annotations

import logging
import re
import socket
import threading

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from runbook.pools.build import PoolListener
from runbook.serve import MemoryService, create_app
from runbook.serve.client import Client, RequestRefused
from runbook.store import Store
from tests.serve.cli_server import CliServer
from tests.serve.test_http import Server

RUN = {
    "id": "run-1",
    "goal": "Open the catalog",
    "states": [{"url": "http://shop/a", "accessibility_tree": "'A'", "timestamp": "2025-12-16T06:00:00Z"}],
}


@pytest.fixture
def service(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", create=True, write_timeout=5)
    yield service
    service.close()


def test_a_duplicate_id_with_other_content_is_a_409_with_its_reason_and_the_client_raises(service):
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/trajectories", json=RUN).status_code == 201
        assert http.post("/trajectories", json=RUN).json()["status"] == "unchanged"
        other = {**RUN, "goal": "Something else"}
        refused = http.post("/trajectories", json=other)
        assert refused.status_code == 409 and refused.json()["field"] == "id"
        assert "already stored with different content" in refused.json()["error"]
        untimed = http.post("/trajectories", json={**other, "states": [{"url": "http://shop/a"}]})
        assert untimed.status_code == 409 and "sent without a time" in untimed.json()["error"]
        with pytest.raises(RequestRefused) as raised:
            Client(url).insert(other)
        assert raised.value.status == 409 and raised.value.field == "id"
        schema = http.get("/openapi.json").json()
        assert "409" in schema["paths"]["/trajectories"]["post"]["responses"]
    assert service.store.load("run-1").goal == "Open the catalog"


def test_a_steps_state_index_must_be_the_next_index(service):
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as http:
        http.post("/trajectories", json={"id": "live", "stream": True})
        posted = [
            http.post("/trajectories/live/states", json={"url": f"http://shop/{i}", "state_index": i})
            for i in (0, 5, 1, 0)
        ]
        assert [p.status_code for p in posted] == [201, 400, 201, 400]
        assert posted[1].json()["field"] == "state_index" and "is 5, expected 1" in posted[1].json()["error"]
        assert "is 0, expected 2" in posted[3].json()["error"]
        assert http.post("/trajectories/live/states", json={"url": "http://shop/2"}).json()["state_index"] == 2
        http.post("/trajectories/live/close")
    assert [s.url for s in service.store.load("live").states] == ["http://shop/0", "http://shop/1", "http://shop/2"]


def test_a_budget_is_refused_under_its_own_name(service):
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as http:
        for budget, words in [(2.5, "whole number of tokens"), ("999999999999999999999k", "maximum of 1,000,000")]:
            refused = http.post("/query", json={"question": "Where?", "budget": budget})
            assert refused.status_code == 400 and refused.json()["field"] == "budget", refused.json()
            assert words in refused.json()["error"] and "budget.int" not in refused.text


def test_each_error_in_the_openapi_shows_its_own_example(service):
    with Server(create_app(service)) as url:
        responses = httpx.get(f"{url}/openapi.json").json()["paths"]["/trajectories/{trajectory_id}/states"]["post"]
    examples = {
        code: spec["content"]["application/json"]["example"]["error"]
        for code, spec in responses["responses"].items()
        if code.startswith("4") or code.startswith("5")
    }
    assert {"400", "401", "404", "410", "413", "421", "503"} <= set(examples)
    assert len(set(examples.values())) == len(examples), examples


def test_a_screenshot_refusal_names_no_temporary_folder(service):
    refused = httpx.Response(200)
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as http:
        refused = http.post("/trajectories", json={"id": "s", "states": [{"url": "u", "screenshot": "a.png"}]})
        http.post("/trajectories", json={"id": "live", "stream": True})
        step = http.post("/trajectories/live/states", json={"url": "u", "screenshot_path": "/etc/passwd"})
    for answer, field in ((refused, "states[0].screenshot"), (step, "screenshot")):
        assert answer.status_code == 400 and answer.json()["field"] == field
        assert "--screenshot-root" in answer.json()["error"] and "runbook-serve-" not in answer.text


def test_a_trajectory_discarded_for_age_is_logged(tmp_path, clean_env, caplog):
    service = MemoryService(tmp_path / "store", create=True, open_max_age_s=2.0)
    try:
        service.open_trajectory("abandoned")
        service.append_state("abandoned", {"url": "http://shop/a"})
        threading.Event().wait(2.5)
        with caplog.at_level(logging.WARNING, logger="runbook"):
            with pytest.raises(Exception, match="discarded"):
                service.append_state("abandoned", {"url": "http://shop/b"})  # a late step: 410
        assert "discarded open trajectory 'abandoned'" in caplog.text
    finally:
        service.close()


def test_the_client_reads_the_api_key_from_the_environment(tmp_path, clean_env, monkeypatch):
    service = MemoryService(tmp_path / "store", create=True)
    try:
        with Server(create_app(service, api_key="s3cret")) as url:
            with pytest.raises(RequestRefused):
                Client(url).stats()
            monkeypatch.setenv("RUNBOOK_API_KEY", "s3cret")
            assert Client(url).stats()["trajectories"] == 0
    finally:
        service.close()


def test_an_append_with_visible_step_does_not_wait_for_the_reinsert(service, monkeypatch):
    """Item 8 of issue 33: each visible='step' append re-inserted the whole trajectory before it answered (0.24 s
    at the first step, 1.51 s at step 150). The re-insert now runs in the background, held here at its commit."""
    held, release = threading.Event(), threading.Event()
    listener_call = PoolListener.__call__

    def holding(self, store, staged, status):
        listener_call(self, store, staged, status)
        if threading.current_thread().name == "runbook-step-inserts":
            held.set()
            release.wait(30)

    monkeypatch.setattr(PoolListener, "__call__", holding)
    service.open_trajectory("live", visible="step")
    service.append_state("live", {"url": "http://shop/0"})
    assert held.wait(30), "the re-insert after the first step runs in the background"
    answers: list = []
    appending = threading.Thread(
        target=lambda: answers.extend(service.append_state("live", {"url": f"http://shop/{i}"}) for i in (1, 2))
    )
    appending.start()
    appending.join(10)  # while the re-insert is held at its commit
    release.set()
    assert [a["state_index"] for a in answers] == [1, 2], "the appends waited for the re-insert"
    assert service.settle(30)
    assert service.trajectory("live")["n_states"] == 3 and service.trajectory("live")["open"] is True


def test_invalid_mcp_arguments_are_refused_in_runbooks_words_and_logged(tmp_path, clean_env):
    store = Store(tmp_path / "store", create=True).root
    with CliServer(store, "mcp", "--transport", "http") as server:

        async def main():
            async with (
                streamable_http_client(f"{server.url}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                reply = await session.call_tool("query", {"question": "Where?", "budget": 2.5})
                assert reply.isError and "field 'budget'" in reply.content[0].text
                assert "pydantic" not in reply.content[0].text and "budget.int" not in reply.content[0].text
                reply = await session.call_tool("query", {"question": "Where?", "budget": "999999999999999999999k"})
                assert reply.isError and "maximum of 1,000,000 tokens" in reply.content[0].text
                reply = await session.call_tool("insert", {"trajectory": {"id": "x", "states": [{"url": 5}]}})
                assert reply.isError and "field 'trajectory.states[0].url'" in reply.content[0].text
                resources = {r.name for r in (await session.list_resources()).resources}
                templates = {t.name for t in (await session.list_resource_templates()).resourceTemplates}
                assert resources == {"stats", "trajectories"}
                assert templates == {"trajectory", "state", "screenshot"}

        anyio.run(main)
    assert re.search(r"tool query \d+ ms refused: invalid arguments: field 'budget'", server.log), server.log
    assert "tool insert" in server.log and "Traceback" not in server.log


def test_library_log_lines_take_runbooks_format(tmp_path, clean_env):
    store = Store(tmp_path / "store", create=True).root
    with CliServer(store, "http") as server:
        with socket.create_connection(("127.0.0.1", server.port)) as garbage:
            garbage.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            garbage.recv(1000)
    lines = [line for line in server.log.splitlines() if line.strip()]
    assert lines and all(re.match(r"\d\d:\d\d:\d\d [\w.]+ (INFO|WARNING|ERROR) ", line) for line in lines), lines
    assert any("uvicorn.error WARNING Invalid HTTP request" in line for line in lines)
