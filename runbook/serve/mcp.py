"""The MCP server (the official `mcp` SDK's FastMCP), a thin shell over MemoryService, over stdio or streamable HTTP.

Tools: `query` (the context as text the agent reads, its structure as structured content, and screenshots as image
content when asked), `insert` (a whole trajectory), `open_trajectory`, `append_state`, `close_trajectory`
(streaming insert, journaled in the store: it goes on across server restarts), `stats`, `show` (a trajectory, or one
of its states, with its screenshot when asked). Resources: `stats`, `trajectories` and the templates `trajectory`,
`state` and `screenshot` (runbook://stats, runbook://trajectories, runbook://trajectories/{id}[/states/{i}[/...]]).
Every result carries provenance (trajectory, state, url, time, file); a refused call is a tool error naming the field,
and every call, refused or not, is a line of the access log. Over streamable HTTP, `http_app` puts the same guard as
the HTTP API's (Host, Origin, API key: serve/guard.py) in front of the SDK's app.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import Field, ValidationError

from ..budget import DEFAULT_BUDGET
from ..version import __version__
from .errors import invalid_input
from .guard import AccessLog, Admission, Guard
from .images import image_file
from .models import BUDGET_HELP, DEFAULT, METHOD_HELP, Budget, Method, QueryResult, Step, TrajectoryRequest, Visibility
from .service import MemoryService

TRAJECTORY_LIST_LIMIT = 200
"""Newest trajectories listed by the runbook://trajectories resource."""
MAX_SESSIONS = 100
"""MCP sessions a streamable HTTP server holds at once; one more is answered 503."""
SESSION_TIMEOUT = 1800.0
"""Seconds an MCP session may go without a request before the server ends it."""
INSTRUCTIONS = (
    "A long-term memory of past web-agent trajectories. Call `query` with what you need to know about the web "
    "environment (where a report lives, which filter must be set first, what a value is now) before acting; every "
    "item cites the trajectory, state, url and time it comes from. Stream your own steps in with open_trajectory / "
    "append_state / close_trajectory so later runs can learn from them."
)

TrajectoryId = Annotated[str, Field(description="The trajectory's id")]
call_log = logging.getLogger("runbook.access")


class _DropDisconnects(logging.Filter):
    """The SDK logs a client that hangs up (its stream closed under the server) as an ERROR with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)):
            logging.getLogger("runbook.serve").debug("an MCP client disconnected: %s", record.getMessage())
            return False
        return True


def quiet_disconnects() -> None:
    """A client's disconnect is not an error: keep its traceback out of the server's log."""
    for name in ("mcp.server.streamable_http", "mcp.server.streamable_http_manager"):
        logging.getLogger(name).addFilter(_DropDisconnects())


class RunbookMCP(FastMCP):
    """FastMCP whose tool calls are logged one line each, and whose invalid arguments are refused in runbook's
    words ("field 'budget': ...") instead of pydantic's text and link, before the tool runs."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Sequence[ContentBlock] | dict[str, Any]:
        start, outcome = time.perf_counter(), "ok"
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                refused = f"Error executing tool {name}: invalid arguments: {invalid_input(cause.errors())}"
                outcome = f"refused: {refused.split(': ', 1)[1]}"
                raise ToolError(refused) from None
            outcome = f"refused: {cause or exc}"
            raise
        finally:
            call_log.info("tool %s %.0f ms %s", name, (time.perf_counter() - start) * 1000, outcome[:200])


def create_mcp(
    service: MemoryService,
    *,
    max_sessions: int = MAX_SESSIONS,
    session_timeout: float = SESSION_TIMEOUT,
) -> RunbookMCP:
    """The MCP server over `service`: run it over stdio with `.run("stdio")`, or serve `http_app(server, ...)`."""
    server = RunbookMCP(
        "runbook",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        max_sessions=max_sessions,
        session_idle_timeout=session_timeout,
        # Host and Origin are checked by runbook's guard (http_app), with the server's own names and options
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    server._mcp_server.version = __version__  # FastMCP would report the SDK's version as the server's
    _query_tools(server, service)
    _stream_tools(server, service)
    _read_tools(server, service)
    _resources(server, service)
    return server


def http_app(server: RunbookMCP, admission: Admission):
    """The streamable HTTP app (at /mcp) behind runbook's guard, refused requests in the access log."""
    app = server.streamable_http_app()
    app.add_middleware(Guard, admission=admission)
    app.add_middleware(AccessLog, refusals_only=True)
    return app


def _tool(server: FastMCP) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """server.tool with the function's docstring, dedented, as the description."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        return server.tool(description=inspect.cleandoc(fn.__doc__ or ""))(fn)

    return register


def _query_tools(server: FastMCP, service: MemoryService) -> None:
    @_tool(server)
    def query(
        question: Annotated[str, Field(description="What you want to know about the web environment")],
        budget: Annotated[Budget, Field(description=BUDGET_HELP)] = DEFAULT_BUDGET,
        method: Annotated[Method, Field(description=METHOD_HELP)] = DEFAULT,
        image_base64: Annotated[
            str | None, Field(description="An image that belongs to the question (PNG/JPEG, base64): auto or c")
        ] = None,
        images: Annotated[
            int,
            Field(
                ge=0,
                le=10,
                description="Return the screenshots of the first N items that have one, as images "
                "(about 800 tokens each, on top of the budget)",
            ),
        ] = 0,
    ) -> Annotated[CallToolResult, QueryResult]:
        """Evidence from past trajectories for a question, cut to the token budget, most important first.

        The text is the context to read: an analysis, then items, each citing trajectory, state, url and time.
        The structured content holds the same items as fields (and each state's screenshot path)."""
        with image_file(image_base64) as image:
            context = service.query_context(question, budget=budget, method=method, image=image)
        structured = service.to_json(context)
        content: list[ContentBlock] = [TextContent(type="text", text=context.to_text() or "(no evidence)")]
        for item in [i for i in structured["items"] if i.get("screenshot")][:images]:
            index = item.get("state_index", item.get("start_state_index"))
            content.append(_image(service, item["trajectory_id"], index))
        return CallToolResult(content=content, structuredContent=structured)


def _stream_tools(server: FastMCP, service: MemoryService) -> None:
    @_tool(server)
    def insert(
        trajectory: Annotated[
            TrajectoryRequest, Field(description="The whole trajectory, in runbook's JSONL schema, states in order")
        ],
    ) -> dict[str, Any]:
        """Insert one whole trajectory: {"id", "goal", "site", "outcome", "states": [{"url", "accessibility_tree",
        "action", "action_error", "thought", "timestamp"}, ...]}. States without a timestamp get the receive time."""
        return service.insert(trajectory.model_dump(exclude={"stream", "visible"}, exclude_unset=True))

    @_tool(server)
    def open_trajectory(
        trajectory_id: Annotated[str, Field(description="A new id for your run")],
        goal: Annotated[str, Field(description="The task you were given")] = "",
        site: Annotated[str, Field(description="The web environment, e.g. shopping_admin")] = "",
        start_url: Annotated[str, Field(description="Where the run starts")] = "",
        visible: Annotated[
            Visibility, Field(description="close: queries see it once closed; step: soon after every step")
        ] = "close",
    ) -> dict[str, Any]:
        """Start a trajectory you will stream step by step with append_state, then close_trajectory.

        It is journaled in the store: it survives a server restart, and is discarded after a day without a step."""
        return service.open_trajectory(
            trajectory_id, visible=visible, goal=goal or None, site=site or None, start_url=start_url or None
        )

    @_tool(server)
    def append_state(
        trajectory_id: TrajectoryId,
        state: Annotated[
            Step,
            Field(
                description="The step: {url, title, accessibility_tree, action, action_error, thought, timestamp} "
                "(also BrowserGym's axtree_txt / think / last_action_error, an AgentLab step record {obs, "
                "action, agent_info}, or a browser-use history entry {model_output, state, result, metadata})"
            ),
        ],
    ) -> dict[str, Any]:
        """Append the next step of an open trajectory. Without a timestamp it gets the server's receive time."""
        return service.append_state(trajectory_id, state.model_dump(exclude_none=True))

    @_tool(server)
    def close_trajectory(
        trajectory_id: TrajectoryId,
        outcome: Annotated[str, Field(description="How the run ended, e.g. 'success (reward 1.0)'")] = "",
    ) -> dict[str, Any]:
        """Insert an open trajectory as one atomic insert; queries see it from now on."""
        return service.close_trajectory(trajectory_id, outcome=outcome or None)


def _read_tools(server: FastMCP, service: MemoryService) -> None:
    @_tool(server)
    def stats() -> dict[str, Any]:
        """What the store holds: trajectories, states, tokens, per site and outcome, and the open trajectories."""
        return service.stats()

    @_tool(server)
    def show(
        trajectory_id: TrajectoryId,
        state_index: Annotated[int | None, Field(description="A state's index: its page text and header")] = None,
        image: Annotated[bool, Field(description="With state_index: also return its screenshot as an image")] = False,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """A trajectory's goal, outcome and one line per state; with state_index, that state's page text."""
        if state_index is None:
            found = service.trajectory(trajectory_id)
            return CallToolResult(content=[_json_text(found)], structuredContent=found)
        state = service.state(trajectory_id, state_index)
        content: list[ContentBlock] = [_json_text(state)]
        if image and state.get("screenshot"):
            content.append(_image(service, trajectory_id, state_index))
        return CallToolResult(content=content, structuredContent=state)


def _resources(server: FastMCP, service: MemoryService) -> None:
    @server.resource("runbook://stats", name="stats", mime_type="application/json", description="The store's figures")
    def stats_json() -> str:
        return json.dumps(service.stats())

    @server.resource(
        "runbook://trajectories",
        name="trajectories",
        mime_type="application/json",
        description=f"The newest {TRAJECTORY_LIST_LIMIT} stored trajectories: id, site, goal, outcome, states",
    )
    def trajectories_json() -> str:
        rows = service.store.rows()[-TRAJECTORY_LIST_LIMIT:][::-1]
        return json.dumps(
            [{"id": r.id, "site": r.site, "goal": r.goal, "outcome": r.outcome, "n_states": r.n_states} for r in rows]
        )

    @server.resource("runbook://trajectories/{trajectory_id}", name="trajectory", mime_type="application/json")
    def trajectory_json(trajectory_id: str) -> str:
        """A stored trajectory: its row and states."""
        return json.dumps(service.trajectory(trajectory_id))

    @server.resource(
        "runbook://trajectories/{trajectory_id}/states/{index}", name="state", mime_type="application/json"
    )
    def state_json(trajectory_id: str, index: str) -> str:
        """One stored state with its page text and provenance."""
        return json.dumps(service.state(trajectory_id, int(index)))

    @server.resource(
        "runbook://trajectories/{trajectory_id}/states/{index}/screenshot", name="screenshot", mime_type="image/png"
    )
    def screenshot_bytes(trajectory_id: str, index: str) -> bytes:
        """A stored state's screenshot."""
        return service.screenshot(trajectory_id, int(index))[0]


def _json_text(value: Any) -> TextContent:
    return TextContent(type="text", text=json.dumps(value, ensure_ascii=False, indent=1))


def _image(service: MemoryService, trajectory_id: str, index: int) -> ImageContent:
    data, media_type = service.screenshot(trajectory_id, index)
    return ImageContent(type="image", data=base64.b64encode(data).decode(), mimeType=media_type)
