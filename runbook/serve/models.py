"""The servers' request and reply types (pydantic): one definition for the HTTP API's OpenAPI schema and the MCP
tools' input schemas, each field described, with examples."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, PlainValidator, Tag
from pydantic_core import PydanticCustomError

from ..budget import DEFAULT_BUDGET, MAX_BUDGET, parse_budget
from ..errors import BudgetError
from ..memory import DEFAULT_METHOD

MethodName = Literal["auto", "c", "r", "bm25", "full", "none"]
"""The registry's methods (runbook.memory.METHODS; a test keeps the two the same)."""
Method = Annotated[MethodName, BeforeValidator(lambda v: v.lower() if isinstance(v, str) else v)]
"""A method, in any case ('R' is r): every table calls them R and C."""
DEFAULT = cast(MethodName, DEFAULT_METHOD)
"""The library's default method, as this type."""
Visibility = Literal["close", "step"]

METHOD_HELP = (
    "auto (default): r, then c when r's evidence looks weak, and c for every question with an image; "
    "r: knowledge pools, fast, no sandbox; c: the coding agent in a sandbox; baselines: bm25, full, none. "
    "Case does not matter ('R' is r)."
)


def _budget_tokens(value: Any) -> int:
    try:
        return parse_budget(value)
    except BudgetError as exc:
        raise PydanticCustomError("budget", "{reason}", {"reason": str(exc)}) from exc


Budget = Annotated[int | str, PlainValidator(_budget_tokens, json_schema_input_type=int | str)]
"""A budget as a whole number or text, parsed to tokens with the request (JSON's true is no budget of 1 token, and
2.5 is refused as a budget, not as a field 'budget.int')."""
BUDGET_HELP = (
    f"Tokens of context, as a number (8000) or text ('8k', '1.5k'), at most {MAX_BUDGET:,}; the context never "
    "exceeds it."
)
QUESTION_EXAMPLE = "What must be set before the Bestsellers report shows any data?"


class ErrorBody(BaseModel):
    """Every refused request: what was wrong, and the field it was wrong in."""

    error: str = Field(description="What was wrong and what to do", examples=["field 'budget': must be positive"])
    field: str | None = Field(None, description="The request field at fault, when one is", examples=["budget"])


class QueryRequest(BaseModel):
    """A question for the memory."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"question": QUESTION_EXAMPLE, "budget": "4k", "method": "auto"}]},
    )
    question: str = Field(description="What the agent wants to know about the web environment")
    budget: Budget = Field(DEFAULT_BUDGET, description=BUDGET_HELP, examples=[4000, "4k"])
    method: Method = Field(DEFAULT, description=METHOD_HELP)
    image_base64: str | None = Field(
        None, description="An image that belongs to the question (PNG or JPEG, base64); read by methods auto and c"
    )


class Item(BaseModel):
    """One piece of evidence, with where it came from."""

    kind: str = Field(description="state, span, note, event or summary")
    trajectory_id: str
    state_index: int | None = Field(None, description="The state cited (a span gives start/end_state_index)")
    start_state_index: int | None = Field(None, description="A span's first state")
    end_state_index: int | None = Field(None, description="A span's last state")
    url: str = ""
    timestamp: str | None = Field(None, description="ISO-8601 time of the (first) state")
    timestamp_source: str | None = Field(None, description="Set when the time is the server's receive time")
    path: str = Field("", description="The state file, relative to the store")
    label: str = Field("", description="A qualifier for the reader, e.g. 'latest value'")
    screenshot: str | None = Field(None, description="The state's screenshot, relative to the store")
    screenshot_in_context: bool | None = Field(
        None, description="False when the screenshot is the state's but was not part of the context's budget"
    )
    goal: str = Field("", description="The goal of the run the evidence comes from")
    score: float | None = Field(None, description="The method's own ranking score")
    text: str = Field(description="The evidence as the reader sees it")
    elided_tokens: int = Field(0, description="Tokens cut from the text to fit the budget")
    tokens: int = Field(0, description="Tokens the item costs (its text, and a screenshot when in context)")
    furniture_tokens: int | None = Field(None, description="Tokens of the site's menus and banners in the text")
    repeat: bool | None = Field(None, description="True when it shows again what an earlier item shows")


class QueryResult(BaseModel):
    """The context: an analysis, then evidence items most important first, within the budget."""

    question: str
    method: str
    budget: int
    tokens: int = Field(description="Tokens the analysis and the items take (never over the budget)")
    latency_s: float
    analysis: str
    items: list[Item]
    meta: dict[str, Any] = Field(default_factory=dict)


class StepFields(BaseModel):
    """A step in runbook's field names (LongMemEval-V2's, BrowserGym's and browser-use's names are accepted too)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "url": "http://shop.example/admin/reports/bestsellers/",
                    "title": "Bestsellers Report",
                    "accessibility_tree": "RootWebArea 'Bestsellers Report'\n\tStaticText 'We couldn't find any "
                    "records.'\n\tbutton 'Refresh'",
                    "action": "click('42')",
                    "thought": "The report is empty: refresh its statistics first.",
                    "timestamp": "2025-12-18T22:17:41.342Z",
                }
            ]
        },
    )
    url: str | None = Field(None, description="The page's URL")
    title: str | None = Field(None, description="The page's title")
    accessibility_tree: str | None = Field(None, description="The page as the agent saw it (also text, page_text)")
    action: str | None = Field(None, description="The action the agent took on this page")
    action_error: str | None = Field(None, description="The error that action raised, if any")
    thought: str | None = Field(None, description="The agent's reasoning for the action (also thoughts, think)")
    timestamp: str | float | None = Field(
        None,
        description="When the page was seen: ISO-8601 (or unix seconds); without one, the server's receive time",
    )
    screenshot: str | None = Field(None, description="A screenshot's path inside the server's --screenshot-root")
    state_index: int | None = Field(
        None, description="Must be the next index when given (a step sent twice is refused)"
    )
    text: str | None = Field(None, description="= accessibility_tree")
    page_text: str | None = Field(None, description="= accessibility_tree")
    axtree_txt: str | None = Field(None, description="= accessibility_tree (BrowserGym's observation key)")
    dom_txt: str | None = Field(None, description="= accessibility_tree (BrowserGym's observation key)")
    thoughts: str | None = Field(None, description="= thought")
    think: str | None = Field(None, description="= thought (AgentLab's agent_info key)")
    screenshot_path: str | None = Field(None, description="= screenshot (browser-use's key)")
    last_action_error: str | None = Field(
        None, description="BrowserGym's error of the PREVIOUS step's action: stored on the previous state"
    )


class AgentLabStep(BaseModel):
    """An AgentLab step record (a BrowserGym observation, the action and the agent's info), as AgentLab saves it."""

    model_config = ConfigDict(extra="allow")
    obs: dict[str, Any] = Field(description="BrowserGym's observation: url, axtree_txt, last_action_error, ...")
    action: str | None = Field(None, description="The action taken on this observation")
    agent_info: dict[str, Any] | None = Field(None, description="The agent's info; its 'think' is the thought")
    profiling: dict[str, Any] | None = Field(None, description="Its 'env_stop' (unix seconds) is the step's time")


class BrowserUseEntry(BaseModel):
    """A browser-use history entry (AgentHistory.model_dump()), as browser-use records it."""

    model_config = ConfigDict(extra="allow")
    state: dict[str, Any] = Field(description="url, title, screenshot_path, ...")
    model_output: dict[str, Any] | None = Field(None, description="thinking, and the actions as [{name: params}]")
    result: list[dict[str, Any]] | None = Field(None, description="Each action's result; an 'error' is kept")
    metadata: dict[str, Any] | None = Field(None, description="Its 'step_start_time' (unix seconds) is the time")
    state_message: str | None = Field(None, description="The prompt's <browser_state> is the page text")


def _shape(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, dict) and isinstance(value.get("obs"), dict):
        return "agentlab"
    if isinstance(value, dict) and (isinstance(value.get("state"), dict) or "model_output" in value):
        return "browser_use"
    return "runbook"


Step = Annotated[
    Annotated[StepFields, Tag("runbook")]
    | Annotated[AgentLabStep, Tag("agentlab")]
    | Annotated[BrowserUseEntry, Tag("browser_use")],
    Discriminator(_shape),
]
"""One streamed step in any of the three shapes."""


class StateRecord(BaseModel):
    """One state of a whole trajectory (the JSONL schema)."""

    model_config = ConfigDict(extra="allow")
    state_index: int | None = Field(None, description="0, 1, 2, ... in order")
    url: str | None = None
    title: str | None = None
    accessibility_tree: str | None = Field(None, description="The page text (also text, page_text)")
    action: str | None = None
    action_error: str | None = None
    thought: str | None = None
    timestamp: str | float | None = Field(None, description="ISO-8601; without one, the server's receive time")
    screenshot: str | None = Field(None, description="A path inside the server's --screenshot-root")


class TrajectoryRequest(BaseModel):
    """A whole trajectory to insert, or (with "stream": true and no states) one to open and stream step by step."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"id": "agent-run-7", "stream": True, "goal": "Show the bestsellers of 2023", "site": "shop"},
                {
                    "id": "agent-run-6",
                    "goal": "Open the Bestsellers report",
                    "site": "shop",
                    "outcome": "success (reward 1.0)",
                    "states": [
                        {"url": "http://shop.example/admin/", "accessibility_tree": "RootWebArea 'Dashboard'"},
                        {"url": "http://shop.example/admin/reports/", "accessibility_tree": "RootWebArea 'Reports'"},
                    ],
                },
            ]
        },
    )
    id: str = Field(description="A new id (no control characters)")
    goal: str | None = Field(None, description="The task the agent was given")
    site: str | None = Field(None, description="The web environment, e.g. shopping_admin")
    domain: str | None = None
    start_url: str | None = None
    outcome: str | None = Field(None, description="e.g. 'success (reward 1.0)'")
    source: dict[str, Any] | None = None
    states: list[StateRecord] | None = Field(None, description="Every state, in order (omit it to stream)")
    stream: bool = Field(False, description="Open the trajectory to stream its steps (POST .../states)")
    visible: Visibility = Field(
        "close", description="Streamed: 'close' (queries see it once closed) or 'step' (after every step)"
    )


class CloseRequest(BaseModel):
    """How a streamed run ended."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"outcome": "success (reward 1.0)"}]})
    outcome: str | None = Field(None, description="How the run ended, e.g. 'success (reward 1.0)'")


class InsertResult(BaseModel):
    """A trajectory written to the store."""

    trajectory_id: str
    status: str = Field(description="inserted, replaced or unchanged (another trajectory under the id: a 409)")
    states: int = 0
    timestamps_received: list[int] | None = Field(
        None, description="The states sent without a time, which got the server's receive time"
    )


class OpenResult(BaseModel):
    """A trajectory opened for streaming."""

    trajectory_id: str
    open: bool
    states: int
    visible: Visibility
    opened: str = Field(description="When it was opened (ISO-8601)")


class StepResult(BaseModel):
    """A step accepted and journaled."""

    trajectory_id: str
    states: int = Field(description="Steps so far")
    state_index: int
    timestamp: str | None
    timestamp_source: str | None = Field(None, description="Set when the time is the server's receive time")
    status: str = Field(
        description="open (with visible='step', queries see the step once its background re-insert commits)"
    )
