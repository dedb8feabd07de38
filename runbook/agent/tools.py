"""The agent's tools: their specs, argument checks, and how each call becomes one command in the sandbox.

    search(pattern, field?, trajectory?, site?, ...) ripgrep over the state files (the `search` program)
    show(trajectory_id, states?, grep?, ...)         an overview, states '3' / '3-5' / 'last', or a grep
    read(path, start_line?, end_line?)               any file of the store, e.g. summaries/actions.txt
    python(code)                                     Python 3 in the sandbox (cwd /scratch, `import rbk`)
    finish(analysis, spans)                          hand back the evidence: ends the loop

A malformed call (unknown tool, missing or mistyped argument, bad JSON) is not run: its ToolResult carries `error`
and the message the policy reads says what to fix.
"""
from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from typing import Any, Callable

from ..errors import SandboxError
from .exceptions import Finished
from .types import Span, ToolCall, ToolResult, ToolSpec

MAX_SPAN_STATES = 20
"""States across all spans of one `finish` (LongMemEval-V2's AgentRunbook-C contract)."""
DEFAULT_READ_LINES = 400

_SPAN_SCHEMA = {
    "type": "object",
    "properties": {
        "trajectory_id": {"type": "string"},
        "start_state_index": {"type": "integer", "minimum": 0},
        "end_state_index": {"type": "integer", "minimum": 0},
    },
    "required": ["trajectory_id", "start_state_index", "end_state_index"],
}

TOOL_SPECS: list[ToolSpec] = [
    ToolSpec("search", "Search every stored state (header fields and page text) with a ripgrep regular expression. "
             "Hits come in time order (oldest first) grouped by state: `<trajectory id> state N @ time url`, then "
             "the matching lines (`L12:` page-text line, or the header field name: action, error, thought, ...). "
             "Use it to find where a name, value, page or error occurs; `count` shows where hits concentrate.",
             {"type": "object",
              "properties": {
                  "pattern": {"type": "string", "description": "ripgrep regex (a literal string with fixed=true)."},
                  "ignore_case": {"type": "boolean"},
                  "fixed": {"type": "boolean", "description": "Take the pattern literally."},
                  "field": {"type": "string", "description": "Only these fields, comma-separated: trajectory, "
                            "state, time, url, title, action, error, thought, screenshot, text (the page)."},
                  "trajectory": {"type": "string", "description": "Only this trajectory id (a glob works)."},
                  "site": {"type": "string", "description": "Only trajectories of this site."},
                  "outcome": {"type": "string", "description": "success or failure."},
                  "since": {"type": "string", "description": "Only states at or after this ISO time prefix."},
                  "until": {"type": "string", "description": "Only states up to this ISO time prefix."},
                  "sort": {"type": "string", "enum": ["time", "newest", "count"],
                           "description": "time (oldest first, default), newest first, or busiest first."},
                  "max_results": {"type": "integer", "minimum": 1, "description": "Lines shown in all (40)."},
                  "context": {"type": "integer", "minimum": 0, "description": "Lines of context around a hit."},
                  "summaries": {"type": "boolean", "description": "Also search the summaries (goals, actions)."},
                  "count": {"type": "boolean", "description": "Matching lines per trajectory and state instead."}},
              "required": ["pattern"]}),
    ToolSpec("show", "Print stored states of one trajectory. Without `states`: its goal, outcome, times and one "
             "line per state (time, action, url, error). With `states` ('3', a span '3-5', a list '1,4-6', or "
             "'last'): each state's header (time, url, title, action, error, thought) and page text. `grep` "
             "lists the states whose file matches a regular expression, with the matching lines.",
             {"type": "object",
              "properties": {
                  "trajectory_id": {"type": "string", "description": "Trajectory id (a unique prefix works)."},
                  "states": {"type": ["string", "integer"], "description": "'3', '3-5', '1,4-6' or 'last'."},
                  "grep": {"type": "string", "description": "Python regex a state must match."},
                  "ignore_case": {"type": "boolean", "description": "grep ignores case."},
                  "context": {"type": "integer", "minimum": 0, "description": "grep: lines around each match."},
                  "lines": {"type": "string", "description": "Only these lines of each state file, 'A-B' (line "
                            "numbers as search prints them)."},
                  "max_chars": {"type": "integer", "minimum": 0, "description": "Page text per state "
                                "(default 12000 for one state, 4000 in a span; 0 for all)."},
                  "thoughts": {"type": "boolean", "description": "Overview: add each state's thought."}},
              "required": ["trajectory_id"]}),
    ToolSpec("read", "Print lines of any file in the store, with line numbers; a folder lists its entries. "
             "Paths are relative to the store, e.g. summaries/trajectories.tsv or summaries/actions.txt.",
             {"type": "object",
              "properties": {"path": {"type": "string"},
                             "start_line": {"type": "integer", "minimum": 1},
                             "end_line": {"type": "integer", "minimum": 1}},
              "required": ["path"]}),
    ToolSpec("python", "Run Python 3 code in the sandbox and print its output. The store is read-only at "
             "os.environ['RUNBOOK_STORE_DIR'] (catalog.sqlite can be queried with sqlite3); the working folder "
             "/scratch is writable; `import rbk` gives helpers for reading states. Print what you need to see.",
             {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
    ToolSpec("finish", "Hand back the evidence and stop. `analysis`: a few sentences for the reader: what the "
             "evidence shows and where, which value is the latest, and whether the question's premise is wrong. "
             f"`spans`: the states that show it, most important first, at most {MAX_SPAN_STATES} states in all "
             "(indices inclusive).",
             {"type": "object",
              "properties": {"analysis": {"type": "string"},
                             "spans": {"type": "array", "items": _SPAN_SCHEMA}},
              "required": ["analysis", "spans"]}),
]

_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict, "number": (int, float)}
_STATE_PATH = re.compile(r"trajectories/([A-Za-z0-9][A-Za-z0-9._-]*)/states/(\d{4,})\.md")
_SEARCH_HEAD = re.compile(r"^([^\s=#]\S*) state (\d+) @ ", re.M)
"""How `search` heads the hits of one state."""
_SHOW_HEAD = re.compile(r"^== (\S+) state (\d+) of ", re.M)
"""How `show` heads a state it prints whole."""
_GREP_HEAD = re.compile(r"^== state (\d+) @ ", re.M)
"""How `show --grep` heads a matching state (the trajectory is the call's)."""
_STATES_ARG = re.compile(r"^(?:\d+(?:-(?:\d+|last))?|last|-1)(?:,(?:\d+(?:-(?:\d+|last))?|last|-1))*$")
_LINES_ARG = re.compile(r"^\s*\d+\s*-\s*\d+\s*$")


class ToolError(Exception):
    """A call the tools refuse to run; the message is what the policy reads."""


SpanCheck = Callable[[list[Span]], None]
"""Raises ToolError when spans name an unknown trajectory or state (the store knows; the tools do not)."""


class ToolBox:
    """Runs tool calls in one sandbox, and remembers which states the agent has seen."""

    def __init__(self, sandbox, *, call_seconds: float = 60.0, check_spans: SpanCheck | None = None,
                 specs: list[ToolSpec] | None = None):
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
            argv, stdin = command_for(call.name, args)
        except ToolError as exc:
            return ToolResult(call.id, call.name, f"error: {exc}", exit_code=2, error=str(exc))
        try:
            result = self.sandbox.exec(argv, timeout=min(self.call_seconds, timeout or self.call_seconds),
                                       stdin=stdin)
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
            raise ToolError(f"the arguments of {call.name!r} could not be parsed ({call.error}); send them as one "
                            f"JSON object that matches the tool's schema")
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
            raise ToolError(f"the spans cover {total} states; at most {MAX_SPAN_STATES} are allowed: drop the least "
                            f"important spans or shorten them, then call finish again")
        if self.check_spans:
            self.check_spans(spans)
        return Finished(args["analysis"].strip(), spans)


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
    if types and not any(isinstance(value, _TYPES[t]) and not (t != "boolean" and isinstance(value, bool))
                         for t in types):
        raise ToolError(f"{where} must be {' or '.join(types)}, got {json.dumps(value)[:80]}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{where} must be one of {', '.join(map(str, schema['enum']))}, got {json.dumps(value)[:80]}")
    if isinstance(value, int) and "minimum" in schema and value < schema["minimum"]:
        raise ToolError(f"{where} must be at least {schema['minimum']}, got {value}")
    if isinstance(value, dict):
        return check_object(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        return [check_value(item, schema["items"], f"{where}[{i}]") for i, item in enumerate(value)]
    return value


def command_for(name: str, args: dict[str, Any]) -> tuple[list[str] | str, str | None]:
    """The sandbox command (argv or a bash line) and stdin that carry out one validated call."""
    if name == "search":
        return search_argv(args), None
    if name == "show":
        return show_argv(args), None
    if name == "read":
        return read_command(args["path"], args.get("start_line", 1), args.get("end_line")), None
    if name == "python":
        return ["python3", "-"], args["code"]
    raise ToolError(f"there is no command for the tool {name!r}")


_SEARCH_FLAGS = {"ignore_case": "--ignore-case", "fixed": "--fixed", "summaries": "--summaries", "count": "--count"}
_SEARCH_OPTIONS = {"field": "--field", "trajectory": "--trajectory", "site": "--site", "outcome": "--outcome",
                   "since": "--since", "until": "--until", "sort": "--sort", "max_results": "--max-results",
                   "context": "--context"}


def search_argv(args: dict[str, Any]) -> list[str]:
    """`search [flags] [--option value]... -- PATTERN` (runbook/sandbox/programs)."""
    argv = ["search"]
    argv += [flag for key, flag in _SEARCH_FLAGS.items() if args.get(key)]
    for key, option in _SEARCH_OPTIONS.items():
        if args.get(key) not in (None, ""):
            argv += [option, str(args[key])]
    return argv + ["--", args["pattern"]]


_SHOW_FLAGS = {"ignore_case": "--ignore-case", "thoughts": "--thoughts"}
_SHOW_OPTIONS = {"grep": "--grep", "context": "--context", "lines": "--lines", "max_chars": "--max-chars"}


def show_argv(args: dict[str, Any]) -> list[str]:
    """`show [flags] [--option value]... -- ID [STATES]` (runbook/sandbox/programs)."""
    argv = ["show"]
    argv += [flag for key, flag in _SHOW_FLAGS.items() if args.get(key)]
    for key, option in _SHOW_OPTIONS.items():
        if args.get(key) not in (None, ""):
            argv += [option, str(args[key])]
    if args.get("lines") and not _LINES_ARG.match(args["lines"]):
        raise ToolError(f"lines must be a range such as '200-240', got {args['lines']!r}")
    argv += ["--", args["trajectory_id"]]
    if args.get("states") not in (None, ""):
        argv.append(parse_states(args["states"]))
    return argv


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
    return (f'cd "$RUNBOOK_STORE_DIR" && f={quoted} && '
            f'if [ -d "$f" ]; then ls -p "$f" | head -n 500; '
            f'elif [ -f "$f" ]; then echo "[$f: lines {start}-{end} of $(wc -l < "$f")]"; '
            f'awk -v a={start} -v b={end} \'NR>=a && NR<=b {{printf "%6d  %s\\n", NR, $0}} NR>b {{exit}}\' "$f"; '
            f'else echo "no such file in the store: $f"; exit 1; fi')


def store_relative(path: str) -> str:
    """A path inside the store, refusing ones that would leave it."""
    rel = path.strip()
    for prefix in ("/store/", "$RUNBOOK_STORE_DIR/"):
        if rel.startswith(prefix):
            rel = rel[len(prefix):]
    if rel in ("", ".", "/store", "$RUNBOOK_STORE_DIR"):
        return "."
    if rel.startswith("/") or ".." in rel.split("/"):
        raise ToolError(f"path {path!r} is outside the store: give a path relative to it, "
                        f"e.g. summaries/trajectories.tsv")
    return rel


class SeenStates:
    """States the agent has looked at, weighted: shown states count more than search hits."""

    SHOWN, FOUND = 3, 1

    def __init__(self):
        self.weights: Counter[tuple[str, int]] = Counter()

    def note(self, name: str, args: dict[str, Any], output: str) -> None:
        for ref, index in _STATE_PATH.findall(output) + _SEARCH_HEAD.findall(output):
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
