"""The structure of a recorded page, read from its accessibility tree (BrowserGym's axtree text) or its DOM text
(browser-use's `[index]<tag />` lines): the page as the blocks a reader follows, each one line.

    heading   '## Orders'
    text      the text of a paragraph or of runs of StaticText, joined ('308 records found')
    count     a text that counts ('308 records found', 'Items 1 to 12 of 44 total', 'Page 2 of 5')
    message   an alert or status, or a text that reports an outcome or an error
    field     a form control with its value: "textbox 'per page' = 200", "checkbox 'Enable' = checked"
    choice    a select's chosen option, or a tab or option that is selected
    header    a table's column headers: 'Order # | Date | Order Total | Status'
    row       one table row's cells: '000000170 | 5/17/23 | $365.42 | Canceled'
    list      a list of short items: '(6) allentown · arlingtonva · Art · ...'
    control   a link, button or menu item with its words; image: a picture with a name
    line      a page line kept as it is (what is not recognised)

Each block knows its region (nav, banner, main, dialog, form, table, list, alert, footer, aside, new: what appeared
since the agent's last action) and the page lines it comes from. Parsing is linear in the page's lines; nothing
here reads a store (stdlib only), so the host and the sandbox cut the same excerpts from the same blocks.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from .text import clean_line

_AX_FULL = re.compile(
    r"""^(\t*)(?:\[[^\]]*\] )?([A-Za-z][\w-]*)(?: (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"))?(.*)$"""
)
_AX_PROP = re.compile(r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,\s]+)""")
_DOM_ELEMENT = re.compile(r"^(\t*)(?:\|SHADOW\(\w+\)\|)?(\*?)\[(\d+)\]<(\w+)([^>]*?)\s*/?>$")
_DOM_SCROLL = re.compile(r"^(\t*)\|scroll element\|")
_GLYPHS = re.compile(r"\\u[0-9a-fA-F]{4}|[\ue000-\uf8ff]")
_ESCAPED_SPACE = re.compile(r"(?:\\xa0|\xa0)+")
_NEEDS_CLEANING = re.compile(r"\\|\xa0|[\ue000-\uf8ff]")
_FLAGS = re.compile(r"(?:^|[,\s])(focused|required|selected|expanded|checked)(?=,|$)")
_WORD = re.compile(r"[^\W_]")

REGION_ROLES = {
    "navigation": "nav", "menubar": "nav", "banner": "banner", "contentinfo": "footer", "main": "main",
    "dialog": "dialog", "alertdialog": "dialog", "form": "form", "search": "form", "table": "table", "grid": "table",
    "treegrid": "table", "list": "list", "alert": "alert", "status": "alert", "complementary": "aside",
}  # fmt: skip
FURNITURE_REGIONS = frozenset({"nav", "banner", "footer"})
"""Regions a site repeats on most of its pages: shown last when an excerpt must shrink."""
FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton", "checkbox", "radio", "switch", "slider",
                         "listbox", "menuitemcheckbox", "menuitemradio"})  # fmt: skip
CELL_ROLES = frozenset({"gridcell", "cell", "columnheader", "rowheader"})
CONTROL_ROLES = frozenset({"link", "button", "menuitem", "tab", "option", "treeitem"})
TEXT_ROLES = frozenset({"StaticText", "text", "ListMarker", "LineBreak"})
DOM_CONTROLS = frozenset({"a", "button", "label", "select", "summary"})
DOM_FIELDS = frozenset({"input", "textarea", "select"})
TEXT_RUN, TEXT_RUN_CHARS = 8, 100
"""Sibling text lines of a DOM page joined into one block: at most this many, each at most this long."""
LIST_ITEM_CHARS = 60
"""A list whose items are all this short (a link or a few words each) is shown as one block."""
BLOCK_CHARS = 600
LABEL_CHARS = 30
"""A label and its value, each at most this long, read as one line ('LCP: +180ms')."""
"""A block's text is cut here: a long paragraph is not one answer line."""
COUNT = re.compile(
    r"(?i)^(?:\d[\d,]*\s+(?:records?|items?|results?|products?|orders?|customers?|reviews?|comments?|matches|entries|"
    r"rows|issues|members|projects|posts|subscribers?)(?:\s+(?:found|total|in total))?\.?"
    r"|(?:items?|results?|showing|displaying)\s+\d[\d,]*\s*(?:-|to)\s*\d[\d,]*\s+of\s+\d[\d,]*(?:\s+total)?"
    r"|(?:page|step)\s+\d+\s+of\s+\d+|total\s*:?\s*\d[\d,.]*)$"
)
"""A line that is a count and nothing else: '308 records found', 'Items 1 to 10 of 37 total', 'Page 2 of 5'."""
MESSAGE = re.compile(
    r"(?i)\b(?:you saved|successfully|(?:has|have|was|were) been (?:saved|created|updated|deleted|added|removed|sent|"
    r"submitted|changed|cancell?ed|placed|moved|shipped|posted|published|applied|approved|rejected|assigned|closed|"
    r"merged|completed|archived|restored|disabled|enabled|revoked|disconnected|connected|activated|installed|"
    r"uninstalled|subscribed|unsubscribed|paused|resumed|refunded|invoiced)|"
    r"was (?:saved|added|updated|deleted|created|removed|sent|shipped|posted|cancell?ed)|(?:is|are) required|"
    r"invalid|failed to|could not|couldn't|cannot be|can't be|unable to|already exists|not found|"
    r"no (?:records|results|items|matches|products) (?:were )?found|an error|error:|something went wrong|"
    r"access denied|please (?:enter|select|try|correct|wait|fix|make sure))(?!\w)"
)


@dataclass(slots=True)
class Block:
    """One line of a page as a reader follows it."""

    kind: str
    text: str
    region: str
    start: int
    """The first page line (0-based, in the page text) the block comes from."""
    end: int
    """The last page line, inclusive."""
    header: int = -1
    """A table row: the index of its table's header block (-1: none)."""

    @property
    def furniture(self) -> bool:
        return self.region in FURNITURE_REGIONS


@dataclass(slots=True)
class Page:
    """A page's blocks in page order, and the form it was read from (axtree, dom or text)."""

    blocks: list[Block]
    form: str

    def lines(self) -> list[str]:
        return [block.text for block in self.blocks]

    def shown(self) -> str:
        """The whole page as a reader is shown it: every block, one a line."""
        return "\n".join(shown_line(b) for b in self.blocks)


def shown_line(block: Block) -> str:
    """A block as a reader sees it, one line: a heading as '## ...', a table's header after 'table:', its rows
    indented under it, anything else as an item of a list ('- ...'), so that no line starts flush against the line
    break before it (a JSON rendering of the text turns that break into a letter stuck to the line's first word)."""
    if block.kind == "heading":
        return block.text
    return {"header": "table: ", "row": "  "}.get(block.kind, "- ") + block.text


def parse_page(text: str) -> Page:
    """The page's blocks: from an accessibility tree, a browser-use DOM text, or, for anything else, one block per
    line that says something."""
    return _parse_cached(text)


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str) -> Page:
    lines = text.split("\n")
    form = page_form(lines)
    blocks = _axtree_blocks(lines) if form == "axtree" else _dom_blocks(lines) if form == "dom" else _text_blocks(lines)
    return Page(blocks, form)


def page_form(lines: list[str]) -> str:
    """'axtree' (a RootWebArea line opens the tree), 'dom' (browser-use's element lines) or 'text'."""
    head = [line for line in lines[:40] if line.strip()]
    if head and head[0].lstrip().startswith("RootWebArea"):
        return "axtree"
    if any(_DOM_ELEMENT.match(line) for line in lines[:400]):
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
    children: list[_Node]
    text: str | None = None
    """Its words, once worked out (see _node_text)."""

    def end(self) -> int:
        node = self
        while node.children:
            node = node.children[-1]
        return node.line


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value.replace("\\'", "'").replace('\\"', '"') if "\\" in value else value


def _clean_name(name: str) -> str:
    if _NEEDS_CLEANING.search(name):
        name = _ESCAPED_SPACE.sub(" ", _GLYPHS.sub("", name))
    return name.strip()


def _ax_tree(lines: list[str]) -> list[_Node]:
    """The tree of the axtree's lines (one node a line; a line that is not `role 'name'` is a text node)."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    match = _AX_FULL.match
    for n, line in enumerate(lines):
        m = match(line)
        if m is None:
            if not line.strip():
                continue
            depth = len(line) - len(line.lstrip("\t"))
            node = _Node("StaticText", _clean_name(_unquote(line.strip())), {}, depth, n, [])
        else:
            tabs, role, single, double, rest = m.groups()
            name = single if single is not None else double or ""
            if "\\" in name:
                name = name.replace("\\'", "'").replace('\\"', '"')
            props: dict[str, str] = {}
            if rest:
                if "=" in rest:
                    props = {key: _unquote(value) for key, value in _AX_PROP.findall(rest)}
                for flag in _FLAGS.findall(rest):
                    props.setdefault(flag, "True")
            node = _Node(role, _clean_name(name), props, len(tabs), n, [])
        depth = node.depth
        while stack and stack[-1].depth >= depth:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _words(text: str) -> bool:
    return bool(_WORD.search(text))


def _node_text(node: _Node) -> str:
    """The node's words: its name, else its descendants' text, joined (worked out once per node)."""
    if node.text is None:
        if node.name and _words(node.name):
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
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.pending: list[tuple[str, int]] = []
        self.pending_region = "main"
        self.table_header = -1

    def add(self, kind: str, text: str, region: str, start: int, end: int, header: int = -1) -> None:
        self.flush()
        text = " ".join(text.split())
        if text and _words(text):
            self.blocks.append(Block(_text_kind(kind, text, region), text[:BLOCK_CHARS], region, start, end, header))

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
        elif role in CONTROL_ROLES and not any(c.role not in TEXT_ROLES | {"image"} for c in node.children):
            label = _node_text(node)
            selected = node.props.get("selected") == "True" or node.props.get("checked") in ("True", "true")
            kind = "choice" if selected and role in ("tab", "option", "treeitem") else "control"
            self.add(kind, f"{role} '{label}'" + (" (selected)" if kind == "choice" else ""), region, node.line,
                     node.end())  # fmt: skip
        elif role == "image":
            if _words(node.name):
                self.add("image", f"image '{node.name}'", region, node.line, node.line)
        elif not node.children:
            if _words(node.name):  # a named leaf of another role (a cell outside a row, a term): its words
                self.text(node.name, node.line, region)
        else:
            if role in ("paragraph", "listitem", "article", "Section", "group") and node.children:
                self.flush()  # a paragraph's text is its own block
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
        texts = [_cell_text(cell) for cell in cells]
        if not any(_words(t) for t in texts):
            return
        if any(cell.role == "columnheader" for cell in cells):
            self.add("header", " | ".join(texts), "table", node.line, node.end())
            self.table_header = len(self.blocks) - 1
        else:
            self.add("row", " | ".join(texts), "table", node.line, node.end(), header=self.table_header)

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
        parts = []
        for child in _descendants(node):
            if child.role in ("tab", "radio", "option"):
                on = child.props.get("selected") == "True" or child.props.get("checked") in ("True", "true")
                parts.append(f"{_node_text(child)}{' (selected)' if on else ''}")
        kind = "choice" if any("(selected)" in p for p in parts) else "control"
        self.add(kind, f"{node.role}: " + " · ".join(parts), region, node.line, node.end())


def _descendants(node: _Node):
    for child in node.children:
        yield child
        yield from _descendants(child)


def _cell_text(cell: _Node) -> str:
    text = cell.name if cell.name and _words(cell.name) else ""
    inner = [_node_text(c) for c in cell.children if c.role not in TEXT_ROLES]
    inner = [t for t in inner if t and t not in text]
    if not text:
        text = _node_text(cell)
    elif inner and len(inner) > 1:
        text = ", ".join(inner)
    return text.replace("|", "/")


def _text_kind(kind: str, text: str, region: str) -> str:
    if kind != "text":
        return kind
    if region == "alert":
        return "message"
    if len(text) <= 60 and COUNT.match(text.strip()):
        return "count"
    if len(text) <= 200 and MESSAGE.search(text):
        return "message"
    return "text"


def _axtree_blocks(lines: list[str]) -> list[Block]:
    renderer = _AxRenderer()
    for root in _ax_tree(lines):
        renderer.walk(root, "main")
    renderer.flush()
    return renderer.blocks


# -- browser-use's DOM text ------------------------------------------------------------------------------------
def _dom_blocks(lines: list[str]) -> list[Block]:
    """One block per element with words (its text children joined), table rows as cells; the lines before
    '[Start of page]' (tabs, page stats) are the page's furniture."""
    blocks: list[Block] = []
    start = next((n for n, line in enumerate(lines) if line.strip() == "[Start of page]"), -1)
    n = start + 1  # what comes before (tabs, page stats) the state's header says already
    header = -1
    while n < len(lines):
        line = lines[n]
        m = _DOM_ELEMENT.match(line)
        if m is None:
            run = _text_run(lines, n)
            texts = [t for t in (lines[k].strip() for k in range(n, run + 1)) if _dom_text(t)]
            if texts:
                region = "new" if _new_parent(lines, n) else "main"
                text = _join_run(texts)
                if blocks and _labels_value(blocks[-1], text, n):
                    before = blocks[-1]  # 'LCP:' then its value in an element of its own: one line, as it reads
                    text = f"{before.text} {text}"
                    blocks[-1] = Block(_text_kind("text", text, region), text[:BLOCK_CHARS], region, before.start, run)
                else:
                    blocks.append(Block(_text_kind("text", text, region), text[:BLOCK_CHARS], region, n, run))
            n = run + 1
            continue
        depth, new, tag, attrs = len(m.group(1)), bool(m.group(2)), m.group(4), m.group(5)
        end = _dom_end(lines, n, depth)
        region = "new" if new else "main"
        texts = [t.strip() for t in lines[n + 1 : end + 1] if t.strip() and not _DOM_ELEMENT.match(t)]
        child_elements = any(_DOM_ELEMENT.match(t) for t in lines[n + 1 : end + 1])
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
    return bool(text) and not text.startswith("<") and not text.startswith("|") and _words(text) and text not in (
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
        if (
            _DOM_ELEMENT.match(line)
            or len(line) - len(line.lstrip("\t")) != depth
            or len(line.strip()) > TEXT_RUN_CHARS
        ):
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
        m = _DOM_ELEMENT.match(lines[k])
        if m and len(m.group(1)) < depth:
            return bool(m.group(2))
    return False


def _dom_cells(lines: list[str], n: int, end: int) -> list[str]:
    cells: list[str] = []
    current: list[str] | None = None
    for k in range(n + 1, end + 1):
        m = _DOM_ELEMENT.match(lines[k])
        if m and m.group(4) in ("td", "th"):
            if current is not None:
                cells.append(" ".join(current))
            current = []
        elif not m and lines[k].strip() and current is not None:
            current.append(lines[k].strip())
    if current is not None:
        cells.append(" ".join(current))
    return [c.replace("|", "/") for c in cells] if any(_words(c) for c in cells) else []


def _attr(attrs: str, name: str) -> str | None:
    """An attribute's value; browser-use writes them unquoted, so a value runs to the next `key=`."""
    m = re.search(rf"(?:^|\s){re.escape(name)}=(.*?)(?=\s+[\w:-]+=|\s*$)", attrs)
    return _unquote(m.group(1).strip()) if m else None


def _dom_value(tag: str, attrs: str) -> str:
    if "role=switch" in attrs or _attr(attrs, "type") in ("checkbox", "radio"):
        return "on" if _attr(attrs, "checked") == "true" or _attr(attrs, "aria-checked") == "true" else "off"
    return _attr(attrs, "value") or ""


# -- anything else ---------------------------------------------------------------------------------------------
def _text_blocks(lines: list[str]) -> list[Block]:
    blocks = []
    for n, line in enumerate(lines):
        text = clean_line(line).strip()
        if text and _words(text):
            blocks.append(Block(_text_kind("text", text, "main"), text[:BLOCK_CHARS], "main", n, n))
    return blocks


# -- the stored form -------------------------------------------------------------------------------------------
def page_record(header: dict[str, str], page: Page) -> bytes:
    """One state's page as the pools store it (one JSON line): the header fields a reader needs and the blocks."""
    blocks = [[b.kind, b.region, b.start, b.end, b.header, b.text] for b in page.blocks]
    return json.dumps({"h": header, "f": page.form, "b": blocks}, ensure_ascii=False).encode("utf-8")


def read_page_record(raw: bytes | str) -> tuple[dict[str, str], Page]:
    """(header, page) of a stored page record."""
    obj = json.loads(raw)
    blocks = [Block(kind, text, region, start, end, header) for kind, region, start, end, header, text in obj["b"]]
    return obj.get("h") or {}, Page(blocks, obj.get("f") or "text")
