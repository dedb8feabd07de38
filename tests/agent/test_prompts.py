"""The system prompt's tool section and each program's command line are derived from the one tool spec: every tool
in the prompt is a spec with exactly its arguments, and every option a spec maps to exists in its program."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from runbook.core.hits import Hit
from runbook.agent.prompts import recall_lines, system_prompt, tool_section, user_prompt
from runbook.agent.specs import TOOL_SPECS
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


@pytest.mark.parametrize("spec", [s for s in TOOL_SPECS if s.command is not None], ids=lambda s: s.name)
def test_every_option_a_spec_maps_to_exists_in_its_program(spec):
    program = programs_dir() / spec.command.program
    help_text = subprocess.run([sys.executable, str(program), "--help"], capture_output=True, text=True,
                               env={"PYTHONPATH": str(programs_dir())}).stdout
    for option in [*spec.command.flags.values(), *spec.command.options.values()]:
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text), f"{spec.name}: {option}"
    assert set(spec.command.flags) | set(spec.command.options) | set(spec.command.positional) == \
        set(spec.parameters["properties"])


def test_the_first_message_lists_recall_hits_with_their_ids():
    hits = [Hit("n3", "notes", "wa-1", "wa-1", 0, 6, kind="procedure", timestamp="2025-12-16", url="http://x/",
                text="procedure note\nsteps: ..."),
            Hit("s8", "slices", "wa-2", "wa-2", 4, timestamp="2025-12-17", url="http://y/",
                label="latest of 2 views of this page", excerpt="Price $24.00")]
    lines = recall_lines(hits)
    assert lines[0].startswith("[n3] wa-1 states 0-6 @ 2025-12-16 http://x/ [procedure]")
    assert lines[1].startswith("[s8] wa-2 state 4 @ 2025-12-17 http://y/ [latest of 2 views of this page]")
    assert "Price $24.00" in lines[1]
    message = user_prompt("What is the price?", recall=hits)
    assert message.startswith("Question: What is the price?") and "[s8] wa-2 state 4" in message
