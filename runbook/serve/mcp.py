"""The MCP server (the official `mcp` SDK's FastMCP), a thin shell over MemoryService, over stdio or streamable HTTP.

Tools: `query` (question, budget, method, image_base64), `insert` (a whole trajectory), `open_trajectory`,
`append_state`, `close_trajectory` (streaming insert), `stats`, `show` (a trajectory, or one of its states).
Resources: `runbook://trajectories/{trajectory_id}` and `runbook://trajectories/{trajectory_id}/states/{index}`.
Every result carries provenance (trajectory, state, url, time, file); a refused call is a tool error naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.fastmcp import FastMCP

from ..budget import parse_budget
from .images import image_file
from .service import MemoryService


def create_mcp(service: MemoryService, *, host: str = "127.0.0.1", port: int = 8766) -> FastMCP:
    server = FastMCP(
        "runbook",
        instructions=(
            "A long-term memory of past web-agent trajectories. Call `query` with what you need to know about the web "
            "environment (where a report lives, which filter must be set first, what a value is now) before acting; "
            "every item cites the trajectory, state, url and time it comes from. Stream your own steps in with "
            "open_trajectory / append_state / close_trajectory so later runs can learn from them."
        ),
        host=host,
        port=port,
        log_level="WARNING",
    )

    @server.tool()
    def query(question: str, budget: str = "4k", method: str = "r", image_base64: str | None = None) -> dict:
        """Evidence for a question from past trajectories, cut to `budget` tokens (e.g. '4k'), most important
        first, each item citing trajectory, state, url and time. method: r (fast, default), auto (r, then the
        coding agent when r's evidence is weak), c (the coding agent in a sandbox)."""
        with image_file(image_base64) as image:
            return service.query(question, budget=parse_budget(budget), method=method, image=image)

    @server.tool()
    def insert(trajectory: dict[str, Any]) -> dict:
        """Insert one whole trajectory: {"id", "goal", "site", "outcome", "states": [{"url", "accessibility_tree",
        "action", "action_error", "thought", "timestamp"}, ...]}."""
        return service.insert(trajectory)

    @server.tool()
    def open_trajectory(
        trajectory_id: str, goal: str = "", site: str = "", start_url: str = "", visible: str = "close"
    ) -> dict:
        """Start a trajectory you will stream step by step. visible: 'close' (queries see it once closed) or
        'step' (after every step)."""
        return service.open_trajectory(
            trajectory_id, visible=visible, goal=goal or None, site=site or None, start_url=start_url or None
        )

    @server.tool()
    def append_state(trajectory_id: str, state: dict[str, Any]) -> dict:
        """Append the next step of an open trajectory: {"url", "title", "accessibility_tree", "action",
        "action_error", "thought", "timestamp"}."""
        return service.append_state(trajectory_id, state)

    @server.tool()
    def close_trajectory(trajectory_id: str, outcome: str = "") -> dict:
        """Insert an open trajectory as one atomic insert; queries see it from now on."""
        return service.close_trajectory(trajectory_id, outcome=outcome or None)

    @server.tool()
    def stats() -> dict:
        """What the store holds: trajectories, states, tokens, per site and outcome."""
        return service.stats()

    @server.tool()
    def show(trajectory_id: str, state_index: int | None = None) -> dict:
        """A trajectory's goal, outcome and one line per state; with state_index, that state's page text."""
        if state_index is None:
            return service.trajectory(trajectory_id)
        return service.state(trajectory_id, state_index)

    @server.resource("runbook://trajectories/{trajectory_id}", mime_type="application/json")
    def trajectory_resource(trajectory_id: str) -> str:
        """A stored trajectory: its row and states."""
        return json.dumps(service.trajectory(trajectory_id))

    @server.resource("runbook://trajectories/{trajectory_id}/states/{index}", mime_type="application/json")
    def state_resource(trajectory_id: str, index: str) -> str:
        """One stored state with its page text and provenance."""
        return json.dumps(service.state(trajectory_id, int(index)))

    return server
