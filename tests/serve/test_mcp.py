"""The MCP server driven by the SDK's own client: over stdio (the client starts `runbook serve mcp`) and over
streamable HTTP (`runbook serve mcp --transport http` on a loopback port)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import runbook
from runbook.budget import DEFAULT_BUDGET, count_tokens
from runbook.memory import DEFAULT_METHOD
from runbook.store import Store
from tests.conftest import make_trajectory

ROOT = Path(__file__).resolve().parents[2]
PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


@pytest.fixture
def env(clean_env, tmp_path) -> dict:
    Store(tmp_path / "store", create=True)
    return dict(os.environ, PYTHONPATH=str(ROOT), RUNBOOK_STORE=str(tmp_path / "store"))


def result(reply) -> dict:
    assert not reply.isError, reply.content
    return reply.structuredContent if reply.structuredContent is not None else json.loads(reply.content[0].text)


def stdio(env: dict, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "runbook.cli", "serve", "mcp", *args], env=env)


async def stream_and_query(session: ClientSession) -> None:
    await session.initialize()
    names = {tool.name for tool in (await session.list_tools()).tools}
    assert {"query", "insert", "open_trajectory", "append_state", "close_trajectory", "stats", "show"} <= names
    result(
        await session.call_tool(
            "open_trajectory", {"trajectory_id": "mcp-run-1", "goal": "Check a price", "site": "shopping_admin"}
        )
    )
    for n, page in enumerate(["RootWebArea 'Dashboard'", "RootWebArea 'Catalog'", PRICE_PAGE]):
        step = result(
            await session.call_tool(
                "append_state",
                {
                    "trajectory_id": "mcp-run-1",
                    "state": {
                        "url": f"http://admin/p/{n}",
                        "accessibility_tree": page,
                        "timestamp": f"2025-12-16T06:0{n}:00Z",
                    },
                },
            )
        )
        assert step["states"] == n + 1
    assert result(await session.call_tool("close_trajectory", {"trajectory_id": "mcp-run-1"}))["status"] == "inserted"

    context = result(
        await session.call_tool(
            "query",
            {"question": "What price does the admin list for Quest Lumaflex Band?", "budget": "2k", "method": "r"},
        )
    )
    cited = [item for item in context["items"] if item["trajectory_id"] == "mcp-run-1"]
    assert any("$24.00" in item["text"] and item.get("url") for item in cited)
    assert (
        result(await session.call_tool("show", {"trajectory_id": "mcp-run-1", "state_index": 2}))["url"]
        == "http://admin/p/2"
    )
    resource = await session.read_resource("runbook://trajectories/mcp-run-1")
    assert json.loads(resource.contents[0].text)["n_states"] == 3

    refused = await session.call_tool("append_state", {"trajectory_id": "nobody", "state": {"url": "u"}})
    assert refused.isError and "nobody" in refused.content[0].text
    refused = await session.call_tool("insert", {"trajectory": {"id": "bad-1", "states": []}})
    assert refused.isError and "states" in refused.content[0].text
    assert result(await session.call_tool("stats", {}))["trajectories"] == 1


def test_mcp_over_stdio(env):
    async def main():
        async with stdio_client(stdio(env)) as (read, write), ClientSession(read, write) as session:
            await stream_and_query(session)

    anyio.run(main)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mcp_http(env: dict, port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "runbook.cli", "serve", "mcp", "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return server
        assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()[-2000:]
        time.sleep(0.1)


def test_mcp_over_streamable_http_logs_calls_and_no_traceback_on_disconnect(env):
    port = free_port()
    server = start_mcp_http(env, port)
    try:

        async def main():
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await stream_and_query(session)

        anyio.run(main)
        time.sleep(1.0)  # the server notices the client is gone
    finally:
        server.terminate()
        log = server.communicate(timeout=20)[1]
    assert "runbook serve mcp over streamable HTTP on http://127.0.0.1" in log  # a start-up line
    assert "tool query" in log and "tool append_state" in log  # an access log: one line per call
    assert "ClosedResourceError" not in log and "Traceback" not in log and "ERROR" not in log, log[-3000:]


def test_tools_are_typed_described_and_versioned(env):
    """Item 6: parameter descriptions and enums, dedented descriptions, runbook's version, resources listed."""

    async def main():
        async with stdio_client(stdio(env)) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.serverInfo.version == runbook.__version__
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for tool in tools.values():
                assert "\n    " not in (tool.description or ""), tool.description
                for name, spec in tool.inputSchema.get("properties", {}).items():
                    assert spec.get("description"), f"{tool.name}.{name} has no description"
            query = tools["query"].inputSchema["properties"]
            assert set(query["method"]["enum"]) == set(runbook.memory.METHODS)
            assert query["method"]["default"] == DEFAULT_METHOD and query["budget"]["default"] == DEFAULT_BUDGET
            assert {"type": "integer"} in query["budget"]["anyOf"]
            assert tools["open_trajectory"].inputSchema["properties"]["visible"]["enum"] == ["close", "step"]
            assert tools["query"].outputSchema and "items" in tools["query"].outputSchema["properties"]
            # every tool's result is structured content (the Inspector showed insert's, stats', ... as JSON text only)
            assert [name for name, tool in tools.items() if not tool.outputSchema] == []
            uris = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {"runbook://stats", "runbook://trajectories"} <= uris

    anyio.run(main)


def test_query_returns_text_to_read_structure_and_images_when_asked(env, tmp_path):
    """Item 6: the context is text (within the budget), the structure is structured content; an integer budget
    works; an item names its state's screenshot and images come back as image content when asked; an image under
    method r is an error, not silently ignored; a refused append names the MCP tool to call."""
    from PIL import Image

    shots = tmp_path / "shots"
    shots.mkdir()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(shots / "price.png")
    run = make_trajectory("shot-run", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE])
    body = run.to_dict()
    body["states"][2]["screenshot"] = "price.png"

    async def main():
        params = stdio(env, "--screenshot-root", str(shots))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result(await session.call_tool("insert", {"trajectory": body}))
            reply = await session.call_tool(
                "query",
                {
                    "question": "What price does the admin list for Quest Lumaflex Band?",
                    "budget": 1500,
                    "method": "R",
                    "images": 1,
                },
            )
            assert not reply.isError, reply.content
            text = reply.content[0].text
            assert text.startswith("Analysis:") and not text.lstrip().startswith("{")
            assert "$24.00" in text and count_tokens(text) <= 1500
            structured = reply.structuredContent
            assert structured["tokens"] <= 1500 and structured["method"] == "r"
            shown = [i for i in structured["items"] if i.get("state_index") == 2 and i["trajectory_id"] == "shot-run"]
            assert shown and shown[0]["screenshot"].endswith("screenshots/0002.png")
            images = [c for c in reply.content if c.type == "image"]
            assert images and base64.b64decode(images[0].data)[:4] == b"\x89PNG"

            state = await session.call_tool("show", {"trajectory_id": "shot-run", "state_index": 2, "image": True})
            assert [c.type for c in state.content] == ["text", "image"]

            refused = await session.call_tool(
                "query",
                {"question": "Which page is this?", "method": "r", "image_base64": images[0].data},
            )
            assert refused.isError and "image" in refused.content[0].text
            refused = await session.call_tool("append_state", {"trajectory_id": "nobody", "state": {"url": "u"}})
            assert refused.isError and "open_trajectory" in refused.content[0].text

    anyio.run(main)


def test_a_trajectory_streams_across_servers_started_per_call(env):
    """Item 5: a client that starts a server per call (as the MCP Inspector's CLI does) streams a trajectory; the
    open trajectory lives in the store's journal, not in a server's memory."""

    async def call(tool: str, arguments: dict) -> dict:
        async with stdio_client(stdio(env)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return result(await session.call_tool(tool, arguments))

    async def main():
        await call("open_trajectory", {"trajectory_id": "per-call-1", "goal": "Check a price"})
        for n, page in enumerate(["'Dashboard'", "'Catalog'", PRICE_PAGE]):
            step = await call("append_state", {"trajectory_id": "per-call-1", "state": {"url": f"u{n}", "text": page}})
            assert step["states"] == n + 1 and step["timestamp_source"].startswith("server receive time")
        assert (await call("stats", {}))["open_trajectories"] == 1
        assert (await call("close_trajectory", {"trajectory_id": "per-call-1"}))["states"] == 3

    anyio.run(main)
    stored = Store(env["RUNBOOK_STORE"]).load("per-call-1")
    assert [s.url for s in stored.states] == ["u0", "u1", "u2"] and all(s.timestamp for s in stored.states)
