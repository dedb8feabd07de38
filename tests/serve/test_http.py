"""The HTTP API end to end: uvicorn on a loopback port, a real HTTP client (httpx), a real store with pools."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from runbook.cli import main
from runbook.memory import METHODS
from runbook.serve import MemoryService, create_app
from runbook.serve.transport import GracefulServer, ServerLimits, server_config
from runbook.store import Store
from tests.conftest import make_trajectory

ROOT = Path(__file__).resolve().parents[2]

PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn serving the app in a thread as `runbook serve` runs it (its protocol and limits), stopped at the end
    of the test."""

    def __init__(self, app, limits: ServerLimits | None = None):
        self.port = free_port()
        self.server = GracefulServer(server_config(app, limits or ServerLimits(), host="127.0.0.1", port=self.port))
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
    service = MemoryService(tmp_path / "store", create=True, write_timeout=2)
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
        assert client.post("/trajectories", json=body).json() == {
            "trajectory_id": "whole-1",
            "status": "inserted",
            "states": 2,
        }
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

    memory = runbook.open(tmp_path / "lib-store", create=True, method="r")
    memory.insert(make_trajectory("lib-1", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE]))
    context = memory.query("What price does the admin list for Quest Lumaflex Band?", budget=2000)
    assert any(item.trajectory_id == "lib-1" and "$24.00" in item.text for item in context.items)


EMAIL_PAGE = (
    "RootWebArea 'Configuration / Settings / Stores / Magento Admin'\n\theading 'Store Email Addresses'\n"
    "\ttextbox 'Store Email' value='{}'\n\tbutton 'Save Config'"
)


def test_streamed_steps_get_the_receive_time_so_the_new_value_is_the_latest(service):
    """Item 1: steps streamed without a time were stored with none, and R labelled the new Store Email 'older
    view (?)' and the old one 'latest'. Now each gets the server's receive time, and says so."""
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=60) as client:
        old = {
            "id": "old-1",
            "goal": "Look up the store email",
            "site": "shopping_admin",
            "states": [
                {"url": "http://admin/", "accessibility_tree": "'Dashboard'", "timestamp": "2025-12-10T10:00:00Z"},
                {
                    "url": "http://admin/config/trans_email/",
                    "accessibility_tree": EMAIL_PAGE.format("sales@old-shop.com"),
                    "timestamp": "2025-12-10T10:01:00Z",
                },
            ],
        }
        assert client.post("/trajectories", json=old).status_code == 201
        client.post("/trajectories", json={"id": "new-1", "stream": True, "goal": "Set the store email"})
        for value in ("sales@old-shop.com", "orders@new-shop.com"):
            step = client.post(
                "/trajectories/new-1/states",
                json={"url": "http://admin/config/trans_email/", "accessibility_tree": EMAIL_PAGE.format(value)},
            ).json()
            assert step["timestamp"] > "2025-12-10" and "receive time" in step["timestamp_source"]
        assert client.post("/trajectories/new-1/close").status_code == 200
        stored = client.get("/trajectories/new-1").json()["states"]
        assert all(s["timestamp"] and "receive time" in s["timestamp_source"] for s in stored)

        context = client.post(
            "/query", json={"question": "What is the Store Email currently set to?", "budget": "3k", "method": "r"}
        ).json()
        pages = [i for i in context["items"] if i["kind"] == "state" and "Store Email" in i["text"]]
        assert "orders@new-shop.com" in pages[0]["text"] and pages[0]["label"].startswith("latest")
        assert "receive time" in pages[0]["timestamp_source"]
        assert not [i["label"] for i in context["items"] if "(?)" in i["label"]]  # every view has a time

        # a time that is not ISO-8601, or one going backwards, is refused naming the field
        client.post("/trajectories", json={"id": "bad-times", "stream": True})
        refused = client.post("/trajectories/bad-times/states", json={"url": "u", "timestamp": "yesterday"})
        assert refused.status_code == 400 and refused.json()["field"] == "timestamp"
        assert "ISO-8601" in refused.json()["error"]
        client.post("/trajectories/bad-times/states", json={"url": "u", "timestamp": "2025-12-16T06:00:00Z"})
        refused = client.post("/trajectories/bad-times/states", json={"url": "u", "timestamp": "2025-12-16T05:00:00Z"})
        assert refused.status_code == 400 and "earlier than" in refused.json()["error"]
        whole = {"id": "bad-2", "states": [{"url": "u", "timestamp": "yesterday"}]}
        assert client.post("/trajectories", json=whole).json()["field"] == "states[0].timestamp"
        assert client.get("/stats").json()["last_time"] != "yesterday"


def test_the_docs_work_offline_and_the_schema_is_typed_and_public(service):
    """Item 3: /docs loaded Swagger UI from a CDN (a blank page offline); the bodies of POST /trajectories and
    /states were untyped; only FastAPI's 422 was documented; /openapi.json was behind the API key."""
    with Server(create_app(service, api_key="s3cret")) as url, httpx.Client(base_url=url, timeout=30) as client:
        for page in ("/docs", "/redoc"):
            html = client.get(page)
            assert html.status_code == 200
            scripts = re.findall(r'src="([^"]+)"', html.text) + re.findall(r'href="([^"]+)"', html.text)
            assert scripts and all(s.startswith("/") for s in scripts), scripts  # nothing from another host
            for asset in scripts:
                assert client.get(asset).status_code == 200, asset
        schema = client.get("/openapi.json").json()  # no key needed for the schema
        assert client.get("/stats").status_code == 401  # the data still needs it
    paths, models = schema["paths"], schema["components"]["schemas"]
    for path, method in [
        ("/query", "post"),
        ("/trajectories", "post"),
        ("/trajectories/{trajectory_id}/states", "post"),
        ("/trajectories/{trajectory_id}/close", "post"),
    ]:
        operation = paths[path][method]
        assert "422" not in operation["responses"]
        assert operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
        assert "requestBody" in operation, path
        assert "413" in operation["responses"], path  # every body is held to the size limit
    assert set(models["ErrorBody"]["properties"]) == {"error", "field"}
    assert "HTTPValidationError" not in models
    assert {"id", "states", "stream", "visible"} <= set(models["TrajectoryRequest"]["properties"])
    assert models["TrajectoryRequest"]["examples"]
    assert {"url", "accessibility_tree", "axtree_txt", "timestamp"} <= set(models["StepFields"]["properties"])
    assert models["StepFields"]["examples"]
    assert set(models["QueryRequest"]["properties"]["method"]["enum"]) == set(METHODS)
    assert all(spec.get("description") for spec in models["StepFields"]["properties"].values())
    for reply in ("QueryResult", "Item", "InsertResult", "OpenResult", "StepResult"):  # no 'additionalProp1'
        assert models[reply].get("additionalProperties") is not True, reply


def test_a_mistyped_store_is_an_error_and_an_empty_store_says_so(tmp_path, clean_env):
    """Item 4: `serve http|mcp --store typo` created an empty store silently; on it method c said 'the question's
    premise may be false'."""
    for kind in ("http", "mcp"):
        result = CliRunner().invoke(main, ["--store", str(tmp_path / "typo"), "serve", kind])
        assert result.exit_code == 1 and "no runbook store at" in result.output and "--create" in result.output
    assert not (tmp_path / "typo").exists()
    service = MemoryService(tmp_path / "new", create=True)
    try:
        for method in ("c", "auto", "r"):
            context = service.query("What is the Store Email currently set to?", method=method)
            assert context["analysis"].startswith("The store is empty") and context["items"] == []
            assert "premise" not in context["analysis"]
    finally:
        service.close()


def test_open_trajectories_live_in_the_store_across_a_restart_with_an_age_limit(tmp_path, clean_env):
    """Item 5: open trajectories were kept in the server's memory; a restart lost them without a word."""
    first = MemoryService(tmp_path / "store", create=True)
    with Server(create_app(first)) as url, httpx.Client(base_url=url, timeout=30) as client:
        client.post("/trajectories", json={"id": "long-run", "stream": True, "goal": "Check a price"})
        for n in range(2):
            client.post("/trajectories/long-run/states", json={"url": f"http://shop/{n}", "axtree_txt": f"'Page {n}'"})
        assert client.get("/stats").json()["trajectories"] == 0
    first.close()  # the server stops

    second = MemoryService(tmp_path / "store", open_max_age_s=3600)
    with Server(create_app(second)) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/stats").json()["open_trajectories"] == 1
        assert client.get("/trajectories/long-run").json()["n_states"] == 2
        step = client.post("/trajectories/long-run/states", json={"url": "http://shop/2", "axtree_txt": PRICE_PAGE})
        assert step.json()["states"] == 3
        assert client.post("/trajectories/long-run/close").json() == {
            "trajectory_id": "long-run",
            "states": 3,
            "status": "inserted",
        }
        assert client.get("/stats").json()["open_trajectories"] == 0
    second.close()
    assert [s.url for s in Store(tmp_path / "store").load("long-run").states] == [f"http://shop/{n}" for n in range(3)]

    aged = MemoryService(tmp_path / "store", open_max_age_s=0.5)
    try:
        aged.open_trajectory("abandoned", goal="Wander off")
        aged.append_state("abandoned", {"url": "http://shop/a"})
        time.sleep(1.0)
        with Server(create_app(aged)) as url, httpx.Client(base_url=url, timeout=30) as client:
            gone = client.post("/trajectories/abandoned/states", json={"url": "http://shop/b"})
            assert gone.status_code == 410 and "discarded" in gone.json()["error"]
            assert client.get("/stats").json()["open_trajectories"] == 0
    finally:
        aged.close()


def test_the_server_prints_a_start_up_line_and_an_access_log_and_query_refuses_unknown_fields(tmp_path, clean_env):
    """Item 7: no start-up line, no access log; /query ignored unknown fields ("metod": "c" ran r silently)."""
    Store(tmp_path / "store", create=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "runbook.cli", "--store", str(tmp_path / "store"), "serve", "http", "--port", str(port)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/stats").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
            time.sleep(0.1)
        refused = httpx.post(f"http://127.0.0.1:{port}/query", json={"question": "Where?", "metod": "c"})
        assert refused.status_code == 400 and refused.json()["field"] == "metod"
    finally:
        server.terminate()
        log = server.communicate(timeout=20)[1]
    assert f"runbook serve http on http://127.0.0.1:{port}" in log and "0 trajectories" in log
    assert '"GET /stats" 200' in log and '"POST /query" 400' in log


def test_steps_in_browsergym_agentlab_and_browser_use_shapes_are_accepted(service):
    """Item 10: BrowserGym's own field name axtree_txt was refused; a step may come in each framework's shape."""
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        client.post("/trajectories", json={"id": "bgym-1", "stream": True, "goal": "Find the price"})
        flat = {"url": "http://shop/a", "axtree_txt": "RootWebArea 'Catalog'", "action": "click('12')", "think": "go"}
        flat["timestamp"] = "2025-12-16T06:03:00Z"
        assert client.post("/trajectories/bgym-1/states", json=flat).status_code == 201
        agentlab = {
            "obs": {
                "url": "http://shop/b",
                "axtree_txt": PRICE_PAGE,
                "last_action_error": "TimeoutError: click('12')",
                "open_pages_titles": ["Edit Product"],
                "elapsed_time": 3.2,
            },
            "action": "send_msg_to_user('$24.00')",
            "agent_info": {"think": "The price is $24.00."},
            "profiling": {"env_stop": 1765865000.5},
            "reward": 1.0,
        }
        assert client.post("/trajectories/bgym-1/states", json=agentlab).status_code == 201
        assert client.post("/trajectories/bgym-1/close").status_code == 200
        client.post("/trajectories", json={"id": "bu-1", "stream": True, "goal": "Rename the user"})
        entry = {
            "model_output": {"thinking": "Type the name.", "action": [{"input": {"index": 16, "text": "Jordan"}}]},
            "result": [{"is_done": False, "error": "Element 16 not found"}],
            "state": {"url": "http://linear/settings", "title": "Settings", "tabs": [], "interacted_element": [None]},
            "metadata": {"step_start_time": 1771467730.5, "step_end_time": 1771467731.0, "step_number": 1},
            "state_message": "<browser_state>\n[16]<input />\n</browser_state>",
        }
        assert client.post("/trajectories/bu-1/states", json=entry).status_code == 201
        assert client.post("/trajectories/bu-1/close").status_code == 200
    gym = service.store.load("bgym-1")
    assert gym.states[0].text == "RootWebArea 'Catalog'" and gym.states[0].thought == "go"
    assert gym.states[0].action_error == "TimeoutError: click('12')"  # BrowserGym reports it on the next page
    assert gym.states[1].title == "Edit Product" and gym.states[1].thought == "The price is $24.00."
    assert gym.states[1].timestamp == "2025-12-16T06:03:20.500Z"
    bu = service.store.load("bu-1").states[0]
    assert (bu.url, bu.title, bu.text) == ("http://linear/settings", "Settings", "[16]<input />")
    assert bu.action == "input(index=16, text='Jordan')" and bu.action_error == "Element 16 not found"
    assert bu.timestamp.startswith("2026-02-19T02:22:10")
