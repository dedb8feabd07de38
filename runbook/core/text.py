"""Page text helpers shared by the pools: line cleaning, tokenising for BM25, stable line hashes."""

from __future__ import annotations

import functools
import re
import zlib
from collections import Counter

from .question import normalize_term

_TOKEN = re.compile(r"\[\d+\]|\\u[ef][0-9a-f]{3}|([^\W_]+)")
"""Words; element ids and escaped glyphs match too but capture nothing, so one findall pass skips them."""
_IDS = re.compile(r"\[\d+\] ?")
_GLYPHS = re.compile(r"[\ue000-\uf8ff] ?|\\u[ef][0-9a-f]{3} ?")
"""Element ids, the `StaticText` role and icon-font glyphs (private-use characters, raw or as \\uXXXX): no words."""
_HAS_WORD = re.compile(r"[^\W\d_]{2,}|\d")
_BARE = re.compile(
    r"^\s*(?:generic|group|LineBreak|none|list|listitem|paragraph|Section|LayoutTable|"
    r"LayoutTableRow|LayoutTableCell|<div\s*/>|<span\s*/>)\s*(?:''|\"\")?\s*$"
)


TAIL_SHARE = 0.4
"""Share of a shortened sentence kept from its end (`shorten`)."""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def shorten(text: str, limit: int) -> str:
    """`text` in about `limit` characters: its first sentences while they fit, and a first sentence longer than that
    cut in its middle. A page's message names the thing first and says what happened to it last ('Magnetic Metal
    ... Controller has been added to your Wish List.'): a cut at the end keeps the name and drops the news."""
    if len(text) <= limit:
        return text
    sentences = SENTENCE_END.split(text)
    kept, used = sentences[0], 1
    while used < len(sentences) and len(kept) + 1 + len(sentences[used]) <= limit - 2:
        kept += " " + sentences[used]
        used += 1
    if len(kept) > limit:
        tail_from = len(kept) - int(limit * TAIL_SHARE)
        head_to = limit - (len(kept) - tail_from) - 3
        # whole words at both cuts, where a space is near
        space = kept.rfind(" ", head_to - 20, head_to)
        head_to = space if space > 0 else head_to
        space = kept.find(" ", tail_from, tail_from + 20)
        tail_from = space + 1 if space > 0 else tail_from
        kept = kept[:head_to].rstrip() + " … " + kept[tail_from:].lstrip()
    return kept + " …" if used < len(sentences) else kept


def clean_line(line: str) -> str:
    """A page line without element ids and the `StaticText` role, trailing space trimmed (indentation kept)."""
    return strip_markup(line).rstrip()


def content_lines(text: str) -> list[str]:
    """The cleaned lines of a page that carry words: structure-only lines (bare `generic`, `<div />`) dropped."""
    out: list[str] = []
    keep = _keep_line
    for line in strip_markup(text).split("\n"):
        line = line.rstrip()
        if not keep(line):
            continue
        body = line.lstrip()
        if body[:1] in "'\"" and out and body.strip("'\" ") in out[-1]:
            continue  # an accessibility tree repeats an element's name as its text child
        out.append(line)
    return out


@functools.lru_cache(maxsize=200_000)
def _keep_line(line: str) -> bool:
    """Pages repeat the same lines thousands of times: the verdict per distinct line is cached."""
    return bool(line.strip()) and bool(_HAS_WORD.search(line)) and not _BARE.match(line)


def strip_markup(text: str) -> str:
    """`clean_line` for a whole page, in fast passes (a literal replace, then simple regexes)."""
    text = _IDS.sub("", text.replace("StaticText ", ""))
    return _GLYPHS.sub("", text)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters/digits runs), element ids skipped: what BM25 indexes."""
    return [t for t in _TOKEN.findall(text.lower()) if t]


def _word_bytes_table() -> bytes:
    table = bytearray(b" " * 256)
    for kept in b"abcdefghijklmnopqrstuvwxyz0123456789[]\\":
        table[kept] = kept
    for upper in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        table[upper] = upper + 32
    for high in range(128, 256):
        table[high] = high
    return bytes(table)


_WORD_BYTES = _word_bytes_table()
"""For `term_counts`: ASCII letters lower-cased, digits kept, any other ASCII byte a space, except the brackets and
backslash of ids and escaped glyphs (a piece holding one goes through `tokenize`); UTF-8's bytes of a non-ASCII
character are all >= 128, kept."""
_ASCII_IDS = re.compile(rb"\[[0-9]+\]")


def term_counts(text: str) -> Counter[str]:
    """`Counter(tokenize(text))`, equal to it term for term and in its order (the order gives new terms their ids),
    at about twice its speed: the pieces between ASCII separators are counted as bytes in C, and only each distinct
    piece is decoded; a piece with a non-ASCII character, a bracket or a backslash goes through `tokenize`. Every
    character `tokenize` does not keep in a word is a separator here too, and no id or escape it skips spans one.
    The order holds because a term first appears in the first piece that holds it."""
    if "\u03a3" in text:  # capital sigma lower-cases by its neighbours (final sigma), across separators: not per piece
        return Counter(tokenize(text))
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return Counter(tokenize(text))
    if b"[" in data:
        data = _ASCII_IDS.sub(b" ", data)
    out: Counter[str] = Counter()
    get = out.get
    for piece, n in Counter(data.translate(_WORD_BYTES).split()).items():
        if piece.isalnum():  # bytes.isalnum: ASCII letters and digits only
            term = piece.decode()
            out[term] = get(term, 0) + n
        else:
            for term in tokenize(piece.decode()):
                out[term] = get(term, 0) + n
    return out


@functools.lru_cache(maxsize=500_000)
def stem(token: str) -> str:
    """The index's term normalisation: the same light one the question analysis applies (plurals, possessives).

    Measured: also folding -ed/-ing/-e endings lost two dev questions and gained nothing on a generated set."""
    return normalize_term(token)


def line_hash(line: str, site: str = "") -> int:
    """A stable 64-bit hash of a cleaned, unindented line within a site (boilerplate is counted per site)."""
    data = f"{site}\x00{line.strip()}".encode("utf-8", "surrogatepass")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)
