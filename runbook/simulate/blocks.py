"""The page model shared by the accessibility-tree and screenshot renderers.

A page is a list of blocks; axtree.py turns it into BrowserGym-style text and screenshots.py into a picture, so
the two views of one state can never disagree. `facts` are the ground-truth values the page SHOWS (persisted
values only, never a form draft): questions are built from them, which is what keeps every gold answer
observable in some state.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Heading:
    text: str


@dataclass
class Notice:
    text: str
    kind: str = "success"  # success | error | info


@dataclass
class Text:
    text: str


@dataclass
class Stats:
    pairs: list[tuple[str, str]]


@dataclass
class Button:
    key: str
    label: str
    disabled: bool = False


@dataclass
class Link:
    key: str
    label: str


@dataclass
class Field:
    key: str
    label: str
    value: str
    kind: str = "text"  # text | select | checkbox | date
    options: tuple[str, ...] = ()
    required: bool = False


@dataclass
class Section:
    title: str


@dataclass
class Search:
    value: str = ""
    placeholder: str = "Search by keyword"


@dataclass
class Filters:
    items: list[str]


@dataclass
class Grid:
    headers: list[str]
    rows: list[list[str]]
    count: int | None = None  # 'N records found'; None for widgets without a count
    actions: list[tuple[str, str]] | None = None  # per row (key, link label)
    page: int = 1
    pages: int = 1
    alert_rows: list[bool] | None = None  # drawn red in the screenshot only (low stock)
    empty: str = "We couldn't find any records."


@dataclass
class Options:
    """An opened dropdown: its items are clickable."""

    items: list[tuple[str, str]]


@dataclass
class Dialog:
    title: str
    text: str
    buttons: list[tuple[str, str]]


@dataclass
class Menu:
    """The flyout a top-level nav item opens (Magento-style): groups of links."""

    title: str
    groups: list[tuple[str, list[tuple[str, str]]]]


Block = Heading | Notice | Text | Stats | Button | Link | Field | Section | Search | Filters | Grid | Options | Dialog
"""One of a page's blocks, top to bottom (a Menu is the page's flyout, not a block)."""
Fact = tuple[tuple, str]
"""(key, value): a value the page shows, e.g. (("order.status", "000000042"), "Pending")."""


@dataclass
class Page:
    kind: str
    url: str
    title: str
    heading: str
    nav: str  # active top-level nav item
    blocks: list[Block] = field(default_factory=list)
    menu: Menu | None = None
    facts: list[Fact] = field(default_factory=list)
    text: str = ""  # filled by axtree.render
    controls: dict[str, str] = field(default_factory=dict)  # key -> bid, filled by axtree.render

    def bid(self, key: str) -> str:
        return self.controls[key]
