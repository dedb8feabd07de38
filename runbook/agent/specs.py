"""The agent's tools, written once: each ToolSpec is the JSON Schema the policies see AND, through its Command, how
a call becomes the argv of a program in the sandbox; the system prompt's tool section is rendered from the same
specs (runbook.agent.prompts), so the three cannot drift apart.

    recall(query, notes?, events?, states?)            method R's ranked notes, events and state slices (start here)
    search(pattern, field?, trajectory?, site?, ...)   ripgrep over the state files (the `search` program)
    show(trajectory_id, states?, grep?, ...)           an overview, states '3' / '3-5' / 'last', or a grep
    read(path, start_line?, end_line?)                 any file of the store, e.g. summaries/actions.txt
    python(code)                                       Python 3 in the sandbox (cwd /scratch, `import rbk`)
    finish(analysis, spans, recall?)                   hand back the evidence: ends the loop
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.program_args import Arg, tool_args
from ..models.messages import ToolSpec

MAX_SPAN_STATES = 20
"""States across all spans of one `finish` (LongMemEval-V2's AgentRunbook-C contract)."""


@dataclass(frozen=True)
class Command:
    """How a call of a tool becomes `program [flags] [--option value]... -- POSITIONAL...` in the sandbox."""

    program: str
    flags: dict[str, str] = field(default_factory=dict)
    """Boolean argument -> the flag given when it is true."""
    options: dict[str, str] = field(default_factory=dict)
    """Argument -> the option that takes its value."""
    positional: tuple[str, ...] = ()
    """Arguments given after `--`, in this order (absent optional ones are left out)."""

    def argv(self, args: dict[str, Any]) -> list[str]:
        argv = [self.program]
        argv += [flag for key, flag in self.flags.items() if args.get(key)]
        for key, option in self.options.items():
            if args.get(key) not in (None, ""):
                value = args[key]
                argv += [
                    option,
                    json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value),
                ]
        tail = [str(args[key]) for key in self.positional if args.get(key) not in (None, "")]
        return argv + ["--", *tail] if self.positional else argv


def program_command(program: str) -> Command:
    """The Command of a tool that runs `program`, derived from the program's own argument list."""
    args = tool_args(program)
    return Command(
        program,
        flags={a.name: _long_option(a) for a in args if a.flags and a.kind is bool},
        options={a.name: _long_option(a) for a in args if a.flags and a.kind is not bool},
        positional=tuple(a.name for a in args if not a.flags),
    )


def _long_option(arg: Arg) -> str:
    """A flagged argument's long option: every one has one (PROGRAM_ARGS), and a tool call gives that."""
    assert arg.option is not None, f"{arg.name} has no long option"
    return arg.option


def program_parameters(program: str) -> dict[str, Any]:
    """The JSON Schema of a tool that runs `program`: its tool arguments, the positional ones required."""
    args = tool_args(program)
    return {
        "type": "object",
        "properties": {a.name: a.json_schema() for a in args},
        "required": [a.name for a in args if not a.flags and not a.optional],
    }


def _string(description: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def _integer(description: str = "", minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, **({"description": description} if description else {})}


def _flag(description: str = "") -> dict[str, Any]:
    return {"type": "boolean", **({"description": description} if description else {})}


_SPAN_SCHEMA = {
    "type": "object",
    "properties": {"trajectory_id": {"type": "string"}, "start_state_index": _integer(), "end_state_index": _integer()},
    "required": ["trajectory_id", "start_state_index", "end_state_index"],
}

RECALL = ToolSpec(
    "recall",
    "Fast retrieval over the whole memory (method R's pools): the strategy notes (a run's condensed steps, its "
    "errors and retries), events (one action and what it changed) and page excerpts ranked for a question. Each "
    "hit names its id (n12, e34, s56), trajectory, states, time, url and a label (successful or failed run, latest "
    "or older view of a page). Start here; verify what matters with show or search. Ids you keep go in finish's "
    "`recall` list.",
    program_parameters("recall"),
    command=program_command("recall"),
)

SEARCH = ToolSpec(
    "search",
    "Search every stored state (header fields and page text) with a ripgrep regular expression. Hits come in time "
    "order (oldest first) grouped by state: `<trajectory id> state N @ time url`, then the matching lines (`L12:` "
    "page-text line, or the header field name: action, error, thought, ...). Use it to find where a name, value, "
    "page or error occurs; `count` shows where hits concentrate.",
    program_parameters("search"),
    command=program_command("search"),
)

SHOW = ToolSpec(
    "show",
    "Print stored states of one trajectory. Without `states`: its goal, outcome, times and one line per state "
    "(time, action, url, error). With `states` ('3', a span '3-5', a list '1,4-6', or 'last'): each state's header "
    "(time, url, title, action, error, thought) and page text. `grep` lists the states whose file matches a regular "
    "expression, with the matching lines.",
    program_parameters("show"),
    command=program_command("show"),
)

READ = ToolSpec(
    "read",
    "Print lines of any file in the store, with line numbers; a folder lists its entries. Paths are relative to the "
    "store, e.g. summaries/trajectories.tsv or summaries/actions.txt.",
    {
        "type": "object",
        "properties": {"path": _string(), "start_line": _integer(minimum=1), "end_line": _integer(minimum=1)},
        "required": ["path"],
    },
)

PYTHON = ToolSpec(
    "python",
    "Run Python 3 code in the sandbox and print its output. The store is read-only at os.environ['RUNBOOK_STORE_DIR'] "
    "(catalog.sqlite can be queried with sqlite3); the working folder /scratch is writable; `import rbk` gives "
    "helpers for reading states. Print what you need to see.",
    {"type": "object", "properties": {"code": _string()}, "required": ["code"]},
)

FINISH = ToolSpec(
    "finish",
    "Hand back the evidence and stop. `analysis`: a few sentences for the reader: what the evidence shows and "
    "where, which value is the latest, and whether the question's premise is wrong. `spans`: the states that show "
    f"it, most important first, at most {MAX_SPAN_STATES} states in all (indices inclusive). `recall`: ids of recall "
    "hits (n12, e34, s56) to keep as evidence too, most important first.",
    {
        "type": "object",
        "properties": {
            "analysis": _string(),
            "spans": {"type": "array", "items": _SPAN_SCHEMA},
            "recall": {"type": "array", "items": _string()},
        },
        "required": ["analysis", "spans"],
    },
)

TOOL_SPECS: list[ToolSpec] = [RECALL, SEARCH, SHOW, READ, PYTHON, FINISH]

PLAN = ToolSpec(
    "plan",
    "The offline planner's one call: scan every state for the question, choose the states its kind needs, read them "
    "(runbook.core.plan; JSON lines: the choice, the scan, the details).",
    {
        "type": "object",
        "properties": {"request": {"type": "object", "description": "A PlanRequest."}},
        "required": ["request"],
    },
    command=Command("rbplan", options={"request": "--request"}),
)
"""Not shown to model policies: a policy that uses it lists it in its `extra_tools`."""
