"""Render a Page as accessibility-tree text in the style of BrowserGym's `axtree_txt`.

Interactive nodes get `[bid]` ids from a counter that restarts on every page, so the same control keeps the same
bid on every visit to the same page shape, as in the real WebArena trees.
"""

from __future__ import annotations

from . import blocks as B
from .world import APP

NAV = ["DASHBOARD", "SALES", "CATALOG", "CUSTOMERS", "REPORTS", "SETTINGS"]


class _Tree:
    def __init__(self, start: int):
        self.lines: list[str] = []
        self.next = start
        self.controls: dict[str, str] = {}

    def node(self, depth: int, role: str, name: str = "", props: str = "", key: str | None = None) -> str:
        bid = str(self.next)
        self.next += 1
        if key:
            self.controls[key] = bid
        # BrowserGym writes `value=` right after the name and other properties after a comma.
        sep = " " if props.startswith("value=") else ", "
        self.lines.append("\t" * depth + f"[{bid}] {role} {_q(name)}" + (sep + props if props else ""))
        return bid

    def text(self, depth: int, s: str) -> None:
        self.lines.append("\t" * depth + f"StaticText {_q(s)}")

    def skip(self, n: int) -> None:
        self.next += n  # unnamed wrapper nodes consume ids in real trees too


def _q(s: str) -> str:
    return repr(s)


def render(page: B.Page) -> B.Page:
    t = _Tree(120)
    t.lines.append(f"RootWebArea {_q(page.title)}, focused")
    t.node(1, "link", f"{APP} Panel", key="logo")
    t.node(2, "image", f"{APP} Panel")
    t.node(1, "navigation", "")
    t.node(2, "menubar", "", "orientation='horizontal'")
    for item in NAV:
        focused = page.menu is not None and page.menu.title.upper() == item
        t.node(3, "link", item, "focused" if focused else "", key=f"nav_{item.lower()}")
        t.text(4, item)
        if focused:
            assert page.menu is not None  # `focused` says it is open
            _menu(t, page.menu)
    t.skip(20)
    t.node(1, "banner", "")
    t.node(2, "heading", page.heading)
    t.node(2, "link", "admin", key="account")
    t.node(2, "textbox", "Search globally", key="global_search")
    t.skip(10)
    t.node(1, "main", "")
    for b in page.blocks:
        _block(t, b, 2)
    page.text = "\n".join(t.lines)
    page.controls = t.controls
    return page


def _menu(t: _Tree, m: B.Menu) -> None:
    t.node(4, "strong", "")
    t.text(5, m.title)
    t.node(4, "menu", "", "orientation='vertical'")
    for heading, links in m.groups:
        t.node(5, "strong", "")
        t.text(6, heading)
        t.node(5, "menu", "", "orientation='vertical'")
        for key, label in links:
            t.node(6, "link", label, key=key)
            t.text(7, label)


def _block(t: _Tree, b, d: int) -> None:
    if isinstance(b, B.Heading):
        t.node(d, "heading", b.text)
    elif isinstance(b, B.Section):
        t.node(d, "group", b.title)
        t.text(d + 1, b.title)
    elif isinstance(b, B.Notice):
        t.node(d, "alert" if b.kind == "error" else "status", "", "live='polite'")
        t.text(d + 1, b.text)
    elif isinstance(b, B.Text):
        t.text(d, b.text)
    elif isinstance(b, B.Stats):
        for label, value in b.pairs:
            t.node(d, "generic", "")
            t.text(d + 1, label)
            t.text(d + 1, value)
    elif isinstance(b, B.Button):
        t.node(d, "button", b.label, "disabled=True" if b.disabled else "", key=b.key)
    elif isinstance(b, B.Link):
        t.node(d, "link", b.label, key=b.key)
    elif isinstance(b, B.Field):
        _field(t, b, d)
    elif isinstance(b, B.Search):
        t.node(d, "textbox", b.placeholder, f"value={_q(b.value)}" if b.value else "", key="search")
        t.node(d, "button", "Search", key="search_go")
    elif isinstance(b, B.Filters):
        t.node(d, "LayoutTable", "")
        t.text(d + 1, "Active filters:")
        t.node(d + 1, "list", "")
        for i, item in enumerate(b.items):
            t.node(d + 2, "listitem", "")
            t.text(d + 3, item)
            t.node(d + 3, "button", "Remove", key=f"filter_remove_{i}")
        t.node(d + 1, "button", "Clear all", key="clear_all")
    elif isinstance(b, B.Grid):
        _grid(t, b, d)
    elif isinstance(b, B.Options):
        t.node(d, "menu", "", "orientation='vertical'")
        for key, label in b.items:
            t.node(d + 1, "menuitem", label, key=key)
    elif isinstance(b, B.Dialog):
        t.node(d, "dialog", b.title, "modal=True")
        t.node(d + 1, "heading", b.title)
        t.text(d + 1, b.text)
        for key, label in b.buttons:
            t.node(d + 1, "button", label, key=key)
            t.text(d + 2, label)
    else:  # a new block type must be taught to both renderers
        raise TypeError(f"unknown block {type(b).__name__}")


def _field(t: _Tree, f: B.Field, d: int) -> None:
    t.node(d, "LabelText", "")
    t.text(d + 1, f.label)
    req = ", required" if f.required else ""
    if f.kind == "checkbox":
        checked = "true" if f.value in ("Yes", "Enabled") else "false"
        t.node(d, "checkbox", f.label, f"checked='{checked}'", key=f.key)
        # The styled switch label sits on top of the input: clicking the input times out (the gotcha).
        t.node(d, "LabelText", "", key=f"{f.key}_label")
        t.text(d + 1, f.value)
    elif f.kind == "select":
        t.node(d, "combobox", f.label, f"value={_q(f.value)}, hasPopup='menu', expanded=False{req}", key=f.key)
        for opt in f.options:
            t.node(d + 1, "option", opt, f"selected={opt == f.value}")
    else:
        props = (f"value={_q(f.value)}" if f.value else "") + req
        if f.kind == "date" and not f.value:
            props = "placeholder='MM/DD/YYYY'"
        t.node(d, "textbox", f.label, props.lstrip(", "), key=f.key)
        if f.value:
            t.text(d + 1, f.value)


def _grid(t: _Tree, g: B.Grid, d: int) -> None:
    if g.count is not None:
        t.text(d, f"{g.count} records found")
        t.node(d, "button", "Previous Page", "disabled=True" if g.page <= 1 else "", key="page_prev")
        t.node(d, "spinbutton", f"of {g.pages}", f"value={g.page}, valuemin=1, valuemax={g.pages}", key="page_no")
        t.node(d, "button", "Next Page", "disabled=True" if g.page >= g.pages else "", key="page_next")
    t.node(d, "table", "")
    t.node(d + 1, "rowgroup", "")
    t.node(d + 2, "row", "")
    for h in g.headers:
        t.node(d + 3, "columnheader", h)
        t.text(d + 4, h)
    t.node(d + 1, "rowgroup", "")
    if not g.rows:
        t.node(d + 2, "row", "")
        t.node(d + 3, "gridcell", g.empty)
        t.text(d + 4, g.empty)
    for i, row in enumerate(g.rows):
        t.node(d + 2, "row", "")
        for cell in row:
            t.node(d + 3, "gridcell", cell)
            if cell:
                t.text(d + 4, cell)
        if g.actions:
            key, label = g.actions[i]
            t.node(d + 3, "gridcell", label)
            t.node(d + 4, "link", label, key=key)
