"""The HTTP API end to end: uvicorn on a loopback port, a real HTTP client (httpx), a real store with pools."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn

from runbook.serve import MemoryService, create_app
from tests.conftest import make_trajectory

PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn serving the app in a thread, stopped at the end of the test."""

    def __init__(self, app):
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def service(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", write_timeout=2)
    yield service
    service.close()


def state_json(state) -> dict:
    return {
        "url": state.url,
        "title": state.title,
        "accessibility_tree": state.text,
        "action": state.action,
        "action_error": state.action_error,
        "thought": state.thought,
        "timestamp": state.timestamp,
    }


def test_an_agent_streams_a_trajectory_in_and_queries_it_with_provenance(service):
    run = make_trajectory(
        "agent-run-1",
        3,
        site="shopping_admin",
        goal="Check the price of Quest Lumaflex Band",
        texts=["RootWebArea 'Dashboard'", "RootWebArea 'Catalog'", PRICE_PAGE],
    )
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        opened = client.post("/trajectories", json={"id": run.id, "stream": True, "goal": run.goal, "site": run.site})
        assert opened.status_code == 201 and opened.json()["open"] is True
        for n, state in enumerate(run.states):
            step = client.post(f"/trajectories/{run.id}/states", json=state_json(state))
            assert step.status_code == 201 and step.json()["states"] == n + 1
        assert client.get("/stats").json()["trajectories"] == 0  # not visible before it is closed
        assert client.get(f"/trajectories/{run.id}").json()["open"] is True
        closed = client.post(f"/trajectories/{run.id}/close", json={"outcome": "success (reward 1.0)"})
        assert closed.status_code == 200 and closed.json()["status"] == "inserted"

        answer = client.post(
            "/query",
            json={"question": "What price does the admin list for Quest Lumaflex Band?", "budget": "2k", "method": "r"},
        ).json()
        assert answer["tokens"] <= 2000
        cited = [item for item in answer["items"] if item["trajectory_id"] == run.id]
        assert any("$24.00" in item["text"] and item.get("url") and item.get("timestamp") for item in cited)
        state = client.get(f"/trajectories/{run.id}/states/2").json()
        assert "Quest Lumaflex Band" in state["text"] and state["path"].endswith("states/0002.md")
        assert client.get(f"/trajectories/{run.id}").json()["n_states"] == 3


def test_a_whole_trajectory_and_step_by_step_visibility(service):
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        whole = make_trajectory("whole-1", 2, texts=["'Orders'", "'Order 305 canceled'"])
        body = {"id": whole.id, "goal": whole.goal, "site": whole.site, "states": [state_json(s) for s in whole.states]}
        assert client.post("/trajectories", json=body).json() == {"trajectory_id": "whole-1", "status": "inserted"}
        assert client.post("/trajectories", json=body).json()["status"] == "unchanged"  # idempotent
        client.post("/trajectories", json={"id": "live-1", "stream": True, "visible": "step"})
        client.post("/trajectories/live-1/states", json={"url": "http://shop/a", "accessibility_tree": "'Zephyr'"})
        assert client.get("/trajectories/live-1").json()["n_states"] == 1  # already stored after one step
        client.post("/trajectories/live-1/states", json={"url": "http://shop/b", "accessibility_tree": "'Ball'"})
        assert client.post("/trajectories/live-1/close").json()["states"] == 2
        assert client.get("/stats").json()["trajectories"] == 2


def test_bad_input_gets_a_clear_4xx_and_leaves_the_store_untouched(service):
    with Server(create_app(service, max_body_bytes=50_000)) as url, httpx.Client(base_url=url, timeout=30) as client:

        def refused(response, status, *words):
            assert response.status_code == status, response.text
            assert all(word in response.json()["error"] for word in words), response.json()

        refused(client.post("/query", content=b"{not json", headers={"Content-Type": "application/json"}), 400, "JSON")
        refused(client.post("/query", json={"budget": "2k"}), 400, "question")
        refused(client.post("/query", json={"question": "Where?", "budget": 0}), 400, "budget")
        refused(client.post("/query", json={"question": "Where?", "budget": "lots"}), 400, "budget")
        refused(client.post("/query", json={"question": "Where?", "method": "psychic"}), 400, "method")
        refused(client.post("/query", json={"question": "  "}), 400, "question is empty")
        refused(client.post("/trajectories", json={"id": "x-1", "states": []}), 400, "states")
        refused(
            client.post("/trajectories", json={"id": "x-2", "states": [{"state_index": 3}]}),
            400,
            "states[0].state_index",
        )
        refused(
            client.post("/trajectories", json={"id": "x-3", "states": [{"url": "u", "screenshot": "/etc/passwd"}]}),
            400,
            "screenshot",
        )
        refused(
            client.post("/trajectories", content=b"[1, 2]", headers={"Content-Type": "application/json"}),
            400,
            "JSON object",
        )
        refused(client.post("/trajectories/nobody/states", json={"url": "u"}), 404, "nobody")
        refused(client.post("/trajectories/nobody/close"), 404, "nobody")
        refused(client.get("/trajectories/nobody"), 404, "nobody")
        refused(
            client.post(
                "/trajectories", content=b"{" + b" " * 60_000 + b"}", headers={"Content-Type": "application/json"}
            ),
            413,
            "over",
        )
        client.post("/trajectories", json={"id": "open-1", "stream": True})
        refused(client.post("/trajectories/open-1/states", json={"url": "u", "colour": "red"}), 400, "colour")
        refused(client.post("/trajectories/open-1/close"), 400, "no steps")
        assert client.get("/stats").json()["trajectories"] == 0
    assert service.store.rows() == []


def test_an_api_key_is_required_when_set(service):
    with Server(create_app(service, api_key="s3cret")) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/stats").status_code == 401
        assert client.get("/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/stats", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert client.get("/stats", headers={"X-API-Key": "s3cret"}).status_code == 200


def test_concurrent_readers_see_whole_trajectories_while_one_writer_streams(service):
    service.insert(
        {
            "id": "seed-1",
            "goal": "Open the catalog",
            "states": [{"url": "http://shop/catalog", "accessibility_tree": "'Catalog' 'Quest Lumaflex Band'"}],
        }
    )
    errors, counts = [], []
    with Server(create_app(service)) as url:

        def reader():
            with httpx.Client(base_url=url, timeout=60) as client:
                for _ in range(5):
                    response = client.post("/query", json={"question": "Quest Lumaflex Band price", "budget": 1500})
                    if response.status_code != 200:
                        errors.append(response.text)
                    for n in range(3):  # a stored streamed trajectory is whole, never a prefix of its steps
                        seen = client.get(f"/trajectories/stream-{n}")
                        if seen.status_code == 200 and not seen.json()["open"]:
                            counts.append(seen.json()["n_states"])

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for thread in threads:
            thread.start()
        with httpx.Client(base_url=url, timeout=60) as writer:
            for n in range(3):
                tid = f"stream-{n}"
                writer.post("/trajectories", json={"id": tid, "stream": True, "goal": "Check a price"})
                for i in range(3):
                    assert (
                        writer.post(
                            f"/trajectories/{tid}/states",
                            json={"url": f"http://shop/p/{i}", "accessibility_tree": f"'Price' value='${n}{i}.00'"},
                        ).status_code
                        == 201
                    )
                assert writer.post(f"/trajectories/{tid}/close").status_code == 200
        for thread in threads:
            thread.join(60)
    assert errors == []
    assert all(n == 3 for n in counts)
    assert len(service.store.rows()) == 4 and all(row.n_states in (1, 3) for row in service.store.rows())


def test_in_process_agents_use_the_library(tmp_path, clean_env):
    import runbook

    memory = runbook.open(tmp_path / "lib-store")
    memory.insert(make_trajectory("lib-1", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE]))
    context = memory.query("What price does the admin list for Quest Lumaflex Band?", budget=2000)
    assert any(item.trajectory_id == "lib-1" and "$24.00" in item.text for item in context.items)
