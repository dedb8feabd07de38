"""Values shown on a page next to a label: an input's value= attribute, the text after a label, a badge under a
link; and how a value changed over time."""

from __future__ import annotations

import re

from .records import Hits, Record

_VALUE_QUOTED = re.compile(r"""\b(?:value|checked|aria-checked)=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")
_VALUE_DOM = re.compile(r"\b(?:value|checked|aria-checked)=(?!['\"])(.*?)(?=\s+[\w-]+=|\s*/?>|$)")
_AX_NAME = re.compile(r"^(?:\*?\[[\w-]+\]\s*)?([A-Za-z]+)\s+'(.*?)'(?=\s+\w+=|,|\s*$)")
_DOM_TAG = re.compile(r"^(?:\|[A-Z]+\([a-z]+\)\|)*\*?(?:\[\d+\])?<[^>]*>\s*$")
INPUT_ROLES = {"textbox", "searchbox", "spinbutton", "checkbox", "radio", "switch", "slider"}


def _line_value_attr(line: str) -> str | None:
    """The value (or checked state) attribute of an input on this line, if any."""
    m = _VALUE_QUOTED.search(line)
    if m:
        return m.group(1) if m.group(1) is not None else m.group(2)
    m = _VALUE_DOM.search(line)
    return m.group(1).strip() if m else None


def _line_role_name(line: str) -> tuple[str, str]:
    """(role, visible text) of a page line: an accessibility-tree node, a DOM tag (no text), or plain text."""
    line = line.strip()
    m = _AX_NAME.match(line)
    if m:
        return m.group(1), m.group(2).strip()
    if _DOM_TAG.match(line):
        return "", ""
    return "", line


def _cuts_word(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] begins or ends in the middle of a word."""
    inside_start = 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum()
    inside_end = 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum()
    return inside_start or inside_end


def _value_near(line: str, after: list[str], label: re.Pattern | None) -> str | None:
    """The value a page shows for a labelled line (best effort); see _value_and_source."""
    return _value_and_source(line, after, label)[0]


def _value_and_source(line: str, after: list[str], label: re.Pattern | None) -> tuple[str | None, int]:
    """(value, 0 if it is on the line itself or k if on the k-th next line).

    In order: the line's value/checked attribute; an empty input ("" for a textbox with no value); the text after
    the label on the same line ('Order Total: $5'); else the first following line with an attribute value or text.
    """
    attr = _line_value_attr(line)
    if attr is not None:
        return attr, 0
    role, name = _line_role_name(line)
    if role in INPUT_ROLES:
        return "", 0
    if label is not None:
        m = label.search(name)
        if m:
            if _cuts_word(name, m.start(), m.end()):
                return None, 0  # 'Full name' inside 'Display full names' is not that field
            rest = name[m.end() :].lstrip(" :=\t-–")
            if rest:
                return rest, 0
    elif name:
        return name, 0
    for k, nxt in enumerate(after, 1):
        attr = _line_value_attr(nxt)
        if attr is not None:
            return attr, k
        text = _line_role_name(nxt)[1]
        if text and text != name and re.search(r"\w", text) and not (label is not None and label.fullmatch(text)):
            return text, k
    return None, 0


def values(text: str, label: str, *, ignore_case: bool = True, lookahead: int = 6) -> list[str]:
    """Values shown next to a label in one page text, in page order (a value attribute, 'Label: v', or next text)."""
    rx = re.compile(label, re.I if ignore_case else 0)
    lines = text.splitlines()
    found, used = [], set()
    for i, line in enumerate(lines):
        if i in used or not rx.search(line):
            continue
        value, k = _value_and_source(line, lines[i + 1 : i + 1 + lookahead], rx)
        if value is not None:
            found.append(value)
            used.add(i + k)  # a label line and the input below it that repeats the label show one value
    return found


# -- the store -------------------------------------------------------------------------------------------------


def _only_changes(hits: Hits) -> Hits:
    """The first hit of each run of equal values, with the run's `seen` count and `last_seen` time."""
    kept: list = []
    for h in hits:
        if kept and kept[-1].value == h.value:
            kept[-1]["seen"] += 1
            kept[-1]["last_seen"] = h.time
        else:
            h["seen"], h["last_seen"] = 1, h.time
            kept.append(h)
    return Hits(kept, hits.total, hits.states, hits.truncated)


def _hit_value(hit: Record, value_rx: re.Pattern | None, pattern_rx: re.Pattern | None) -> str | None:
    line = hit.line
    if value_rx is not None:
        m = value_rx.search(line)
        return (m.group(1) if m.groups() else m.group(0)) if m else None
    if pattern_rx is not None and pattern_rx.groups:
        m = pattern_rx.search(line)
        if m:
            return next((g for g in m.groups() if g is not None), m.group(0))
    if hit.field != "text":
        return line.partition(": ")[2]
    return _value_near(line, hit.get("after", []), pattern_rx)
