"""The arguments of the sandbox programs (recall, search, show), written once: each program builds its argparse
parser from them, and the agent's tool specs (runbook.agent.specs) derive from the same list which tool argument
becomes which flag, its JSON Schema type and its description. A tool argument is an `Arg` with `tool=True`; the
rest (--json, --store, output caps) are for a person at a shell."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from .grep import SORTS
from .statefile import FIELDS

ONE_STATE_CHARS = 12000
"""`show`: page text shown for one state."""
SPAN_STATE_CHARS = 4000
"""`show`: page text shown per state of a span."""


@dataclass(frozen=True)
class Arg:
    """One argument of a program: its name (the argparse dest and the tool argument), flags, type and help."""

    name: str
    flags: tuple[str, ...] = ()
    """('--max-results', '-n'); none: a positional argument."""
    help: str = ""
    kind: type = str
    """str, int, or bool (a flag that is on or off)."""
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    repeat: bool = False
    """The option may be given several times (argparse's append); the tool gives it once."""
    optional: bool = False
    """A positional argument that may be left out."""
    tool: bool = True
    """Offered to the agent as an argument of the tool of the same program."""
    schema_type: tuple[str, ...] | None = None
    """The JSON Schema type(s) when they are more than `kind` says (show's states: a string or an integer)."""
    minimum: int = 0
    """The least value of an int argument."""

    @property
    def option(self) -> str | None:
        """The long flag a tool call gives (None for a positional argument)."""
        return next((flag for flag in self.flags if flag.startswith("--")), None)

    def json_schema(self) -> dict[str, Any]:
        types = self.schema_type or ({bool: ("boolean",), int: ("integer",)}.get(self.kind) or ("string",))
        schema: dict[str, Any] = {"type": types[0] if len(types) == 1 else list(types)}
        if self.help:
            schema["description"] = self.help
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.kind is int:
            schema["minimum"] = self.minimum
        return schema


STORE = Arg("store", ("--store",), "the store (default: $RUNBOOK_STORE_DIR or /store)", metavar="DIR", tool=False)
JSON = Arg("json", ("--json",), "one JSON object instead of text", bool, tool=False)

PROGRAM_ARGS: dict[str, tuple[Arg, ...]] = {
    "recall": (
        Arg("query", (), "the question, or the key words of what you look for"),
        Arg("notes", ("--notes",), "strategy notes shown (3)", int, 3, "N"),
        Arg("events", ("--events",), "events shown (5)", int, 5, "N"),
        Arg("states", ("--states",), "page excerpts (state slices) shown (10)", int, 10, "N"),
        Arg("lines", ("--lines",), "text lines shown per hit (8)", int, 8, "N", tool=False),
        JSON,
        Arg("max_bytes", ("--max-bytes",), "cap the output at N bytes (16000)", int, 16000, "N", tool=False),
        STORE,
    ),
    "search": (
        Arg("pattern", (), "ripgrep regex (a literal string with fixed / -F)"),
        Arg("ignore_case", ("-i", "--ignore-case"), "match case-insensitively", bool),
        Arg("fixed", ("-F", "--fixed"), "take the pattern literally", bool),
        Arg("word", ("-w", "--word"), "match whole words only", bool, tool=False),
        Arg(
            "field",
            ("--field",),
            f"only these fields, comma-separated: {', '.join(FIELDS)} (the page)",
            metavar="F[,F]",
        ),
        Arg(
            "trajectory",
            ("--trajectory", "-t"),
            "only these trajectory ids, comma-separated (a glob works; repeatable at a shell)",
            metavar="ID|GLOB",
            repeat=True,
        ),
        Arg("site", ("--site",), "only trajectories of this site (repeatable at a shell)", repeat=True),
        Arg("outcome", ("--outcome",), "only trajectories that ended so: success, failure, or words of the outcome"),
        Arg("since", ("--since",), "only states at or after this ISO time (a prefix: 2025-12-17)", metavar="TIME"),
        Arg("until", ("--until",), "only states up to this ISO time (a prefix: 2025-12-17)", metavar="TIME"),
        Arg(
            "sort",
            ("--sort",),
            "time (oldest first, default), newest first, or count (busiest states first; the default with --count)",
            choices=SORTS,
        ),
        Arg("max_results", ("--max-results", "-n"), "lines shown in all (40)", int, 40, "N", minimum=1),
        Arg("per_state", ("--per-state",), "lines shown per state (3)", int, 3, "N", tool=False),
        Arg("context", ("--context", "-C"), "lines of context around each hit", int, 0, "N"),
        Arg("summaries", ("--summaries",), "also search summaries/ (trajectory table, actions)", bool),
        Arg("count", ("--count",), "matching lines per trajectory and state instead of the lines", bool),
        Arg("json", ("--json",), "one JSON object: hits (or counts) and truncated", bool, tool=False),
        Arg("width", ("--width",), "cut lines to N characters (200)", int, 200, "N", tool=False),
        Arg("max_bytes", ("--max-bytes",), "cap the output at N bytes (16000)", int, 16000, "N", tool=False),
        STORE,
    ),
    "show": (
        Arg("trajectory_id", (), "trajectory id (a unique prefix works)", metavar="TRAJECTORY"),
        Arg(
            "states",
            (),
            "a state index '3', a span '3-5', a list '1,4-6', or 'last'",
            optional=True,
            schema_type=("string", "integer"),
        ),
        Arg(
            "grep",
            ("--grep",),
            "the states whose file matches this Python regex, with the matching lines",
            metavar="REGEX",
        ),
        Arg("ignore_case", ("-i", "--ignore-case"), "grep ignores case", bool),
        Arg("context", ("-C", "--context"), "grep: lines of context around each match", int, 0, "N"),
        Arg("max_matches", ("--max-matches",), "grep: lines shown per state (10)", int, 10, "N", tool=False),
        Arg(
            "max_chars",
            ("--max-chars",),
            f"page text per state ({ONE_STATE_CHARS} for one state, {SPAN_STATE_CHARS} in a span; 0: all)",
            int,
            None,
            "N",
        ),
        Arg(
            "lines",
            ("--lines",),
            "only these lines of each state file, 'A-B' (line numbers as search prints them)",
            metavar="A-B",
        ),
        Arg("thoughts", ("--thoughts",), "overview: add each state's thought", bool),
        Arg("json", ("--json",), "JSON output", bool, tool=False),
        STORE,
    ),
}


def tool_args(program: str) -> tuple[Arg, ...]:
    """The arguments of `program` a tool call may give."""
    return tuple(arg for arg in PROGRAM_ARGS[program] if arg.tool)


def parser(program: str, doc: str) -> argparse.ArgumentParser:
    """`program`'s parser: its arguments from PROGRAM_ARGS, its description and examples from `doc` (its
    docstring: the first paragraph, then the rest)."""
    head, _, rest = doc.partition("\n\n")
    ap = argparse.ArgumentParser(
        prog=program, description=head, epilog=rest or None, formatter_class=argparse.RawTextHelpFormatter
    )
    for arg in PROGRAM_ARGS[program]:
        if not arg.flags:
            ap.add_argument(arg.name, nargs="?" if arg.optional else None, metavar=arg.metavar, help=arg.help)
        elif arg.kind is bool:
            ap.add_argument(*arg.flags, dest=arg.name, action="store_true", help=arg.help)
        else:
            ap.add_argument(
                *arg.flags,
                dest=arg.name,
                type=arg.kind,
                default=arg.default,
                metavar=arg.metavar,
                choices=arg.choices,
                action="append" if arg.repeat else "store",
                help=arg.help,
            )
    return ap
