"""Running the agent's tool calls (their specs are in runbook.agent.specs): argument checks against each spec, the
sandbox command a call becomes, and which states the agent has looked at.

A malformed call (unknown tool, missing or mistyped argument, bad JSON) is not run: its ToolResult carries `error`
and the message the policy reads says what to fix.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..errors import SandboxError, ToolError
from ..models.messages import ToolCall, ToolResult, ToolSpec
from .exceptions import Finished
from .specs import MAX_SPAN_STATES, TOOL_SPECS
from .types import Span

DEFAULT_READ_LINES = 400

_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "array": list,
    "object": dict,
    "number": (int, float),
}
_STATE_PATH = re.compile(r"trajectories/([A-Za-z0-9][A-Za-z0-9._-]*)/states/(\d{4,})\.md")
_SEARCH_HEAD = re.compile(r"^([^\s=#]\S*) state (\d+) @ ", re.M)
"""How `search` heads the hits of one state."""
_RECALL_ID = re.compile(r"^[nes]\d+$")
_RECALL_HEAD = re.compile(r"^\[[nes]\d+\] (\S+) states? (\d+)", re.M)
"""How `recall` heads a hit (its first state)."""
_SHOW_HEAD = re.compile(r"^== (\S+) state (\d+) of ", re.M)
"""How `show` heads a state it prints whole."""
_GREP_HEAD = re.compile(r"^== state (\d+) @ ", re.M)
"""How `show --grep` heads a matching state (the trajectory is the call's)."""
_STATES_ARG = re.compile(r"^(?:\d+(?:-(?:\d+|last))?|last|-1)(?:,(?:\d+(?:-(?:\d+|last))?|last|-1))*$")
_LINES_ARG = re.compile(r"^\s*\d+\s*-\s*\d+\s*$")


SpanCheck = Callable[[list[Span]], None]
"""Raises ToolError when spans name an unknown trajectory or state (the store knows; the tools do not)."""


class ToolBox:
    """Runs tool calls in one sandbox, and remembers which states the agent has seen."""

    def __init__(
        self,
        sandbox,
        *,
        call_seconds: float = 60.0,
        check_spans: SpanCheck | None = None,
        specs: list[ToolSpec] | None = None,
    ):
        self.sandbox = sandbox
        self.call_seconds = call_seconds
        self.check_spans = check_spans
        self.specs = specs or TOOL_SPECS
        self.seen = SeenStates()

    def run(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        """Run one call; raises Finished for a valid `finish`. The result's output is untrimmed."""
        try:
            args = self.validate(call)
            if call.name == "finish":
                raise self.finish(args)
            argv, stdin = command_for(call.name, args, self.specs)
        except ToolError as exc:
            return ToolResult(call.id, call.name, f"error: {exc}", exit_code=2, error=str(exc))
        try:
            result = self.sandbox.exec(argv, timeout=min(self.call_seconds, timeout or self.call_seconds), stdin=stdin)
        except SandboxError as exc:  # e.g. a python program too large to pass: the policy can change it
            message = f"the sandbox could not run this call: {exc}"
            return ToolResult(call.id, call.name, f"error: {message}", exit_code=2, error=message)
        output = result.output if result.output.strip() else "(no output)"
        if result.exit_code and not result.timed_out:
            output += f"\n[exit code {result.exit_code}]"
        self.seen.note(call.name, args, result.output)
        return ToolResult(call.id, call.name, output, exit_code=result.exit_code, seconds=result.seconds)

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """The call's arguments checked against its spec (integers given as digits are accepted)."""
        if call.error:
            raise ToolError(
                f"the arguments of {call.name!r} could not be parsed ({call.error}); send them as one "
                f"JSON object that matches the tool's schema"
            )
        spec = next((s for s in self.specs if s.name == call.name), None)
        if spec is None:
            raise ToolError(f"there is no tool {call.name!r}; the tools are {', '.join(s.name for s in self.specs)}")
        if not isinstance(call.arguments, dict):
            raise ToolError(f"the arguments of {call.name!r} must be a JSON object")
        return check_object(call.arguments, spec.parameters, call.name)

    def finish(self, args: dict[str, Any]) -> Finished:
        """The stop a valid `finish` call makes; ToolError when its spans break the contract."""
        spans = [Span(s["trajectory_id"], s["start_state_index"], s["end_state_index"]) for s in args["spans"]]
        for span in spans:
            if span.end_state_index < span.start_state_index:
                raise ToolError(f"span {span.to_json()} ends before it starts")
        total = sum(span.size for span in spans)
        if total > MAX_SPAN_STATES:
            raise ToolError(
                f"the spans cover {total} states; at most {MAX_SPAN_STATES} are allowed: drop the least "
                f"important spans or shorten them, then call finish again"
            )
        if self.check_spans:
            self.check_spans(spans)
        recall = list(dict.fromkeys(str(r).strip() for r in args.get("recall") or []))
        bad = [r for r in recall if not _RECALL_ID.match(r)]
        if bad:
            raise ToolError(f"recall ids look like n12, e34 or s56 (as recall prints them), got {', '.join(bad)[:120]}")
        return Finished(args["analysis"].strip(), spans, recall)


def check_object(value: dict[str, Any], schema: dict[str, Any], where: str) -> dict[str, Any]:
    """`value` checked against a small JSON-Schema subset (types, required, minimum, unknown keys)."""
    props = schema.get("properties", {})
    unknown = sorted(set(value) - set(props))
    if unknown:
        raise ToolError(f"{where}: unknown argument(s) {', '.join(unknown)}; expected {', '.join(props)}")
    missing = [key for key in schema.get("required", []) if value.get(key) is None]
    if missing:
        raise ToolError(f"{where}: missing required argument(s) {', '.join(missing)}")
    out = {}
    for key, item in value.items():
        if item is not None:
            out[key] = check_value(item, props[key], f"{where}.{key}")
    return out


def check_value(value: Any, schema: dict[str, Any], where: str) -> Any:
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    if "integer" in types and isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if "integer" in types and isinstance(value, float) and value.is_integer():
        value = int(value)
    if types and not any(
        isinstance(value, _TYPES[t]) and not (t != "boolean" and isinstance(value, bool)) for t in types
    ):
        raise ToolError(f"{where} must be {' or '.join(types)}, got {json.dumps(value)[:80]}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{where} must be one of {', '.join(map(str, schema['enum']))}, got {json.dumps(value)[:80]}")
    if isinstance(value, int) and "minimum" in schema and value < schema["minimum"]:
        raise ToolError(f"{where} must be at least {schema['minimum']}, got {value}")
    if isinstance(value, dict) and "properties" in schema:  # an object without properties is taken as it is
        return check_object(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        return [check_value(item, schema["items"], f"{where}[{i}]") for i, item in enumerate(value)]
    return value


def command_for(
    name: str, args: dict[str, Any], specs: list[ToolSpec] = TOOL_SPECS
) -> tuple[list[str] | str, str | None]:
    """The sandbox command (argv or a bash line) and stdin that carry out one validated call."""
    if name == "read":
        return read_command(args["path"], args.get("start_line", 1), args.get("end_line")), None
    if name == "python":
        return ["python3", "-"], args["code"]
    spec = next((s for s in specs if s.name == name), None)
    if spec is None or spec.command is None:
        raise ToolError(f"there is no command for the tool {name!r}")
    if name == "show":
        if args.get("lines") and not _LINES_ARG.match(args["lines"]):
            raise ToolError(f"lines must be a range such as '200-240', got {args['lines']!r}")
        if args.get("states") not in (None, ""):
            args = {**args, "states": parse_states(args["states"])}
    if name == "recall" and not str(args.get("query", "")).strip():
        raise ToolError("query is empty: give the question or the key words of what you look for")
    return spec.command.argv(args), None


def parse_states(value: str | int) -> str:
    """'3', 3, '3-5', '1,4-6', 'last' (spaces dropped); anything else is refused with the forms that work."""
    text = re.sub(r"\s+", "", str(value)).lower()
    if not _STATES_ARG.match(text):
        raise ToolError(f"states must be an index ('3'), a range ('3-5'), a list ('1,4-6') or 'last', got {value!r}")
    return text


def read_command(path: str, start: int, end: int | None) -> str:
    """A bash line printing numbered lines start..end of a store file (or listing a folder)."""
    rel = store_relative(path)
    end = end if end is not None else start + DEFAULT_READ_LINES - 1
    if end < start:
        raise ToolError(f"end_line {end} is before start_line {start}")
    quoted = shlex.quote(rel)
    return (
        f'cd "$RUNBOOK_STORE_DIR" && f={quoted} && '
        # the host reads the store without following links or opening FIFOs, and so does this tool
        f'if [ -L "$f" ]; then echo "not read: $f is a symbolic link (the store is read without following links)"; '
        f"exit 1; "
        f'elif [ -d "$f" ]; then ls -p "$f" | head -n 500; '
        f'elif [ -f "$f" ]; then echo "[$f: lines {start}-{end} of $(wc -l < "$f")]"; '
        f'awk -v a={start} -v b={end} \'NR>=a && NR<=b {{printf "%6d  %s\\n", NR, $0}} NR>b {{exit}}\' "$f"; '
        f'elif [ -e "$f" ]; then echo "not read: $f is not a regular file (a FIFO, socket or device)"; exit 1; '
        f'else echo "no such file in the store: $f"; exit 1; fi'
    )


def store_relative(path: str) -> str:
    """A path inside the store, refusing ones that would leave it."""
    rel = path.strip()
    for prefix in ("/store/", "$RUNBOOK_STORE_DIR/"):
        if rel.startswith(prefix):
            rel = rel[len(prefix) :]
    if rel in ("", ".", "/store", "$RUNBOOK_STORE_DIR"):
        return "."
    if rel.startswith("/") or ".." in rel.split("/"):
        raise ToolError(
            f"path {path!r} is outside the store: give a path relative to it, e.g. summaries/trajectories.tsv"
        )
    return rel


class SeenStates:
    """States the agent has looked at, weighted: shown states count more than search hits."""

    SHOWN, FOUND = 3, 1

    def __init__(self) -> None:
        self.weights: Counter[tuple[str, int]] = Counter()

    def note(self, name: str, args: dict[str, Any], output: str) -> None:
        for ref, index in _STATE_PATH.findall(output) + _SEARCH_HEAD.findall(output) + _RECALL_HEAD.findall(output):
            self.weights[(ref, int(index))] += self.FOUND
        for ref, index in _SHOW_HEAD.findall(output):
            self.weights[(ref, int(index))] += self.SHOWN
        if name == "show":
            for index in _GREP_HEAD.findall(output):
                self.weights[(args["trajectory_id"], int(index))] += self.FOUND

    def ranked(self) -> list[tuple[str, int]]:
        """(trajectory id or folder name, state index), most looked-at first, then in the order first seen."""
        order = {key: n for n, key in enumerate(self.weights)}
        return sorted(self.weights, key=lambda key: (-self.weights[key], order[key]))
