"""A page's structure as runbook keeps it: its blocks, each one line a reader follows, and the stored record of them
(core/page.py parses an accessibility tree or plain text into blocks, core/page_dom.py a browser-use DOM text).

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
since the agent's last action) and the page lines it comes from.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

_WORD = re.compile(r"[^\W_]")

FURNITURE_REGIONS = frozenset({"nav", "banner", "footer"})
"""Regions a site repeats on most of its pages: shown last when an excerpt must shrink."""
LIST_ITEM_CHARS = 60
"""A list whose items are all this short (a link or a few words each) is shown as one block."""
BLOCK_CHARS = 600
"""A block's text is cut here: a long paragraph is not one answer line."""
LABEL_CHARS = 30
"""A label and its value, each at most this long, read as one line ('LCP: +180ms')."""
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
    r"invalid|failed to|could not|couldn't|cannot be|can't be|can't find|cannot find|unable to|already exists|"
    r"not found|no (?:records|results|items|matches|products) (?:were )?found|an error|error:|something went wrong|"
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


def has_words(text: str) -> bool:
    """Whether the text has a letter or digit (an icon glyph or punctuation alone says nothing)."""
    return bool(_WORD.search(text))


def unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value.replace("\\'", "'").replace('\\"', '"') if "\\" in value else value


def empty_grid_line(cells: list[str]) -> str:
    """The text of a table row whose one non-empty cell says why the grid is empty ('We couldn't find any
    records.'), else ''."""
    filled = [t.strip() for t in cells if t.strip()]
    return filled[0] if len(filled) == 1 and text_kind("text", filled[0], "table") == "message" else ""


def text_kind(kind: str, text: str, region: str) -> str:
    if kind != "text":
        return kind
    if region == "alert":
        return "message"
    if len(text) > 200:
        return "text"
    return _short_text_kind(text)


TEXT_KINDS_KEPT = 1 << 16
"""Short texts whose kind is kept. The pages of a site repeat their menus' and labels' texts on every view, and the
message pattern is tried at every word of a text: each distinct text is tried once."""


@functools.lru_cache(maxsize=TEXT_KINDS_KEPT)
def _short_text_kind(text: str) -> str:
    if len(text) <= 60 and COUNT.match(text.strip()):
        return "count"
    if MESSAGE.search(text):
        return "message"
    return "text"


def page_record(header: dict[str, str], page: Page, blocks: str | None = None) -> bytes:
    """One state's page as the pools store it (one JSON line): the header fields a reader needs and the blocks.
    `blocks`: the page's `blocks_json`, when worked out already (a page shown again is encoded once); the line is
    what json.dumps writes of {"h": header, "f": form, "b": blocks}."""
    blocks = blocks_json(page) if blocks is None else blocks
    head, form = json.dumps(header, ensure_ascii=False), json.dumps(page.form, ensure_ascii=False)
    return f'{{"h": {head}, "f": {form}, "b": {blocks}}}'.encode()


def blocks_json(page: Page) -> str:
    """A page's blocks as its record holds them (JSON)."""
    return json.dumps([[b.kind, b.region, b.start, b.end, b.header, b.text] for b in page.blocks], ensure_ascii=False)


def read_page_record(raw: bytes | str) -> tuple[dict[str, str], Page]:
    """(header, page) of a stored page record."""
    obj = json.loads(raw)
    blocks = [Block(kind, text, region, start, end, header) for kind, region, start, end, header, text in obj["b"]]
    return obj.get("h") or {}, Page(blocks, obj.get("f") or "text")
