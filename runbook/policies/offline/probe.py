"""A gotcha's follow-up search: what the agent typed in a run that went wrong, and what the site shows instead.

A classic pitfall is a wrong input: a made-up email, a bare '302' where the site writes '000000302'. After the
detail step, the planner takes the values the chosen run typed, searches the pages of other states for their
distinctive part, and keeps the states that show a different value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...core.ripgrep import escape_regex
from ...core.scanout import Step

_TYPED = re.compile(
    r"""\b(?:fill|type|input|input_text|send_keys)(?:\((?:[^,]*?,\s*)?(?:text=)?| .*? with )(['"])(.+?)\1(?=$|;|\)|,)"""
)
"""A typed value, in a step described by its control ("fill textbox 'Email' with 'a@b.c'") or as the raw call."""
_HEADING = re.compile(r"^(\S+) state (\d+) @ (\S+)")
_HIT = re.compile(r"^\s+L\d+[:-]\s?(.*)$")
MIN_TOKEN = 3
MAX_VALUES = 3


@dataclass(frozen=True)
class Sighting:
    """A state outside the run whose page shows a value like the one typed, but not the same."""

    key: tuple[str, int]
    typed: str
    seen: str
    time: str


def typed_values(steps: list[Step], run_id: str) -> list[str]:
    """Values the run typed into the page, in order, without repeats."""
    values: list[str] = []
    for step in sorted((s for s in steps if s.trajectory_id == run_id), key=lambda s: s.state_index):
        for match in _TYPED.finditer(step.action):
            value = match.group(2).strip()
            if len(value) >= MIN_TOKEN and value not in values:
                values.append(value)
    return values[:MAX_VALUES]


def distinctive_part(value: str) -> str:
    """What a different spelling of the value would share: an email's local part, a number without its zeros."""
    if "@" in value:
        return value.split("@", 1)[0]
    if value.isdigit():
        return value.lstrip("0") or value
    return value


def probe_pattern(values: list[str]) -> str:
    """One ripgrep regex finding any of the values' distinctive parts."""
    # ripgrep's regex refuses Python's escapes of plain characters ('\ ', "\'"): escape only what it treats as meta
    return "|".join(escape_regex(distinctive_part(v)) for v in values if len(distinctive_part(v)) >= MIN_TOKEN)


def read_probe(output: str, run_id: str, values: list[str], limit: int = 2) -> list[Sighting]:
    """States of other runs (newest first, as searched) whose matching line shows a variant of a typed value."""
    found: list[Sighting] = []
    heading = None
    for line in output.splitlines():
        head = _HEADING.match(line)
        if head:
            heading = (head.group(1), int(head.group(2)), head.group(3))
            continue
        hit = _HIT.match(line)
        if not hit or heading is None or heading[0] == run_id:
            continue
        text = hit.group(1)
        for value in values:
            part = distinctive_part(value)
            if part.lower() in text.lower() and value.lower() not in text.lower():
                seen = _around(text, part)
                if all(s.key[0] != heading[0] and s.seen != seen for s in found):  # one per value and run
                    found.append(Sighting((heading[0], heading[1]), value, seen, heading[2]))
                break
        if len(found) >= limit:
            break
    return found


def _around(text: str, part: str, width: int = 80) -> str:
    at = text.lower().find(part.lower())
    start = max(0, at - width // 4)
    return text[start : start + width].strip()
