"""The MCP server driven by the SDK's own client: over stdio (the client starts `runbook serve mcp`) and over
streamable HTTP (`runbook serve mcp --transport http` on a loopback port)."""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parents[2]
PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


@pytest.fixture
def env(clean_env, tmp_path) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), RUNBOOK_STORE=str(tmp_path / "store"))


def result(reply) -> dict:
    assert not reply.isError, reply.content
    return json.loads(reply.content[0].text)


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
            "query", {"question": "What price does the admin list for Quest Lumaflex Band?", "budget": "2k"}
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
    params = StdioServerParameters(command=sys.executable, args=["-m", "runbook.cli", "serve", "mcp"], env=env)

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await stream_and_query(session)

    anyio.run(main)


def test_mcp_over_streamable_http(env):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "runbook.cli", "serve", "mcp", "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read().decode()[-2000:]
            time.sleep(0.1)

        async def main():
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await stream_and_query(session)

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(10)
