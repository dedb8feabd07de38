"""The structure of a recorded page, read from its accessibility tree (BrowserGym's axtree text) or its DOM text
(browser-use's `[index]<tag />` lines, core/page_dom.py): the page as the blocks a reader follows, each one line
(the kinds are listed in core/blocks.py). Parsing is linear in the page's lines; nothing here reads a store (stdlib
only), so the host and the sandbox cut the same excerpts from the same blocks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .blocks import (
    BLOCK_CHARS,
    FURNITURE_REGIONS,
    LIST_ITEM_CHARS,
    Block,
    Page,
    empty_grid_line,
    has_words,
    text_kind,
    unquote,
)
from .page_dom import DOM_ELEMENT, dom_blocks
from .text import clean_line

_AX_FULL = re.compile(
    r"""^(\t*)(?:\[[^\]]*\] )?([A-Za-z][\w-]*)(?: (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"))?(.*)$"""
)
_AX_PROP = re.compile(r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,\s]+)""")
_GLYPHS = re.compile(r"\\u[0-9a-fA-F]{4}|[\ue000-\uf8ff]")
_ESCAPED_SPACE = re.compile(r"(?:\\xa0|\xa0)+")
_NEEDS_CLEANING = re.compile(r"\\|\xa0|[\ue000-\uf8ff]")
_WORDS = re.compile(r"[^\W_]+")
NEIGHBOUR_CHARS = 30
"""A text this short beside a control with no label names it ('per page')."""
GENERATED_NAME = re.compile(r"^[a-z]+[-_](?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,}$")
"""A control name the page generated, not a label: Magento's 'notice-TB7E7IL' (a word, then a code of capitals and
digits); a branch name such as 'byteblaze-main-patch-08233' is a value, and stays."""
_FLAGS = re.compile(r"(?:^|[,\s])(focused|required|selected|expanded|checked)(?=,|$)")

REGION_ROLES = {
    "navigation": "nav", "menubar": "nav", "banner": "banner", "contentinfo": "footer", "main": "main",
    "dialog": "dialog", "alertdialog": "dialog", "form": "form", "search": "form", "table": "table", "grid": "table",
    "treegrid": "table", "list": "list", "alert": "alert", "status": "alert", "complementary": "aside",
}  # fmt: skip
FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton", "checkbox", "radio", "switch", "slider",
                         "listbox", "menuitemcheckbox", "menuitemradio"})  # fmt: skip
CELL_ROLES = frozenset({"gridcell", "cell", "columnheader", "rowheader"})
CONTROL_ROLES = frozenset({"link", "button", "menuitem", "tab", "option", "treeitem"})
TEXT_ROLES = frozenset({"StaticText", "text", "ListMarker", "LineBreak"})
_LEAF_ROLES = TEXT_ROLES | {"image"}
"""What a link or button may hold and still be read as one control (built once: it was built per child)."""
CHOICE_ROLES = frozenset({"tab", "radio", "option"})
PANEL_ROLES = frozenset({"tabpanel", "group", "region", "generic", "Section"})
"""What a tab list or radio group holds besides its choices: walked as page content, not folded into the choices."""


def parse_page(text: str) -> Page:
    """The page's blocks: from an accessibility tree, a browser-use DOM text, or, for anything else, one block per
    line that says something."""
    return _parse_cached(text)


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str) -> Page:
    lines = text.split("\n")
    form = page_form(lines)
    blocks = _axtree_blocks(lines) if form == "axtree" else dom_blocks(lines) if form == "dom" else _text_blocks(lines)
    return Page(blocks, form)


def page_form(lines: list[str]) -> str:
    """'axtree' (a RootWebArea line opens the tree), 'dom' (browser-use's element lines) or 'text'."""
    head = [line for line in lines[:40] if line.strip()]
    if head and head[0].lstrip().startswith("RootWebArea"):
        return "axtree"
    if any(DOM_ELEMENT.match(line) for line in lines[:400]):
        return "dom"
    return "text"


# -- the accessibility tree ------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Node:
    role: str
    name: str
    props: dict[str, str]
    depth: int
    line: int
    children: list[_Node] | tuple[()] = ()
    """A leaf shares the empty tuple: most lines are leaves, and a list each was a third of the tree's allocations."""
    text: str | None = None
    """Its words, once worked out (see _node_text)."""

    def end(self) -> int:
        node = self
        while node.children:
            node = node.children[-1]
        return node.line


def _clean_name(name: str) -> str:
    if _NEEDS_CLEANING.search(name):
        name = _ESCAPED_SPACE.sub(" ", _GLYPHS.sub("", name))
    return name.strip()


def _ax_tree(lines: list[str]) -> list[_Node]:
    """The tree of the axtree's lines (one node a line; a line that is not `role 'name'` is a text node)."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for n, fields in enumerate(_read_lines(lines)):
        if not fields:
            continue
        role, name, props, depth = fields
        node = _Node(role, name, props, depth, n)
        while stack and stack[-1].depth >= depth:
            stack.pop()
        if stack:
            parent = stack[-1]
            if parent.children:
                parent.children.append(node)
            else:
                parent.children = [node]
        else:
            roots.append(node)
        stack.append(node)
    return roots


LINES_KEPT = 1 << 17
"""Distinct axtree lines whose reading is kept (about 30 MB, measured, with the readings kept without ids). A run's
pages repeat two lines in three (menus, grids), and the two real sets hold 534,000 distinct lines in 4.4 million; the
readings are dropped all at once when full."""
_Fields = tuple[str, str, dict[str, str], int]
_read: dict[str, _Fields | tuple[()]] = {}
"""line -> its reading (_ax_line), or () for a blank line. A plain dict looked up with `map`: an lru_cache's call and
its reordering cost three times the lookup itself, paid on every line of every page."""
_BID = re.compile(r"(\t*)\[[^\]]*\] (?=[A-Za-z])")
"""The element id before a line's role, as _AX_FULL skips it: what changes most between two views of the same line."""
_read_without_id: dict[str, _Fields] = {}
"""A line without its element id -> its reading. The two real sets hold 534,000 distinct lines but 134,000 without
their ids: a line read before under another id is not read again."""


def _read_lines(lines: list[str]) -> list[_Fields | tuple[()]]:
    """Each line's reading, () for a blank one; each distinct line is read once (the readings are shared, never
    changed)."""
    if len(_read) > LINES_KEPT:
        _read.clear()
        _read_without_id.clear()
    out = list(map(_read.get, lines))
    if None in out:
        for pos, fields in enumerate(out):
            if fields is None:
                line = lines[pos]
                fields = _read.get(line)
                if fields is None:
                    fields = _read[line] = _read_new(line)
                out[pos] = fields
    return out  # type: ignore[return-value]  # every None was filled in above


def _read_new(line: str) -> _Fields | tuple[()]:
    """The reading of a line not read before, () for a blank one. A line with an element id before its role reads
    as the line without it (the id is no part of the reading), so that reading is shared with the same line's other
    views; a line whose rest is no `role 'name'` is text, its id and all, read on its own."""
    bid = _BID.match(line)
    if bid is None:
        return _ax_line(line) or ()
    without_id = bid.group(1) + line[bid.end() :]
    fields = _read_without_id.get(without_id)
    if fields is None:
        match = _AX_FULL.match(without_id)
        if match is None:
            return _ax_line(line) or ()
        fields = _read_without_id[without_id] = _ax_fields(match)
    return fields


def _ax_line(line: str) -> _Fields | None:
    """(role, name, properties, depth) of one axtree line, None for a blank one."""
    match = _AX_FULL.match(line)
    if match is None:
        if not line.strip():
            return None
        return "StaticText", _clean_name(unquote(line.strip())), {}, len(line) - len(line.lstrip("\t"))
    return _ax_fields(match)


def _ax_fields(match: re.Match[str]) -> _Fields:
    """The reading of a line `_AX_FULL` matched (the same whether or not an element id was skipped)."""
    tabs, role, single, double, rest = match.groups()
    name = single if single is not None else double or ""
    if "\\" in name:
        name = name.replace("\\'", "'").replace('\\"', '"')
    props: dict[str, str] = {}
    if rest:
        if "=" in rest:
            props = {key: unquote(value) for key, value in _AX_PROP.findall(rest)}
        for flag in _FLAGS.findall(rest):
            props.setdefault(flag, "True")
    return role, _clean_name(name), props, len(tabs)


def _holds_live_region(node: _Node) -> bool:
    """Whether a status or alert region sits inside `node` (the values a page announces when they change)."""
    return any(child.role in ("status", "alert") or _holds_live_region(child) for child in node.children)


def _node_text(node: _Node) -> str:
    """The node's words: its name, else its descendants' text, joined (worked out once per node)."""
    if node.text is None:
        if node.name and has_words(node.name):
            node.text = node.name
        else:
            parts: list[str] = []
            for child in node.children:
                text = _node_text(child)
                if text and (not parts or parts[-1] != text):
                    parts.append(text)
            node.text = " ".join(parts)
    return node.text


class _AxRenderer:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.blocks: list[Block] = []
        self.pending: list[tuple[str, int]] = []
        self.pending_region = "main"
        self.table_header = -1

    def add(self, kind: str, text: str, region: str, start: int, end: int, header: int = -1) -> None:
        self.flush()
        text = " ".join(text.split())
        if text and has_words(text):
            self.blocks.append(Block(text_kind(kind, text, region), text[:BLOCK_CHARS], region, start, end, header))

    def text(self, text: str, line: int, region: str) -> None:
        if self.pending and self.pending_region != region:
            self.flush()
        if text and (not self.pending or self.pending[-1][0] != text):
            self.pending.append((text, line))
            self.pending_region = region

    def flush(self) -> None:
        if self.pending:
            pending, self.pending = self.pending, []
            self.add("text", " ".join(t for t, _ in pending), self.pending_region, pending[0][1], pending[-1][1])

    def walk(self, node: _Node, region: str) -> None:
        role = node.role
        if role in REGION_ROLES and not (region in FURNITURE_REGIONS and REGION_ROLES[role] in ("list", "table")):
            region = REGION_ROLES[role]
        if role in TEXT_ROLES:
            self.text(node.name, node.line, region)
            return
        if role == "RootWebArea":
            _name_by_neighbours(node.children)
            for child in node.children:
                self.walk(child, "main")
            self.flush()
            return
        if role == "heading":
            self.add("heading", f"## {_node_text(node)}", region, node.line, node.end())
        elif role == "row":
            self.row(node, region)
        elif role in FIELD_ROLES:
            self.field(node, region)
        elif role in ("tablist", "radiogroup") and node.children:
            self.choices(node, region)
        elif role == "list" and self.short_list(node):
            items = [_node_text(child) for child in node.children if _node_text(child)]
            self.add("list", f"({len(items)}) " + " · ".join(items), region, node.line, node.end())
        elif role in CONTROL_ROLES and not any(c.role not in _LEAF_ROLES for c in node.children):
            label = _node_text(node)
            selected = node.props.get("selected") == "True" or node.props.get("checked") in ("True", "true")
            kind = "choice" if selected and role in ("tab", "option", "treeitem") else "control"
            self.add(kind, f"{role} '{label}'" + (" (selected)" if kind == "choice" else ""), region, node.line,
                     node.end())  # fmt: skip
        elif role == "time":  # '4 hours ago' on the page, the moment itself in its name: both say when
            shown = " ".join(_leaf_texts(node))
            when = f"{shown} ({node.name})" if shown and node.name and node.name != shown else shown or node.name
            self.text(when, node.line, region)
        elif role == "image":
            if has_words(node.name):
                self.add("image", f"image '{node.name}'", region, node.line, node.line)
        elif not node.children:
            if has_words(node.name):  # a named leaf of another role (a cell outside a row, a term): its words
                self.text(node.name, node.line, region)
        else:
            if role in ("paragraph", "listitem", "article", "Section", "group") and node.children:
                self.flush()  # a paragraph's text is its own block
            _name_by_neighbours(node.children)
            for child in node.children:
                self.walk(child, region)
            if role in ("paragraph", "listitem", "article", "caption", "DescriptionListTerm"):
                self.flush()

    def short_list(self, node: _Node) -> bool:
        items = [child for child in node.children if child.role == "listitem"]
        return len(items) >= 2 and all(
            len(_node_text(item)) <= LIST_ITEM_CHARS and not any(c.role == "list" for c in item.children)
            for item in items
        )

    def row(self, node: _Node, region: str) -> None:
        cells = [child for child in node.children if child.role in CELL_ROLES]
        if not cells:
            for child in node.children:
                self.walk(child, region)
            return
        end = node.end()
        # a row's block depends on its own lines alone (nothing names a node inside it by its neighbours), and a
        # run's pages show the same rows again and again: each distinct row is read once
        key = "\n".join(self.lines[node.line : end + 1])
        made = _rows_read.get(key, _UNREAD)
        if made is _UNREAD:
            if len(_rows_read) > ROWS_KEPT:
                _rows_read.clear()
            made = _rows_read[key] = _row_block(node, cells)
        if made is None:
            return
        kind, text = made
        self.add(kind, text, "table", node.line, end, header=self.table_header if kind == "row" else -1)
        if kind == "header":
            self.table_header = len(self.blocks) - 1

    def field(self, node: _Node, region: str) -> None:
        value = node.props.get("value") or node.props.get("valuetext") or ""
        if node.role in ("checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"):
            checked = node.props.get("checked", "false")
            value = "checked" if checked in ("True", "true", "mixed") else "not checked"
        elif node.role in ("combobox", "listbox"):
            options = [c for c in _descendants(node) if c.role == "option"]
            chosen = [o.name for o in options if o.props.get("selected") == "True"]
            value = value or ", ".join(chosen) or (node.children and _node_text(node) or "")
            if options:
                shown = ", ".join(o.name for o in options[:12]) + (", …" if len(options) > 12 else "")
                value += f" (options: {shown})"
        label = node.name or node.props.get("placeholder", "")
        self.add("field", f"{node.role} '{label}' = {value}" if value else f"{node.role} '{label}'", region,
                 node.line, node.end())  # fmt: skip

    def choices(self, node: _Node, region: str) -> None:
        """A tab list or radio group as one line of its choices, the selected one marked; what the group also holds
        (a tab's panel, with the page's details and tables) is walked as the page it is."""
        parts, panels = [], []
        for child in node.children:
            if child.role in CHOICE_ROLES:
                on = child.props.get("selected") == "True" or child.props.get("checked") in ("True", "true")
                parts.append(f"{_node_text(child)}{' (selected)' if on else ''}")
            else:
                inner = [c for c in _descendants(child) if c.role in CHOICE_ROLES]
                if inner and child.role not in PANEL_ROLES:  # choices wrapped in a group of their own
                    parts += [
                        _node_text(c) + (" (selected)" if c.props.get("selected") == "True" else "") for c in inner
                    ]
                else:
                    panels.append(child)
        if parts:
            kind = "choice" if any("(selected)" in p for p in parts) else "control"
            self.add(kind, f"{node.role}: " + " · ".join(parts), region, node.line, node.line)
        for panel in panels:
            self.walk(panel, region)


ROWS_KEPT = 1 << 14
"""Distinct table rows whose block is kept; dropped all at once when full."""
_UNREAD = ("", "")
_rows_read: dict[str, tuple[str, str] | None] = {}
"""a row's lines -> (kind, text) of the block it makes, None when its cells say nothing."""


def _row_block(node: _Node, cells: list[_Node]) -> tuple[str, str] | None:
    """A table row's block: its column names (header), a grid's empty-state line or a status region's values
    (message), else its cells (row); None when no cell has words."""
    texts = [_cell_text(cell) for cell in cells]
    if not any(has_words(t) for t in texts):
        return None
    if any(cell.role == "columnheader" for cell in cells):
        return "header", " | ".join(texts)
    if said := empty_grid_line(texts):  # a grid's one cell saying why it is empty: what the page said
        return "message", said
    if _holds_live_region(node):
        # a row whose values the page announces (a status region: a route's 'Distance: 2.4km . Time: 0:04'):
        # what the page said back, shown with every cited view as a message is
        return "message", " | ".join(t for t in texts if t.strip())
    return "row", " | ".join(texts)


def _descendants(node: _Node) -> Iterator[_Node]:
    for child in node.children:
        yield child
        yield from _descendants(child)


def _leaf_texts(node: _Node) -> list[str]:
    """The words of a node's leaves, in page order, a repeat of the one before left out."""
    out: list[str] = []
    _add_leaf_texts(node, out)
    return out


def _add_leaf_texts(node: _Node, out: list[str]) -> None:
    # recursion into a list, not nested generators: every table cell asks, and each level of `yield from` cost a frame
    for child in node.children:
        if child.children:
            _add_leaf_texts(child, out)
        elif child.name and has_words(child.name) and (not out or out[-1] != child.name):
            out.append(child.name)


def _cell_text(cell: _Node) -> str:
    leaves = " ".join(_leaf_texts(cell))
    if (
        cell.name
        and leaves
        and len(leaves) > len(cell.name)
        and (_words_of(cell.name) <= _words_of(leaves) or cell.name.replace(" ", "") == leaves.replace(" ", ""))
    ):
        # the name is the cell's text with its live values left out ('Distance: . Time: .') or its parts run together
        # ('View OrderReorder'): the leaves say it all
        return leaves.replace("|", "/")
    text = cell.name if cell.name and has_words(cell.name) else ""
    inner = [_node_text(c) for c in cell.children if c.role not in TEXT_ROLES]
    inner = [t for t in inner if t and t not in text]
    if not text:
        text = _node_text(cell)
    elif inner and len(inner) > 1:
        text = ", ".join(inner)
    return text.replace("|", "/")


def _name_by_neighbours(children: Sequence[_Node]) -> None:
    """A form control with no label of its own takes the short words beside it: 'Show' [combobox ''] 'per page' is
    the control "combobox 'Show … per page'"; a label element just before it is its label alone ('[global] Stock
    Status' [combobox 'notice-TB7E7IL']: a name the page generated is no label)."""
    for n, child in enumerate(children):
        if child.role not in FIELD_ROLES or child.props.get("placeholder"):
            continue
        if child.name and not GENERATED_NAME.match(child.name):
            continue
        label = _node_text(children[n - 1]) if n and children[n - 1].role == "LabelText" else ""
        if 0 < len(label) <= NEIGHBOUR_CHARS:
            child.name = label
            continue
        if child.name:
            continue  # a generated name with no label beside it stays: it is still the control's only name
        near = [children[k] for k in (n - 1, n + 1) if 0 <= k < len(children)]
        words = [_node_text(c) for c in near if c.role not in FIELD_ROLES and 0 < len(_node_text(c)) <= NEIGHBOUR_CHARS]
        if words:
            child.name = " … ".join(words)


def _words_of(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def _axtree_blocks(lines: list[str]) -> list[Block]:
    renderer = _AxRenderer(lines)
    for root in _ax_tree(lines):
        renderer.walk(root, "main")
    renderer.flush()
    return renderer.blocks


def _text_blocks(lines: list[str]) -> list[Block]:
    blocks = []
    for n, line in enumerate(lines):
        text = clean_line(line).strip()
        if text and has_words(text):
            blocks.append(Block(text_kind("text", text, "main"), text[:BLOCK_CHARS], "main", n, n))
    return blocks
