"""Who a server answers (item 2 of issue 33): `runbook serve http` and `runbook serve mcp --transport http` refuse a
request whose Host is not one of their names (DNS rebinding: a page of another site pointing its own name at the
loopback address) or whose Origin is another site, with an option to allow more; both take --api-key, answer a
missing key with 401 and WWW-Authenticate, and warn when they bind beyond loopback without one."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from runbook.store import Store
from tests.serve.cli_server import CliServer

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def store(tmp_path, clean_env):
    return Store(tmp_path / "store", create=True).root


def test_the_http_api_refuses_another_sites_host_and_origin(store):
    with CliServer(store, "http") as server:
        assert httpx.get(f"{server.url}/stats").status_code == 200
        assert httpx.get(f"http://localhost:{server.port}/stats").status_code == 200
        rebound = httpx.get(f"{server.url}/stats", headers={"Host": f"evil.example:{server.port}"})
        assert rebound.status_code == 421 and rebound.json()["field"] == "Host"
        assert "DNS rebinding" in rebound.json()["error"] and "--allow-host" in rebound.json()["error"]
        posted = httpx.post(
            f"{server.url}/trajectories",
            json={"id": "planted", "states": [{"url": "http://evil/"}]},
            headers={"Origin": "http://evil.example"},
        )
        assert posted.status_code == 403 and "another site" in posted.json()["error"]
        own = httpx.get(f"{server.url}/stats", headers={"Origin": server.url})  # its own pages (/docs) may call it
        assert own.status_code == 200 and own.json()["trajectories"] == 0
    assert '"GET /stats" 421' in server.log and '"POST /trajectories" 403' in server.log


def test_more_hosts_and_origins_can_be_allowed(store):
    with CliServer(store, "http", "--allow-host", "memory.internal", "--allow-origin", "https://app.example") as server:
        for host in ("memory.internal", f"memory.internal:{server.port}"):
            assert httpx.get(f"{server.url}/stats", headers={"Host": host}).status_code == 200
        assert httpx.get(f"{server.url}/stats", headers={"Origin": "https://app.example"}).status_code == 200
        assert httpx.get(f"{server.url}/stats", headers={"Host": "other.internal"}).status_code == 421
    assert "answers Host" in server.log and "memory.internal" in server.log


def test_a_missing_key_gets_401_with_www_authenticate(store):
    with CliServer(store, "http", env={"RUNBOOK_API_KEY": "s3cret"}) as server:
        refused = httpx.get(f"{server.url}/stats")
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == 'Bearer realm="runbook"'
        assert httpx.get(f"{server.url}/stats", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_the_mcp_server_over_http_takes_an_api_key_and_checks_the_host(store):
    with CliServer(store, "mcp", "--transport", "http", "--api-key", "s3cret") as server:
        url = f"{server.url}/mcp"
        refused = httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        keyed = {**MCP_HEADERS, "Authorization": "Bearer s3cret"}
        rebound = httpx.post(url, json=INITIALIZE, headers={**keyed, "Host": f"evil.example:{server.port}"})
        assert rebound.status_code == 421 and "DNS rebinding" in rebound.json()["error"]
        foreign = httpx.post(url, json=INITIALIZE, headers={**keyed, "Origin": "http://evil.example"})
        assert foreign.status_code == 403

        async def main():  # the SDK's own client, with the key
            async with (
                httpx.AsyncClient(headers={"X-API-Key": "s3cret"}) as http,
                streamable_http_client(url, http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                reply = await session.call_tool("stats", {})
                assert not reply.isError and reply.structuredContent["trajectories"] == 0

        anyio.run(main)
    assert '"POST /mcp" 401' in server.log and '"POST /mcp" 421' in server.log and "tool stats" in server.log


@pytest.mark.parametrize("command", [("http",), ("mcp", "--transport", "http")])
def test_both_servers_warn_when_bound_beyond_loopback_without_a_key(store, command):
    with CliServer(store, *command, "--host", "0.0.0.0") as server:
        assert httpx.get(f"{server.url}/stats" if command == ("http",) else f"{server.url}/mcp").status_code < 500
    assert "serving 0.0.0.0 without --api-key" in server.log
