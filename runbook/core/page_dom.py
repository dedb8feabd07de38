"""browser-use's DOM text (`[index]<tag attrs />` lines with text between them) read as a page's blocks."""

from __future__ import annotations

import re

from .blocks import BLOCK_CHARS, LABEL_CHARS, Block, has_words, text_kind, unquote

DOM_ELEMENT = re.compile(r"^(\t*)(?:\|SHADOW\(\w+\)\|)?(\*?)\[(\d+)\]<(\w+)([^>]*?)\s*/?>$")
_DOM_SCROLL = re.compile(r"^(\t*)\|scroll element\|")
DOM_CONTROLS = frozenset({"a", "button", "label", "select", "summary"})
DOM_FIELDS = frozenset({"input", "textarea", "select"})
TEXT_RUN, TEXT_RUN_CHARS = 8, 100
"""Sibling text lines of a DOM page joined into one block: at most this many, each at most this long."""


def dom_blocks(lines: list[str]) -> list[Block]:
    """One block per element with words (its text children joined), table rows as cells; the lines before
    '[Start of page]' (tabs, page stats) are the page's furniture."""
    blocks: list[Block] = []
    start = next((n for n, line in enumerate(lines) if line.strip() == "[Start of page]"), -1)
    n = start + 1  # what comes before (tabs, page stats) the state's header says already
    header = -1
    while n < len(lines):
        line = lines[n]
        m = DOM_ELEMENT.match(line)
        if m is None:
            run = _text_run(lines, n)
            texts = [t for t in (lines[k].strip() for k in range(n, run + 1)) if _dom_text(t)]
            if texts:
                region = "new" if _new_parent(lines, n) else "main"
                text = _join_run(texts)
                if blocks and _labels_value(blocks[-1], text, n):
                    before = blocks[-1]  # 'LCP:' then its value in an element of its own: one line, as it reads
                    text = f"{before.text} {text}"
                    blocks[-1] = Block(text_kind("text", text, region), text[:BLOCK_CHARS], region, before.start, run)
                else:
                    blocks.append(Block(text_kind("text", text, region), text[:BLOCK_CHARS], region, n, run))
            n = run + 1
            continue
        depth, new, tag, attrs = len(m.group(1)), bool(m.group(2)), m.group(4), m.group(5)
        end = _dom_end(lines, n, depth)
        region = "new" if new else "main"
        texts = [t.strip() for t in lines[n + 1 : end + 1] if t.strip() and not DOM_ELEMENT.match(t)]
        child_elements = any(DOM_ELEMENT.match(t) for t in lines[n + 1 : end + 1])
        if tag == "tr":
            cells = _dom_cells(lines, n, end)
            kind = "header" if "<th" in "\n".join(lines[n : end + 1]) else "row"
            if cells:
                blocks.append(Block(kind, " | ".join(cells)[:BLOCK_CHARS], "table", n, end, -1 if kind == "header"
                                    else header))  # fmt: skip
                if kind == "header":
                    header = len(blocks) - 1
            n = end + 1
            continue
        if "role=switch" in attrs or tag in DOM_FIELDS:
            value = _dom_value(tag, attrs)
            name = _attr(attrs, "id") or _attr(attrs, "name") or _attr(attrs, "placeholder") or ""
            label = lines[n - 1].strip() if n and _dom_text(lines[n - 1].strip()) else ""  # the line above names it
            text = f"{label}: " if label and len(label) <= 60 else ""
            blocks.append(Block("field", f"{text}{tag} {name} = {value}".strip(), region, n, n))
        elif tag in DOM_CONTROLS and texts and not child_elements:
            blocks.append(Block("control", f"{tag} '{' '.join(texts)}'"[:BLOCK_CHARS], region, n, end))
            n = end + 1
            continue
        n += 1
    return blocks


def _join_run(texts: list[str]) -> str:
    """Sibling text lines as one line: ' · ' between them, a space after a short label ('Total LCP impact: +1590ms')."""
    out = texts[0]
    for before, text in zip(texts, texts[1:], strict=False):
        out += " " if before.endswith(":") and len(before) <= LABEL_CHARS and len(text) <= LABEL_CHARS else " · "
        out += text
    return out


def _labels_value(label: Block, text: str, line: int) -> bool:
    """Whether a short value (`+180ms`, `Paused`) completes the label that ends the text just before it (`LCP:`)."""
    name = label.text.rsplit(" · ", 1)[-1]
    return (
        label.kind == "text"
        and name.endswith(":")
        and len(name) <= LABEL_CHARS
        and len(text) <= LABEL_CHARS
        and not text.endswith(":")
        and line - label.end <= 3
    )


def _dom_text(text: str) -> bool:
    """A DOM text line that says something: not a bare tag or comment (`<svg /> <!-- ... -->`), not a marker."""
    return bool(text) and not text.startswith("<") and not text.startswith("|") and has_words(text) and text not in (
        "[End of page]", "[Start of page]")  # fmt: skip


def _text_run(lines: list[str], n: int) -> int:
    """The last line of the run of text lines that starts at line n: siblings at one depth with no element
    between them (a card's name, description, scopes and date), at most TEXT_RUN lines of short text."""
    depth = len(lines[n]) - len(lines[n].lstrip("\t"))
    end = n
    if len(lines[n].strip()) > TEXT_RUN_CHARS:
        return n
    for k in range(n + 1, min(len(lines), n + TEXT_RUN)):
        line = lines[k]
        if not line.strip():
            break
        if DOM_ELEMENT.match(line) or len(line) - len(line.lstrip("\t")) != depth or len(line.strip()) > TEXT_RUN_CHARS:
            break
        end = k
    return end


def _dom_end(lines: list[str], n: int, depth: int) -> int:
    end = n
    for k in range(n + 1, len(lines)):
        line = lines[k]
        if line.strip() and len(line) - len(line.lstrip("\t")) <= depth:
            break
        end = k
    return end


def _new_parent(lines: list[str], n: int) -> bool:
    depth = len(lines[n]) - len(lines[n].lstrip("\t"))
    for k in range(n - 1, max(-1, n - 8), -1):
        m = DOM_ELEMENT.match(lines[k])
        if m and len(m.group(1)) < depth:
            return bool(m.group(2))
    return False


def _dom_cells(lines: list[str], n: int, end: int) -> list[str]:
    cells: list[str] = []
    current: list[str] | None = None
    for k in range(n + 1, end + 1):
        m = DOM_ELEMENT.match(lines[k])
        if m and m.group(4) in ("td", "th"):
            if current is not None:
                cells.append(" ".join(current))
            current = []
        elif not m and lines[k].strip() and current is not None:
            current.append(lines[k].strip())
    if current is not None:
        cells.append(" ".join(current))
    return [c.replace("|", "/") for c in cells] if any(has_words(c) for c in cells) else []


def _attr(attrs: str, name: str) -> str | None:
    """An attribute's value; browser-use writes them unquoted, so a value runs to the next `key=`."""
    m = re.search(rf"(?:^|\s){re.escape(name)}=(.*?)(?=\s+[\w:-]+=|\s*$)", attrs)
    return unquote(m.group(1).strip()) if m else None


def _dom_value(tag: str, attrs: str) -> str:
    if "role=switch" in attrs or _attr(attrs, "type") in ("checkbox", "radio"):
        return "on" if _attr(attrs, "checked") == "true" or _attr(attrs, "aria-checked") == "true" else "off"
    return _attr(attrs, "value") or ""
