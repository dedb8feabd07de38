"""browser-use's DOM text read as a page's blocks.

browser-use writes a page as lines: an element `[12]<tag attrs />` (`*[12]` when it appeared since the agent's last
action, `|SHADOW(open)|` inside a shadow root), and text, each line indented under the element it belongs to. Most of
a page's words sit between elements rather than inside them, so what belongs together is read from the order of
siblings:
  - a form control (input, textarea, select, a role=switch or role=slider element) is one line with its label and
    value: the label from its attributes (aria-label, title) or from the text just before it (a setting's name, with
    its description when a longer line follows the name), under the short heading of its group when one stands above
    it ('LCP (Largest Contentful Paint) › textbox 'Target (ms)' = 2500');
  - controls side by side with nothing between them are one row, their columns named by the short words above them
    when there are as many ('switches 'Issue status changes': Desktop = on · Mobile = off · Email = on · ...');
  - a short label followed by an element that holds a short value is one line ('Default home view: Active issues';
    'LCP: +180ms' inside its card's line);
  - a table row is its cells, a link or button its words (or its title when it has none);
  - runs of sibling text lines are one block (a card's name, description and date).
The lines before '[Start of page]' (tabs, page stats) are left out: the state's header says them already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .blocks import BLOCK_CHARS, LABEL_CHARS, Block, empty_grid_line, has_words, text_kind, unquote

DOM_ELEMENT = re.compile(r"^(\t*)(?:\|SHADOW\(\w+\)\|)?(\*?)\[(\d+)\]<(\w+)([^>]*?)\s*/?>$")
_DOM_SCROLL = re.compile(r"^(\t*)\|scroll element\|<(\w+)([^>]*?)\s*/?>")
DOM_CONTROLS = frozenset({"a", "button", "label", "summary"})
TEXT_RUN, TEXT_RUN_CHARS = 8, 100
"""Sibling text lines of a DOM page joined into one block: at most this many, each at most this long."""
LABEL_MAX = 60
"""A text this short, not a sentence, can name the control after it."""
VALUE_MAX = 40
"""An element's single text this short can be the value of the label before it ('Active issues')."""
COLUMN_MAX = 25
"""Words above a row of controls this short can name its columns ('Desktop', 'Mobile')."""
GROUP_MAX = 40
"""A lone line this short before form controls is their group's heading ('Interface and theme')."""


@dataclass(slots=True)
class _Text:
    text: str
    line: int


@dataclass(slots=True)
class _Element:
    tag: str
    attrs: str
    new: bool
    line: int
    depth: int
    children: list[_Element | _Text] = field(default_factory=list)
    end: int = -1

    @property
    def field_kind(self) -> str | None:
        """'switch', 'checkbox', 'radio', 'slider', 'combobox' or 'textbox' for a form control, else None."""
        role, kind = _attr(self.attrs, "role"), _attr(self.attrs, "type")
        if role in ("switch", "slider", "checkbox", "radio", "textbox", "combobox"):
            return role
        if self.tag == "input":
            return {"checkbox": "checkbox", "radio": "radio", "range": "slider"}.get(kind or "", "textbox")
        return {"textarea": "textbox", "select": "combobox"}.get(self.tag)


def dom_blocks(lines: list[str]) -> list[Block]:
    """The page's blocks, in page order."""
    start = next((n for n, line in enumerate(lines) if line.strip() == "[Start of page]"), -1)
    root = _tree(lines, start + 1)
    walker = _Walker()
    walker.walk(root.children, "main")
    return walker.blocks


def _tree(lines: list[str], first: int) -> _Element:
    """The elements and texts from line `first` on, each under the element it is indented under."""
    root = _Element("root", "", False, first, -1)
    stack = [root]
    for n in range(first, len(lines)):
        line = lines[n]
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip("\t"))
        m = DOM_ELEMENT.match(line)
        scroll = None if m else _DOM_SCROLL.match(line)
        while len(stack) > 1 and stack[-1].depth >= depth:
            stack.pop()
        if m or scroll:
            element = (
                _Element(m.group(4), m.group(5), bool(m.group(2)), n, depth)
                if m
                else _Element(scroll.group(2), scroll.group(3), False, n, depth)  # type: ignore[union-attr]
            )
            stack[-1].children.append(element)
            stack.append(element)
        elif _says_something(line.strip()):
            stack[-1].children.append(_Text(line.strip(), n))
    _close(root)
    return root


def _close(element: _Element) -> int:
    """Set each element's last line (its own, or its last descendant's); return it."""
    end = element.line
    for child in element.children:
        end = max(end, _close(child) if isinstance(child, _Element) else child.line)
    element.end = end
    return end


def _says_something(text: str) -> bool:
    """A DOM text line that says something: not a bare tag or comment (`<svg /> <!-- ... -->`), not a marker."""
    return not text.startswith(("<", "|")) and has_words(text) and text not in ("[End of page]", "[Start of page]")


def _texts(element: _Element) -> list[_Text]:
    """Every text of the element's subtree, in page order."""
    out: list[_Text] = []
    for child in element.children:
        out += _texts(child) if isinstance(child, _Element) else [child]
    return out


def _has_elements(element: _Element) -> bool:
    return any(isinstance(child, _Element) for child in element.children)


class _Walker:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.group = ""
        """The short heading the form controls that follow stand under ('LCP (Largest Contentful Paint)')."""
        self.columns: list[str] = []
        """The short words that ended the last run of text: a row of controls below them may be their columns."""
        self.header = -1

    def add(self, kind: str, text: str, region: str, start: int, end: int, header: int = -1) -> None:
        text = " ".join(text.split())
        if text and has_words(text):
            self.blocks.append(Block(text_kind(kind, text, region), text[:BLOCK_CHARS], region, start, end, header))

    def walk(self, children: list[_Element | _Text], region: str) -> None:
        run: list[_Text] = []
        n = 0
        while n < len(children):
            child = children[n]
            n += 1
            if isinstance(child, _Text):
                run.append(child)
                continue
            where = "new" if child.new or region == "new" else "main"
            if child.field_kind:
                fields = [child]
                while n < len(children) and _is_control(children[n]):
                    fields.append(children[n])  # type: ignore[arg-type]  # _is_control checked it is an element
                    n += 1
                run = self.controls(fields, run, where)
            elif (value := _held_value(child)) is not None and _before_control(children, n):
                run.append(_Text(value, child.line))  # a control's own label in an element of its own ('Slack')
            elif run and value and _is_label(run[-1].text):
                run = self.labelled_value(run, value, child, where)
            elif child.tag == "tr":
                self.flush(run, region)
                run = []
                self.row(child, where)
            elif child.tag in DOM_CONTROLS and not _has_elements(child) and (_texts(child) or _named(child)):
                self.flush(run, region)
                run = []
                words = " ".join(t.text for t in _texts(child)) or _named(child)
                self.add("control", f"{child.tag} '{words}'", where, child.line, child.end)
            else:  # an element of its own ends a run of text, even a wordless one (a card's icon starts the card)
                self.flush(run, region)
                run = []
                if child.tag in ("button", "a") and not _texts(child) and _named(child):
                    self.add("control", f"{child.tag} '{_named(child)}'", where, child.line, child.end)
                else:
                    self.walk(child.children, where)
        self.flush(run, region)

    def flush(self, run: list[_Text], region: str) -> None:
        """A run of sibling texts as blocks of at most TEXT_RUN short lines (a long line is a block of its own)."""
        if not run:
            return
        trailing = [t.text for t in reversed(run)]
        short = trailing[: next((k for k, t in enumerate(trailing) if len(t) > COLUMN_MAX), len(trailing))]
        self.columns = list(reversed(short))
        last = run[-1].text
        # a lone short line before the controls is their group's heading; several short ones are column names
        if len(last) <= GROUP_MAX and _is_label(last) and not last.endswith(":") and len(short) <= 1:
            self.group = last
        chunk: list[_Text] = []
        for text in run:
            if len(text.text) > TEXT_RUN_CHARS or len(chunk) == TEXT_RUN:
                self.emit_run(chunk, region)
                chunk = []
            chunk.append(text)
            if len(text.text) > TEXT_RUN_CHARS:
                self.emit_run(chunk, region)
                chunk = []
        self.emit_run(chunk, region)

    def emit_run(self, chunk: list[_Text], region: str) -> None:
        if chunk:
            self.add("text", _join_run([t.text for t in chunk]), region, chunk[0].line, chunk[-1].line)

    def controls(self, fields: list[_Element], run: list[_Text], region: str) -> list[_Text]:
        """One control (or a row of them) with its label, taken from the end of the run of text before it."""
        label, description, rest = _split_label(run)
        before = self.blocks[-1] if self.blocks else None
        if len(rest) == 1 and before is not None and before.kind == "field" and _is_description(rest[0].text, ""):
            # the line between two controls that explains the one before ('Desktop' switch, then 'Receive ...')
            before.text = f"{before.text} ({rest[0].text[:100]})"[:BLOCK_CHARS]
            before.end = rest[0].line
            rest = []
        if rest:
            self.group = ""
            self.flush(rest, region)
        start, end = fields[0].line, fields[-1].end
        if label is not None:
            start = min(start, label.line)
        columns = self.columns[-len(fields) :] if len(fields) > 1 and len(self.columns) >= len(fields) else []
        group = f"{self.group} › " if self.group and label is not None and not columns else ""
        note = f" ({description.text[:100]})" if description else ""
        if len(fields) == 1:
            element = fields[0]
            name = (label.text if label else "") or _named(element) or _attr(element.attrs, "id") or ""
            value = _field_value(element)
            text = f"{element.field_kind} '{name}'" + (f" = {value}" if value else "")
            self.add("field", group + text + note, region, start, end)
            return []
        values = [
            f"{columns[k] if columns else _named(f) or f.field_kind} = {_field_value(f)}" for k, f in enumerate(fields)
        ]
        kind = fields[0].field_kind
        name = f" '{label.text}'" if label else ""
        self.add("field", f"{group}{kind}es{name}: " + " · ".join(values) + note, region, start, end)
        return []

    def labelled_value(self, run: list[_Text], value: str, holder: _Element, region: str) -> list[_Text]:
        """'LCP:' then '+180ms': one line inside the run (a card's line); 'Default home view' then 'Active issues':
        a line of its own."""
        label = run[-1]
        if label.text.endswith(":"):
            return [*run[:-1], _Text(f"{label.text} {value}", label.line)]
        self.flush(run[:-1], region)
        self.add("text", f"{label.text}: {value}", region, label.line, holder.end)
        return []

    def row(self, element: _Element, region: str) -> None:
        cells = [c for c in element.children if isinstance(c, _Element) and c.tag in ("td", "th")]
        if cells:
            texts = [" ".join(t.text for t in _texts(c)).replace("|", "/") for c in cells]
            header = any(c.tag == "th" for c in cells)
        else:  # a header row that holds its column names as plain texts
            texts, header = [t.text.replace("|", "/") for t in _texts(element)], True
        if not any(has_words(t) for t in texts):
            return
        if header:
            self.add("header", " | ".join(texts), "table", element.line, element.end)
            self.header = len(self.blocks) - 1
        elif empty_grid_line(texts):  # a grid's one cell saying why it is empty: what the page said
            self.add("message", empty_grid_line(texts), "table", element.line, element.end)
        else:
            self.add("row", " | ".join(texts), "table", element.line, element.end, header=self.header)


def _is_control(node: _Element | _Text) -> bool:
    """Whether a node is a form control element."""
    return isinstance(node, _Element) and bool(node.field_kind)


def _before_control(children: list[_Element | _Text], n: int) -> bool:
    """Whether the sibling at n is a form control."""
    return n < len(children) and _is_control(children[n])


def _split_label(run: list[_Text]) -> tuple[_Text | None, _Text | None, list[_Text]]:
    """(label, description, the texts before them) at the end of a run: a setting's name and the longer line that
    explains it ('Display full names', 'Show team members' full names instead of usernames'), or a name alone."""
    if len(run) >= 2 and _is_label(run[-2].text) and _is_description(run[-1].text, run[-2].text):
        return run[-2], run[-1], run[:-2]
    if run and _is_label(run[-1].text):
        return run[-1], None, run[:-1]
    return None, None, run


def _is_label(text: str) -> bool:
    return len(text) <= LABEL_MAX and not text.endswith((".", "!", "?"))


def _is_description(text: str, label: str) -> bool:
    return len(text) > len(label) and (len(text) > 30 or text.endswith("."))


def _held_value(element: _Element) -> str | None:
    """The short text a div or span holds as its one piece of text (a custom select's current choice)."""
    if element.tag not in ("div", "span") or element.field_kind:
        return None
    texts = _texts(element)
    if len(texts) != 1 or len(texts[0].text) > VALUE_MAX or texts[0] not in element.children:
        return None  # a text nested deeper (an avatar's initials in a menu) is not what the label before names
    return texts[0].text


def _named(element: _Element) -> str:
    """The words an element's attributes give it (aria-label, title, placeholder, alt)."""
    for name in ("aria-label", "title", "placeholder", "alt"):
        value = _attr(element.attrs, name)
        if value and has_words(value):
            return value
    return ""


def _join_run(texts: list[str]) -> str:
    """Sibling text lines as one line: ' · ' between them, a space after a short label ('Total LCP impact: +1590ms')."""
    out = texts[0]
    for before, text in zip(texts, texts[1:], strict=False):
        out += " " if before.endswith(":") and len(before) <= LABEL_CHARS and len(text) <= LABEL_CHARS else " · "
        out += text
    return out


def _attr(attrs: str, name: str) -> str | None:
    """An attribute's value; browser-use writes them unquoted, so a value runs to the next `key=`."""
    m = re.search(rf"(?:^|\s){re.escape(name)}=(.*?)(?=\s+[\w:-]+=|\s*$)", attrs)
    return unquote(m.group(1).strip()) if m else None


def _field_value(element: _Element) -> str:
    kind = element.field_kind
    if kind in ("switch", "checkbox", "radio"):
        checked = _attr(element.attrs, "aria-checked") or _attr(element.attrs, "checked")
        return "on" if checked == "true" else "off"
    value = _attr(element.attrs, "value") or _attr(element.attrs, "valuetext") or ""
    if not value:
        value = " ".join(t.text for t in _texts(element))
    return value
