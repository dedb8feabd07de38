"""The system prompt's tool section and each program's command line are derived from the one tool spec: every tool
in the prompt is a spec with exactly its arguments, and every option a spec maps to exists in its program."""

from __future__ import annotations

import json
import re

import pytest

from runbook.agent.prompts import recall_lines, system_prompt, tool_section, user_prompt
from runbook.agent.specs import PLAN, TOOL_SPECS
from runbook.core.hits import Hit
from runbook.core.plan import request_parser
from runbook.core.program_args import parser
from runbook.sandbox.sources import programs_dir

_TOOL_LINE = re.compile(r"^- (\w+)\(([^)]*)\): ", re.M)


def prompt_tools(prompt: str) -> dict[str, list[str]]:
    tools_part = prompt.split("# Tools", 1)[1].split("\n# ", 1)[0]
    return {name: [a.strip() for a in args.split(",") if a.strip()] for name, args in _TOOL_LINE.findall(tools_part)}


def test_every_tool_in_the_prompt_matches_its_spec():
    listed = prompt_tools(system_prompt())
    assert list(listed) == [spec.name for spec in TOOL_SPECS]
    for spec in TOOL_SPECS:
        required = set(spec.parameters.get("required", []))
        expected = [n if n in required else f"{n}?" for n in spec.parameters["properties"]]
        assert listed[spec.name] == expected, spec.name
        assert f"{spec.description}" in tool_section()


def test_recall_is_described_first_and_the_strategy_follows_agentrunbook_c():
    prompt = system_prompt()
    assert next(iter(prompt_tools(prompt))) == "recall"
    work = prompt.split("# How to work", 1)[1]
    assert work.index("Triage") < work.index("Shortlist") < work.index("Verify") < work.index("at most 20 states")
    assert "The premise is wrong" in prompt


PROGRAM_SPECS = [s for s in [*TOOL_SPECS, PLAN] if s.command is not None]


def sample_arguments(spec) -> dict:
    """A value for every argument of a tool's schema, of its type (a string with spaces and a dash, an integer)."""
    values = {"boolean": True, "integer": 7, "object": {"kind": "static"}, "string": "a -b c"}
    out = {}
    for name, prop in spec.parameters["properties"].items():
        kind = prop["type"] if isinstance(prop["type"], str) else prop["type"][0]
        out[name] = prop["enum"][1] if "enum" in prop else values[kind]
    if spec.name == "show":
        out["states"] = "3-5"
    return out


@pytest.mark.parametrize("spec", PROGRAM_SPECS, ids=lambda s: s.name)
def test_each_tool_specs_argv_parses_back_to_its_arguments_in_its_program(spec):
    """The tool's argv, as the sandbox would run it, goes through the program's own parser unchanged: the flags and
    positions the spec derives from the program's argument list are the ones the program reads."""
    args = sample_arguments(spec)
    argv = spec.command.argv(args)
    assert argv[0] == spec.command.program
    if spec.name == "plan":
        parsed = vars(request_parser().parse_args(argv[1:]))
        assert json.loads(parsed["request"]) == args["request"]
        return
    parsed = vars(parser(spec.command.program, "doc").parse_args(argv[1:]))
    for name, value in args.items():
        got = parsed[name]
        assert (got[-1] if isinstance(got, list) else got) == value, name


def test_every_program_is_on_the_sandbox_path():
    for spec in PROGRAM_SPECS:
        assert (programs_dir() / spec.command.program).is_file(), spec.command.program


def test_the_first_message_lists_recall_hits_with_their_ids():
    hits = [
        Hit(
            "n3",
            "notes",
            "wa-1",
            "wa-1",
            0,
            6,
            kind="procedure",
            timestamp="2025-12-16",
            url="http://x/",
            text="procedure note\nsteps: ...",
        ),
        Hit(
            "s8",
            "slices",
            "wa-2",
            "wa-2",
            4,
            timestamp="2025-12-17",
            url="http://y/",
            label="latest of 2 views of this page",
            excerpt="Price $24.00",
        ),
    ]
    lines = recall_lines(hits)
    assert lines[0].startswith("[n3] wa-1 states 0-6 @ 2025-12-16 http://x/ [procedure]")
    assert lines[1].startswith("[s8] wa-2 state 4 @ 2025-12-17 http://y/ [latest of 2 views of this page]")
    assert "Price $24.00" in lines[1]
    message = user_prompt("What is the price?", recall=hits)
    assert message.startswith("Question: What is the price?") and "[s8] wa-2 state 4" in message
