"""Actions made readable: the control an action's element id points at, and errors cut to their gist."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

from .page import parse_page
from .text import clean_line

_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*$", re.S)
_BID = re.compile(r"^\s*(?:index\s*=\s*)?['\"]?(\d+)['\"]?")
_LINE_ID = re.compile(r"^(\s*)(?:\|SHADOW\(\w+\)\|)?\*?\[(\d+)\]")
_NAMED = re.compile(r"^\s*(?:\[\d+\] )?(link|heading|gridcell|cell|rowheader|StaticText) '(.+)'")
"""An element whose name can name the item it sits in (a row's first cell, a card's title link), controls aside."""
ITEM_LEVELS = 2
"""How far up a control's ancestors its item's name is looked for: its own list item or row, or the one above."""
ITEM_CHARS = 60
MESSAGE_ACTIONS = frozenset({"send_msg_to_user", "report_infeasible", "answer"})
"""Actions whose argument is a message to the user, not an element: send_msg_to_user('0') answers "0"."""
_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""What str.splitlines ends a line at besides "\n"."""
_LABEL = re.compile(
    r"""(?:text|value|keys|url|options?)\s*=\s*(['"])(.*?)\1|^\s*['"]?\d+['"]?\s*,\s*(['"])(.*?)\3""", re.S
)
_STATE_PROPS = re.compile(
    r",\s*(?:focused|required|disabled=\S+|hasPopup=\S+|expanded=\S+|autocomplete=\S+|multiline=\S+|"
    r"orientation=\S+|controls=\S+|describedby=\S+|live=\S+|atomic|relevant=\S+)(?=,|$)"
)
_ERROR_KEEP = re.compile(
    r"intercepts pointer events|not visible|not enabled|not editable|detached|outside of the "
    r"viewport|did not match|no element|not found|timeout|strict mode|invalid|cannot|can't|"
    r"unable|refused|denied|exception|error",
    re.I,
)
_ERROR_NOISE = re.compile(
    r"^\s*(-\s*)?(waiting for|retrying|attempting|scrolling|done scrolling|element is visible|"
    r"element is enabled|element is stable|performing|locator resolved|\d+ × )",
    re.I,
)


def split_actions(action: str | None) -> list[str]:
    """One string per action call (browser-use states may hold several, one per line)."""
    if not action:
        return []
    return [a.strip() for a in action.replace(" ⏎ ", "\n").split("\n") if a.strip()]


def action_name(action: str) -> str:
    match = _CALL.match(action)
    return match.group(1) if match else action.split("(", 1)[0].strip()


def element_id(action: str) -> str | None:
    """The element id an action targets: click('431') -> '431', click(index=29) -> '29'."""
    match = _CALL.match(action)
    if not match or match.group(1) in MESSAGE_ACTIONS:
        return None
    found = _BID.match(match.group(2))
    return found.group(1) if found else None


def typed_value(action: str) -> str | None:
    """The text an action types or selects, the URL it opens, or the message it sends."""
    match = _CALL.match(action)
    if not match:
        return None
    found = _LABEL.search(match.group(2))
    if found:
        return found.group(2) if found.group(2) is not None else found.group(4)
    args = match.group(2).strip()
    if args[:1] in "'\"" and args[-1:] == args[:1]:
        return args[1:-1]
    return None


def control_label(page_text: str, bid: str) -> str:
    """What element `bid` is on the page: "button 'Cancel'", "combobox 'Show … per page'" (a form control as the
    page's structure names it, core.page), "switch 'Spell check'" (DOM text)."""
    needle = f"[{bid}]"
    if needle not in page_text:
        return ""  # no line can carry the id
    split: list[list[str]] = []

    def page_lines() -> list[str]:  # the page split only when a label needs the lines around its own, then kept
        if not split:
            split.append(page_text.splitlines())
        return split[0]

    for number, line in _lines_holding(page_text, needle):
        match = _LINE_ID.match(line)
        if match and match.group(2) == bid:
            return _label(page_text, number, line, match, page_lines)
    return ""


def _lines_holding(page_text: str, needle: str) -> Iterator[tuple[int, str]]:
    """(number, line) of each line that holds `needle`, numbered as splitlines numbers them."""
    if any(ch in page_text for ch in _OTHER_BREAKS):
        for number, line in enumerate(page_text.splitlines()):
            if needle in line:
                yield number, line
        return
    # lines end at "\n" alone: go from one mention of the id to the next, instead of splitting the whole page (a
    # page's every action did) and matching a pattern on every line
    number, counted_to = 0, 0
    at = page_text.find(needle)
    while at >= 0:
        start = page_text.rfind("\n", 0, at) + 1
        end = page_text.find("\n", at)
        end = len(page_text) if end < 0 else end
        number += page_text.count("\n", counted_to, start)
        counted_to = start
        yield number, page_text[start:end]
        at = page_text.find(needle, end)


def _label(page_text: str, number: int, line: str, match: re.Match[str], page_lines: Callable[[], list[str]]) -> str:
    """The label of the element on line `number` (`match`: its id's match on that line)."""
    named = _field_named(page_text, number)
    if named:
        return named
    own = clean_line(line).strip().lstrip("*").strip()
    if own.startswith("<"):  # browser-use DOM text: the element's words sit on the deeper lines below it
        tag = re.match(r"<(\w+)", own)
        words = _child_text(page_lines(), number, len(match.group(1)))
        attrs = re.findall(r"(?:placeholder|aria-label|title|name|id)=([^ />]+)", own)
        label = words or (attrs[0] if attrs else "")
        return f"{tag.group(1) if tag else 'element'} '{label}'" if label else (tag.group(1) if tag else own)
    own = _STATE_PROPS.sub("", own)  # 'focused', "hasPopup='menu'": how the control was, not what it is
    if own.endswith("''") or "'" not in own:  # an unnamed element: its children carry the words
        words = _child_text(page_lines(), number, len(match.group(1)))
        if words:
            own = own.removesuffix("''").strip() + f" '{words}'"
    own = own[:120]
    role_and_name = line[match.end() :].split(",")[0].strip()
    if (
        role_and_name.endswith("'") and not role_and_name.endswith("''") and page_text.count(f"] {role_and_name}") > 1
    ):  # 'Remove' on every row: say which row
        item = _item_of(page_lines(), number, len(match.group(1)))
        if item:
            own += f" (of '{item}')"
    return own


def _item_of(lines: list[str], at: int, indent: int) -> str:
    """The name of the list item, row or card that holds the control on line `at`: the first named element among
    the lines of its nearest ancestors (at most ITEM_LEVELS up) before it, other than the control's own name."""
    own = re.search(r"'(.*)'", lines[at])
    for level, pos in enumerate(_ancestors(lines, at, indent)):
        if level >= ITEM_LEVELS:
            break
        for line in lines[pos + 1 : at]:
            named = _NAMED.match(line)
            if named and named.group(2).strip() and (own is None or named.group(2) != own.group(1)):
                text = clean_line(named.group(2)).strip()
                if text:
                    return text if len(text) <= ITEM_CHARS else text[: ITEM_CHARS - 1].rstrip() + "…"
    return ""


def _ancestors(lines: list[str], at: int, indent: int) -> Iterator[int]:
    """Line numbers of the lines enclosing line `at` (each less indented than the one below it), nearest first."""
    for pos in range(at - 1, -1, -1):
        depth = len(lines[pos]) - len(lines[pos].lstrip("\t "))
        if depth < indent:
            yield pos
            indent = depth
            if depth == 0:
                return


def _field_named(page_text: str, line: int) -> str:
    """The form control on page line `line` as the parsed page names it, without its value: its label may come from
    the words beside it (a select with no label of its own, a DOM switch whose name is the line above)."""
    for block in parse_page(page_text).blocks:
        if block.kind == "field" and block.start <= line <= block.end and ": " not in block.text.split(" = ")[0]:
            return block.text.split(" = ")[0].split(" › ")[-1][:120]
    return ""


def _child_text(lines: list[str], pos: int, indent: int) -> str:
    words = []
    for line in lines[pos + 1 : pos + 4]:
        depth = len(line) - len(line.lstrip("\t "))
        if depth <= indent or _LINE_ID.match(line):
            break
        words.append(clean_line(line).strip().removeprefix("StaticText").strip(" '"))
    return " ".join(words)[:80]


def describe(action: str, page_text: str) -> str:
    """An action with its target spelled out: "click button 'Cancel'", "fill textbox 'Email' with 'x@y.z'"."""
    name = action_name(action)
    bid = element_id(action)
    value = typed_value(action)
    if bid is None:
        return action if len(action) <= 160 else action[:157] + "..."
    label = control_label(page_text, bid) or f"element {bid}"
    text = f"{name} {label}"
    if value is not None and value != bid:
        text += f" with '{value[:80]}'"
    return text


@functools.lru_cache(maxsize=4096)
def error_gist(error: str, limit: int = 240) -> str:
    """An action error cut to its gist: the first line plus the lines that say why (e.g. what intercepted a click)."""
    lines = [ln.strip() for ln in error.replace(" ⏎ ", "\n").splitlines() if ln.strip()]
    if not lines:
        return ""
    keep = [lines[0]]
    for line in lines[1:]:
        if _ERROR_KEEP.search(line) and not _ERROR_NOISE.match(line) and line not in keep:
            keep.append(line)
    for line in lines[1:]:  # the reason often sits in an otherwise noisy line: keep the first such clause
        if "intercepts pointer events" in line and line not in keep:
            keep.append(line[line.find("<") :] if "<" in line else line)
            break
    text = " | ".join(keep)
    return text if len(text) <= limit else text[: limit - 3] + "..."
