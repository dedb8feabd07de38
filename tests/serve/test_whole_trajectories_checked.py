"""A whole trajectory posted to the servers is checked as `runbook insert` checks a file: a value nested hundreds
deep and a misspelled field are a 400 over HTTP and a tool error over MCP, naming the field (issue 33 item 4, issue
34 item 3). Over uvicorn on loopback with httpx, and through the MCP SDK's client over stdio."""

from __future__ import annotations

import anyio
import httpx
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from runbook.serve import create_app
from runbook.store import Store
from tests.serve.test_http import Server, service  # noqa: F401 - the fixture
from tests.serve.test_mcp import env, stdio  # noqa: F401 - the fixture


def nested(depth: int) -> dict:
    value: dict = {}
    inner = value
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return value


STATE = {"url": "http://shop/", "accessibility_tree": "RootWebArea 'Shop'", "timestamp": "2025-12-18T10:00:00Z"}
DEEP = {"id": "deep", "goal": "g", "source": nested(300), "states": [STATE]}
TYPO = {"id": "typo", "gaol": "g", "outcom": "success", "states": [STATE | {"acton": "click('1')"}]}
STATE_TYPO = {"id": "typo2", "goal": "g", "states": [STATE | {"acton": "click('1')"}]}


def test_http_answers_400_naming_the_field(service):  # noqa: F811
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=60) as client:
        deep = client.post("/trajectories", json=DEEP)
        assert deep.status_code == 400, deep.text
        assert deep.json()["field"] == "source" and "nests more than 64 levels" in deep.json()["error"]
        typo = client.post("/trajectories", json=TYPO)
        assert typo.status_code == 400 and typo.json()["field"] == "gaol", typo.text
        assert "did you mean 'goal'" in typo.json()["error"]
        state = client.post("/trajectories", json=STATE_TYPO)
        assert state.status_code == 400 and state.json()["field"] == "states[0].acton", state.text
        assert client.get("/stats").json()["trajectories"] == 0


def test_mcp_insert_is_a_tool_error_naming_the_field(env, tmp_path):  # noqa: F811
    async def main() -> list[str]:
        async with stdio_client(stdio(env)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            texts = []
            # the SDK's client itself refuses to send 300 levels ("Maximum serialization depth exceeded"): 100
            for trajectory in (DEEP | {"source": nested(100)}, TYPO, STATE_TYPO):
                reply = await session.call_tool("insert", {"trajectory": trajectory})
                assert reply.isError
                texts.append(reply.content[0].text)
            return texts

    deep, typo, state = anyio.run(main)
    assert "source" in deep and "nests more than 64 levels" in deep and "serialization" not in deep
    assert "gaol" in typo and "did you mean 'goal'" in typo
    assert "states[0].acton" in state
    assert len(Store(tmp_path / "store")) == 0
