"""Draw a state's page as a small PNG: header bar, left nav, the main blocks, and any flyout or dialog.

Drawn in palette mode with flat colours: the files stay a few KB and rendering is fast. The picture shows a few
things the tree does not (low-stock rows tinted red, a green success banner): the visual-only questions use them.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

from . import blocks as B
from .axtree import NAV
from .world import APP

W, H = 800, 500
NAV_W = 128
COLORS = {
    "bg": (245, 246, 248),
    "white": (255, 255, 255),
    "ink": (33, 37, 41),
    "muted": (110, 117, 125),
    "header": (31, 41, 74),
    "nav": (43, 47, 58),
    "nav_on": (235, 124, 40),
    "line": (206, 211, 218),
    "head_row": (228, 231, 236),
    "alt_row": (250, 250, 251),
    "alert_row": (252, 214, 214),
    "ok_bg": (214, 240, 220),
    "ok_ink": (25, 110, 50),
    "err_bg": (250, 218, 218),
    "err_ink": (160, 30, 30),
    "btn": (225, 228, 233),
    "primary": (235, 124, 40),
    "link": (0, 102, 204),
    "flyout": (60, 65, 78),
    "shade": (150, 150, 158),
    "switch_on": (60, 160, 90),
    "switch_off": (170, 170, 170),
}
_IDX = {name: i for i, name in enumerate(COLORS)}
_PALETTE = [c for rgb in COLORS.values() for c in rgb] + [0] * (3 * (256 - len(COLORS)))
_PRIMARY = {
    "Save",
    "Save Config",
    "Save Customer",
    "Apply Filters",
    "Show Report",
    "Add Product",
    "Add New Customer",
    "Search",
}
_FONTS: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}
_GLYPHS: dict[tuple[str, int], Image.Image] = {}  # rendered strings: nav items, headers, statuses repeat a lot


def _font(size: int):
    if size not in _FONTS:
        try:
            _FONTS[size] = ImageFont.load_default(size=size)
        except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
            _FONTS[size] = ImageFont.load_default()
    return _FONTS[size]


class _Canvas:
    def __init__(self):
        self.im = Image.new("P", (W, H), _IDX["bg"])
        self.im.putpalette(_PALETTE)
        self.d = ImageDraw.Draw(self.im)

    def box(self, x0, y0, x1, y1, fill, outline=None):
        self.d.rectangle([x0, y0, x1, y1], fill=_IDX[fill], outline=_IDX[outline] if outline else None)

    def text(self, x, y, s, color="ink", size=12, max_w=None):
        if not s:
            return 0
        if max_w is not None and _width(s, size) > max_w:
            while s and _width(s + "...", size) > max_w:
                s = s[:-1]
            s += "..."  # ASCII: the bundled font has no ellipsis glyph
        mask = _glyphs(s, size)
        self.im.paste(_IDX[color], (int(x), int(y), int(x) + mask.width, int(y) + mask.height), mask)
        return mask.width


def _glyphs(s: str, size: int) -> Image.Image:
    """The string as a 1-bit mask (palette images get no anti-aliasing anyway), rendered once per string."""
    key = (s, size)
    if key not in _GLYPHS:
        f = _font(size)
        bottom = f.getbbox(s)[3]
        # 1-bit rendering is hinted wider than getlength() says: draw roomy, then crop to the ink.
        im = Image.new("1", (int(f.getlength(s) * 1.3) + 12, max(1, int(bottom) + 2)), 0)
        ImageDraw.Draw(im).text((0, 0), s, fill=1, font=f)
        box = im.getbbox()
        _GLYPHS[key] = im.crop((0, 0, box[2] + 1 if box else 1, im.height))
    return _GLYPHS[key]


def _width(s: str, size: int) -> int:
    return _glyphs(s, size).width


def render_png(page: B.Page) -> bytes:
    c = _Canvas()
    c.box(0, 0, W, 36, "header")
    c.text(12, 10, APP, "white", 15)
    c.text(NAV_W + 16, 11, page.title, "white", 12, max_w=520)
    c.text(W - 60, 11, "admin", "white", 12)
    c.box(0, 36, NAV_W, H, "nav")
    for i, item in enumerate(NAV):
        y = 48 + i * 34
        if item == page.nav:
            c.box(0, y - 6, 4, y + 20, "nav_on")
        c.text(16, y, item, "nav_on" if item == page.nav else "white", 12)
    x, y = NAV_W + 16, 46
    c.text(x, y, page.heading, "ink", 18, max_w=W - x - 20)
    y += 32
    row: list = []
    for b in page.blocks + [None]:
        if isinstance(b, (B.Button, B.Link)):
            row.append(b)
            continue
        if row:
            y = _buttons(c, x, y, row)
            row = []
        if b is not None and y < H - 14:
            y = _block(c, x, y, b)
    if page.menu:
        _flyout(c, page.menu)
    dialog = next((b for b in page.blocks if isinstance(b, B.Dialog)), None)
    if dialog:
        _dialog(c, dialog)
    buf = io.BytesIO()
    c.im.save(buf, "PNG", compress_level=6)
    return buf.getvalue()


def _buttons(c: _Canvas, x: int, y: int, row: list) -> int:
    for b in row:
        w = _width(b.label, 12) + 20
        if isinstance(b, B.Link):
            c.text(x, y + 5, b.label, "link")
        else:
            c.box(x, y, x + w, y + 24, "primary" if b.label in _PRIMARY else "btn", "line")
            c.text(x + 10, y + 5, b.label, "white" if b.label in _PRIMARY else "ink")
        x += w + 8
    return y + 32


def _block(c: _Canvas, x: int, y: int, b) -> int:
    right = W - 16
    if isinstance(b, B.Notice):
        bg, ink = (
            ("ok_bg", "ok_ink")
            if b.kind == "success"
            else (("err_bg", "err_ink") if b.kind == "error" else ("head_row", "ink"))
        )
        c.box(x, y, right, y + 26, bg)
        c.text(x + 10, y + 6, b.text, ink, max_w=right - x - 20)
        return y + 34
    if isinstance(b, (B.Heading, B.Section)):
        c.text(x, y, b.text if isinstance(b, B.Heading) else b.title, "ink", 14)
        c.d.line([x, y + 20, right, y + 20], fill=_IDX["line"])
        return y + 28
    if isinstance(b, B.Text):
        c.text(x, y, b.text, "muted")
        return y + 18
    if isinstance(b, B.Stats):
        return _stats(c, x, y, b)
    if isinstance(b, B.Field):
        return _field(c, x, y, b)
    if isinstance(b, B.Search):
        c.box(x, y, x + 300, y + 24, "white", "line")
        c.text(x + 6, y + 5, b.value or b.placeholder, "ink" if b.value else "muted", max_w=288)
        c.box(x + 306, y, x + 370, y + 24, "primary")
        c.text(x + 316, y + 5, "Search", "white")
        return y + 32
    if isinstance(b, B.Filters):
        return _filters(c, x, y, b)
    if isinstance(b, B.Options):
        for i, (_, label) in enumerate(b.items):
            c.box(x, y + i * 24, x + 160, y + i * 24 + 24, "white", "line")
            c.text(x + 8, y + i * 24 + 5, label)
        return y + 24 * len(b.items) + 8
    if isinstance(b, B.Grid):
        return _grid(c, x, y, b)
    return y  # Dialog is drawn last, on top


def _stats(c: _Canvas, x: int, y: int, b: B.Stats) -> int:
    bx = x
    for label, value in b.pairs:
        w = max(140, _width(value, 16) + 24)
        c.box(bx, y, bx + w, y + 46, "white", "line")
        c.text(bx + 10, y + 5, label, "muted", 11)
        c.text(bx + 10, y + 22, value, "ink", 16)
        bx += w + 10
    return y + 56


def _field(c: _Canvas, x: int, y: int, b: B.Field) -> int:
    c.text(x, y + 5, b.label + (" *" if b.required else ""), "ink", max_w=150)
    fx = x + 160
    if b.kind == "checkbox":
        on = b.value in ("Yes", "Enabled")
        c.box(fx, y + 3, fx + 36, y + 21, "switch_on" if on else "switch_off")
        c.box(fx + (20 if on else 2), y + 5, fx + (34 if on else 16), y + 19, "white")
        c.text(fx + 46, y + 5, b.value)
    else:
        c.box(fx, y, fx + 280, y + 24, "white", "line")
        shown = b.value or ("MM/DD/YYYY" if b.kind == "date" else "")
        c.text(fx + 6, y + 5, shown, "ink" if b.value else "muted", max_w=252)
        if b.kind == "select":  # a drawn caret: the bundled font lacks the arrow glyphs
            c.d.polygon([(fx + 262, y + 9), (fx + 272, y + 9), (fx + 267, y + 15)], fill=_IDX["muted"])
    return y + 30


def _filters(c: _Canvas, x: int, y: int, b: B.Filters) -> int:
    tx = x + c.text(x, y + 4, "Active filters:", "muted") + 8
    for item in b.items:
        w = _width(item, 12) + 26
        c.box(tx, y, tx + w, y + 22, "head_row", "line")
        c.text(tx + 8, y + 4, item + "  x")
        tx += w + 6
    c.text(tx + 6, y + 4, "Clear all", "link")
    return y + 30


def _grid(c: _Canvas, x: int, y: int, g: B.Grid) -> int:
    right = W - 16
    if g.count is not None:
        c.text(x, y, f"{g.count} records found", "ink")
        c.text(right - 120, y, f"<  {g.page} of {g.pages}  >", "muted")
        y += 22
    cols = g.headers + (["Action"] if g.actions else [])
    lens = [max([len(h)] + [len(r[i]) for r in g.rows[:12]]) + 2 for i, h in enumerate(g.headers)]
    lens += [6] if g.actions else []
    total = sum(lens)
    widths = [int((right - x) * n / total) for n in lens]
    c.box(x, y, right, y + 22, "head_row", "line")
    cx = x
    for h, w in zip(cols, widths):
        c.text(cx + 5, y + 5, h, "ink", 11, max_w=w - 8)
        cx += w
    y += 22
    if not g.rows:
        c.box(x, y, right, y + 24, "white", "line")
        c.text(x + 8, y + 6, g.empty, "muted")
        return y + 32
    for i, r in enumerate(g.rows):
        if y > H - 24:
            break
        alert = bool(g.alert_rows and g.alert_rows[i])
        c.box(x, y, right, y + 22, "alert_row" if alert else ("alt_row" if i % 2 else "white"), "line")
        cx = x
        for cell, w in zip(r + ([g.actions[i][1]] if g.actions else []), widths):
            c.text(
                cx + 5,
                y + 5,
                cell,
                "link" if g.actions and cell == g.actions[i][1] and cx > x else "ink",
                11,
                max_w=w - 8,
            )
            cx += w
        y += 22
    return y + 8


def _flyout(c: _Canvas, m: B.Menu) -> None:
    x0 = NAV_W
    c.box(x0, 36, x0 + 220, H, "flyout")
    c.text(x0 + 16, 48, m.title, "white", 16)
    y = 80
    for heading, links in m.groups:
        c.text(x0 + 16, y, heading, "shade", 12)
        y += 22
        for _, label in links:
            c.text(x0 + 28, y, label, "white", 12)
            y += 22
        y += 8


def _dialog(c: _Canvas, d: B.Dialog) -> None:
    x0, y0, x1, y1 = 200, 150, 600, 300
    c.box(x0 + 6, y0 + 6, x1 + 6, y1 + 6, "shade")  # a drop shadow; the page stays visible behind the modal
    c.box(x0, y0, x1, y1, "white", "ink")
    c.text(x0 + 20, y0 + 16, d.title, "ink", 16)
    c.text(x0 + 20, y0 + 56, d.text, "ink", 12, max_w=360)
    bx = x1 - 20
    for _, label in reversed(d.buttons):
        w = _width(label, 12) + 24
        c.box(bx - w, y1 - 44, bx, y1 - 18, "primary" if label == "OK" else "btn", "line")
        c.text(bx - w + 12, y1 - 39, label, "white" if label == "OK" else "ink")
        bx -= w + 10
