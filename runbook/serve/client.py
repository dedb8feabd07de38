"""A Python client for `runbook serve http`, for agents that run in their own process (standard library only).

    from runbook.serve.client import Client
    memory = Client("http://127.0.0.1:8765")                      # the key: api_key="..." or env RUNBOOK_API_KEY
    context = memory.query("Where is the Bestsellers report?", budget="4k")
    memory.open_trajectory("run-7", goal="Show the bestsellers of 2023", site="shop")
    memory.append_state("run-7", {"url": obs["url"], "axtree_txt": obs["axtree_txt"], "action": action})
    memory.close_trajectory("run-7", outcome="success (reward 1.0)")

A step may be in runbook's field names, an AgentLab step record or a browser-use history entry (see
runbook/trajectory/steps.py). A refused request raises RequestRefused with the server's status, error and field
(a trajectory whose id holds another one is a 409).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..errors import RequestRefused


class Client:
    """The HTTP API's calls as methods; each returns the server's JSON reply. The API key is `api_key`, else the
    environment's RUNBOOK_API_KEY (the variable `runbook serve` reads its key from)."""

    def __init__(self, base_url: str = "http://127.0.0.1:8765", *, api_key: str | None = None, timeout: float = 120):
        self.base_url, self.timeout = base_url.rstrip("/"), timeout
        self.api_key = api_key if api_key is not None else os.environ.get("RUNBOOK_API_KEY") or None

    def query(self, question: str, *, budget: int | str | None = None, method: str | None = None) -> dict:
        """Evidence for `question` (the server's defaults for what is not given)."""
        body = {"question": question, "budget": budget, "method": method}
        return self._call("POST", "/query", {k: v for k, v in body.items() if v is not None})

    def insert(self, trajectory: dict[str, Any]) -> dict:
        return self._call("POST", "/trajectories", trajectory)

    def open_trajectory(self, trajectory_id: str, *, visible: str = "close", **fields: Any) -> dict:
        return self._call("POST", "/trajectories", {"id": trajectory_id, "stream": True, "visible": visible, **fields})

    def append_state(self, trajectory_id: str, step: dict[str, Any]) -> dict:
        return self._call("POST", f"/trajectories/{_quote(trajectory_id)}/states", step)

    def close_trajectory(self, trajectory_id: str, *, outcome: str | None = None) -> dict:
        body = {"outcome": outcome} if outcome else {}
        return self._call("POST", f"/trajectories/{_quote(trajectory_id)}/close", body)

    def trajectory(self, trajectory_id: str) -> dict:
        return self._call("GET", f"/trajectories/{_quote(trajectory_id)}")

    def stats(self) -> dict:
        return self._call("GET", "/stats")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict:
        headers = {"Content-Type": "application/json", **({"X-API-Key": self.api_key} if self.api_key else {})}
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read())
            except ValueError:
                error = {"error": exc.reason}
            raise RequestRefused(exc.code, error.get("error", ""), error.get("field")) from None


def _quote(trajectory_id: str) -> str:
    return urllib.parse.quote(trajectory_id, safe="")
