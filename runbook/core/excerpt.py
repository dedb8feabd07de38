"""The part of a page worth showing for a question, cut from the page's structure (core.page's blocks), in page order.

An excerpt keeps, within its budget:
  1. what the page is: its main heading, the lines that count ('308 records found', 'Items 1 to 12 of 44'), the
     messages it shows (an error banner, 'You saved the product') and the tab or option that is selected;
  2. the blocks that match the question best, each with the structure that makes it readable: a table row with its
     table's header, a form field with the fields beside it, an opened dialog or menu whole (what appeared after
     the agent's action), a heading with what follows it, a label with the value after it;
  3. the site's furniture (menus, banners, footers: `Block.furniture`, and lines on most pages of the site per the
     pools' line counts) only when nothing else matches.
One function for every method: method R's slices, method C's spans and the planner's quotes cut with it.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import replace

import numpy as np

from .blocks import Block, Page, shown_line
from .boilerplate import LineCounts
from .page import parse_page
from .text import line_hash, stem, tokenize

HEAD_SHARE = 0.25
"""Share of an excerpt kept for what the page is (heading, counts, messages, selected tab)."""
LEAD_KINDS = ("count", "message", "choice")
LEAD_BLOCKS = 3
"""Blocks of each lead kind kept at most (a page of 40 'Pending' statuses is not 40 messages)."""
TOP_BLOCKS, TOP_SHARE = 2, 0.6
"""The blocks that match a page best (`Excerpter.best_lines`): at most this many, scoring this share of the best."""
FURNITURE_FACTOR = 0.3
"""A match in the site's furniture counts this much: shown only when nothing better matches."""
NAMED_FACTOR = 0.25
"""A word of a question's phrase that names the page (the phrase is in the page's title) counts this much inside
that page: it says which page the question is about, not which of its lines. On the page 'Greaton ... Box Spring',
asked for the Country of Origin, the product's name is on every option of its page; the row that answers is
'Country of Origin | USA'."""
MIN_IDF = 1.0
MAX_TERMS, MAX_PHRASES = 64, 32
"""Terms and phrases a page is searched for (the heaviest): a 10,000-character question took 6 s on 60 pages."""
BLOCK_TOKENS = 120
"""A block is shown cut to this many tokens (a long paragraph's match is shown around it)."""
DIALOG_BLOCKS = 14
"""An opened dialog or menu (what appeared after an action) is shown whole up to this many blocks."""
AFTER = 2
"""Blocks kept after a matching one: values follow their labels, a post's text follows its title."""
SECTION_REACH, SECTION_TITLE, SECTION_SENTENCE = 12, 40, 8
"""A matching block is shown with the heading of its section: the nearest heading, or titled text (a title of at most
this many characters before its ' · ', then a sentence or this many words), at most this many blocks above it.
'Enabled' says nothing without 'Issue subscriptions'."""
SECTION_BLOCKS, SECTION_SHARE = 40, 0.5
"""A section one of the best matches titles is shown whole when it has at most this many blocks and they fit in this
share of the budget left."""
DIFF_KINDS = {"message": 0, "count": 1, "field": 2, "choice": 3, "row": 4, "heading": 5}
"""What a view folded into another shows of its own first, after the lines that match the question."""


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern:
    """A stem found with its common endings: 'category' matches 'categories', 'order' matches 'orders'."""
    base = re.escape(term[:-1]) + "(?:y|ies)" if term.endswith("y") and len(term) > 3 else re.escape(term)
    # no leading look-behind: a pattern that starts with a literal lets the regex engine skip ahead fast;
    # the word start is checked on the few matches instead (see _word_start)
    return re.compile(base + r"(?:s|es|'s|ed|ing)?(?![^\W_])")


def _word_start(text: str, pos: int) -> bool:
    return pos == 0 or not (text[pos - 1].isalnum())


@functools.lru_cache(maxsize=1024)
def phrase_pattern(phrase: str) -> re.Pattern:
    return re.compile(re.escape(phrase.lower()))


def tokens_of(text: str) -> int:
    """A close, cheap estimate of a text's tokens; packing counts exactly."""
    return len(text) // 3 + 1


class Excerpter:
    """Cuts excerpts for one query; remembers furniture verdicts across the pages it reads."""

    def __init__(self, query: dict[str, float], phrases: list[str], idf: dict[str, float], lines_df: LineCounts | None):
        # terms on most pages (idf under MIN_IDF) would mark half the page as matching: they only count in BM25
        weights = {t: w * idf.get(t, 1.0) for t, w in query.items() if idf.get(t, 1.0) >= MIN_IDF}
        # a page is searched once per term: a question of thousands of words keeps its rarest ones
        self.weights = dict(sorted(weights.items(), key=lambda tw: -tw[1])[:MAX_TERMS])
        self.phrases = [p for p in phrases if len(p) >= 2][:MAX_PHRASES]
        self.naming = [p for p in self.phrases if " " in p.strip() or any(c.isdigit() for c in p)]
        """Phrases that can name a page (a title, a product, an id; not one word such as 'Magento', the site's name):
        found in a page's title, their words say which page the question is about, not which of its lines."""
        self.bonus = 2.0 * (max(self.weights.values()) if self.weights else 1.0)
        self.lines_df = lines_df
        self._common: dict[tuple[str, str], bool] = {}
        self.site = ""
        self.best_lines: list[str] = []
        """The best-matching blocks' texts of the last page excerpted."""
        self.furniture_tokens = 0
        """Tokens of furniture blocks the last excerpt shows (a diagnostic)."""

    def common(self, texts: list[str]) -> list[bool]:
        """Whether each block text is on most pages of the site (the pools' line counts), looked up together."""
        missing = list({t for t in texts if (self.site, t) not in self._common})
        if missing:
            if self.lines_df is None:
                verdicts = [False] * len(missing)
            else:
                hashes = np.fromiter((line_hash(t, self.site) for t in missing), dtype="<u8", count=len(missing))
                verdicts = self.lines_df.is_boilerplate(hashes, self.site).tolist()
            self._common.update(((self.site, t), bool(v)) for t, v in zip(missing, verdicts))
        return [self._common[(self.site, t)] for t in texts]

    def excerpt(self, page: Page | str, max_tokens: int, site: str = "", title: str = "") -> tuple[str, float]:
        """(excerpt, match score) of one page of `site` within about `max_tokens`; `title`: the page's own title, whose
        words name the page rather than a line of it."""
        self.site = site
        if isinstance(page, str):
            page = parse_page(page)
        blocks = page.blocks
        furniture = self._furniture(blocks)
        scores, match = self._scores(blocks, furniture, title)
        chosen = self._choose(blocks, scores, furniture, max_tokens)
        best = sorted(scores, key=lambda n: -scores[n])
        self.best_lines = [blocks[n].text for n in best[:TOP_BLOCKS] if scores[n] >= TOP_SHARE * scores[best[0]]]
        self.furniture_tokens = sum(tokens_of(blocks[n].text) for n in chosen if furniture[n])
        return render(blocks, chosen), match

    def pick_lines(self, lines: list[str], k: int, site: str = "") -> list[str]:
        """`k` of `lines` (an event's appeared lines) in their order: those that match the question, then the first
        ones; '(+N more)' when some are left out."""
        self.site = site
        blocks = [Block("text", line, "main", n, n) for n, line in enumerate(lines)]
        scores, _ = self._scores(blocks, self._furniture(blocks))
        best = sorted(scores, key=lambda n: (-scores[n], n))[:k]
        fill = [n for n in range(len(lines)) if n not in best][: k - len(best)]
        more = [f"(+{len(lines) - k} more)"] if len(lines) > k else []
        return [lines[n] for n in sorted(set(best) | set(fill))] + more

    def whole(self, page: Page, max_tokens: int, site: str = "", title: str = "") -> str:
        """The page minus the site's furniture when that fits in `max_tokens` (a page among the best few is read
        whole: what answers may not be what matches), else its excerpt within `max_tokens`."""
        self.site = site
        furniture = self._furniture(page.blocks)
        own = {n for n, b in enumerate(page.blocks) if not furniture[n]}
        if own and sum(shown_tokens(page.blocks[n]) for n in own) <= max_tokens:
            self.furniture_tokens = 0
            return render(page.blocks, own)
        return self.excerpt(page, max_tokens, site, title)[0]

    def differences(self, page: Page, other: Page, max_tokens: int, site: str = "", title: str = "") -> list[str]:
        """The lines of `page` that `other` (another view of it, shown already) lacks: those that match the question
        first, then what the page says (messages, counts, fields set), in page order within each, about `max_tokens`
        in all. A view folded into another shows what only it has."""
        self.site = site
        blocks = page.blocks
        furniture = self._furniture(blocks)
        left = Counter(b.text for b in other.blocks)
        new = []
        for n, block in enumerate(blocks):
            if left[block.text] > 0:
                left[block.text] -= 1
            elif not furniture[n]:
                new.append(n)
        scores, _ = self._scores(blocks, furniture, title)
        new.sort(key=lambda n: (-scores.get(n, 0.0), DIFF_KINDS.get(blocks[n].kind, len(DIFF_KINDS)), n))
        out, spent = [], 0
        for n in new:
            cost = shown_tokens(blocks[n])
            if spent + cost > max_tokens:
                break
            out.append(n)
            spent += cost
        return [shown_line(blocks[n]) for n in sorted(out)]

    def furniture_in(self, page: Page, site: str = "") -> int:
        """Tokens of the page's furniture when it is shown whole."""
        self.site = site
        return sum(tokens_of(b.text) for b, f in zip(page.blocks, self._furniture(page.blocks)) if f)

    def header_score(self, header: str) -> float:
        """Phrases found in a state's URL or title (e.g. '/f/books'): they count like a matching page block."""
        low = header.lower()
        return self.bonus * sum(1 for p in self.phrases if phrase_pattern(p).search(low))

    def _furniture(self, blocks: list[Block]) -> list[bool]:
        common = self.common([b.text for b in blocks])
        return [b.furniture or c for b, c in zip(blocks, common)]

    def _scores(self, blocks: list[Block], furniture: list[bool], title: str = "") -> tuple[dict[int, float], float]:
        """(each matching block's score for choosing lines, the page's match score for ranking pages). Words of the
        page's own title count less in the first (they name the page) and fully in the second (they find it)."""
        low = "\n".join(b.text for b in blocks).lower()
        named = title.lower()
        # block number of a character offset: newline positions found in C, looked up in one batch per pattern
        newlines = np.flatnonzero(np.frombuffer(low.encode("utf-32-le"), dtype=np.uint32) == 10)
        scores: dict[int, float] = {}
        full: dict[int, float] = {}

        def add(blocks_hit: set[int] | list[int], weight: float, factor: float) -> None:
            for n in blocks_hit:
                full[n] = full.get(n, 0.0) + weight
                scores[n] = scores.get(n, 0.0) + weight * factor

        naming = (
            {stem(t) for p in self.naming if phrase_pattern(p).search(named) for t in tokenize(p)} if named else set()
        )
        for term, weight in self.weights.items():
            in_title = term in naming
            starts = [m.start() for m in term_pattern(term).finditer(low) if _word_start(low, m.start())]
            add(set(np.searchsorted(newlines, starts).tolist()), weight, NAMED_FACTOR if in_title else 1.0)
        for phrase in self.phrases:
            in_title = phrase in self.naming and phrase_pattern(phrase).search(named) is not None
            starts = [m.start() for m in phrase_pattern(phrase).finditer(low)]
            # the page's name: its heading leads the excerpt anyway
            add(np.searchsorted(newlines, starts).tolist(), self.bonus, 0.0 if in_title else 1.0)
        for n in full:
            if furniture[n]:  # the site's furniture: shown only when nothing better matches
                full[n] *= FURNITURE_FACTOR
                scores[n] *= FURNITURE_FACTOR
        best = sorted(full.values(), reverse=True)[:5]
        return {n: v for n, v in scores.items() if v > 0}, float(sum(best))

    def _choose(self, blocks: list[Block], scores: dict[int, float], furniture: list[bool], max_tokens: int
                ) -> set[int]:  # fmt: skip
        chosen: set[int] = set()
        spent = 0

        def take(n: int, limit: int) -> bool:
            nonlocal spent
            if n in chosen:
                return True
            cost = shown_tokens(blocks[n])
            if spent + cost > limit:
                return False
            chosen.add(n)
            spent += cost
            return True

        head = int(max_tokens * HEAD_SHARE)
        for n in lead_blocks(blocks, furniture):
            take(n, head)
        # the site's furniture is shown only when nothing of the page's own matches
        matches = [n for n in scores if scores[n] > 0 and not furniture[n]] or [n for n in scores if scores[n] > 0]
        for rank, n in enumerate(sorted(matches, key=lambda k: -scores[k])):
            if spent >= max_tokens:
                break
            for k in context_of(blocks, n, furniture):
                if not take(k, max_tokens):
                    break
            if rank < TOP_BLOCKS and n in chosen:
                # a section the question's best match titles is what it asks about: its lines are shown whole when
                # they fit in a share of what is left ('Issue subscriptions' and the issues listed under it), before
                # weaker matches spend the budget elsewhere on the page
                rest = [k for k in section_lines(blocks, n, furniture) if k not in chosen]
                if rest and sum(shown_tokens(blocks[k]) for k in rest) <= SECTION_SHARE * (max_tokens - spent):
                    for k in rest:
                        take(k, max_tokens)
        for rows in properties_with(blocks, chosen & set(matches)):
            # a table of one thing's properties a match was read in is shown whole when the rest of it fits: the row
            # that answers is not always the row that matches ('operator | Allegheny Health Network' for 'who
            # operates it'). A grid under a header lists many things, and its matching rows are the ones asked about.
            rest = [k for k in rows if k not in chosen]
            if rest and spent + sum(shown_tokens(blocks[k]) for k in rest) <= max_tokens:
                for k in rest:
                    take(k, max_tokens)
        if not matches:  # a page cited for its place in a run still says what it was: its own opening
            for n in range(len(blocks)):
                if not furniture[n] and n not in chosen and not take(n, max_tokens // 2):
                    break
        return chosen


def shown_tokens(block: Block) -> int:
    """What a block costs in an excerpt: its tokens, up to BLOCK_TOKENS (a longer one is shown cut, see `render`)."""
    return min(tokens_of(block.text), BLOCK_TOKENS)


def lead_blocks(blocks: list[Block], furniture: list[bool]) -> list[int]:
    """What the page is: its first heading outside the furniture, then its counts, messages and selected choices
    (the first few of each)."""
    out: list[int] = []
    heading = next((n for n, b in enumerate(blocks) if b.kind == "heading" and not furniture[n]), None)
    if heading is not None:
        out.append(heading)
    for kind in LEAD_KINDS:
        out += [n for n, b in enumerate(blocks) if b.kind == kind and not furniture[n]][:LEAD_BLOCKS]
    return out


def properties_with(blocks: list[Block], chosen: set[int]) -> list[list[int]]:
    """The tables without a header row ('name | value' rows: one thing's properties) that hold a block of `chosen`,
    each as its rows, in page order."""

    def headerless_row(k: int) -> bool:
        return blocks[k].kind == "row" and blocks[k].header < 0

    tables: list[list[int]] = []
    for n in sorted(chosen):
        if not headerless_row(n) or (tables and n in tables[-1]):
            continue
        start, end = n, n
        while start > 0 and headerless_row(start - 1):
            start -= 1
        while end + 1 < len(blocks) and headerless_row(end + 1):
            end += 1
        tables.append(list(range(start, end + 1)))
    return tables


def context_of(blocks: list[Block], n: int, furniture: list[bool]) -> list[int]:
    """Block n with what makes it readable, most needed first."""
    block = blocks[n]
    out: list[int] = []
    if block.kind == "row" and block.header >= 0:
        out.append(block.header)
    if block.region in ("new", "dialog"):
        start, end = n, n
        while start > 0 and blocks[start - 1].region == block.region and n - start < DIALOG_BLOCKS:
            start -= 1
        while end + 1 < len(blocks) and blocks[end + 1].region == block.region and end - start < DIALOG_BLOCKS:
            end += 1
        return out + [n] + [k for k in range(start, end + 1) if k != n]
    out.append(n)
    if block.kind == "field":  # the form's other fields around it
        out += [k for k in (n - 2, n - 1, n + 1, n + 2) if 0 <= k < len(blocks) and blocks[k].kind == "field"]
        return out
    if block.kind in ("row", "header"):
        return out
    before = next((k for k in range(n - 1, max(-1, n - 3), -1) if not furniture[k]), None)
    after = [k for k in range(n + 1, min(len(blocks), n + 1 + 2 * AFTER)) if not furniture[k]][:AFTER]
    section = section_of(blocks, n, furniture)
    return out + after + ([before] if before is not None else []) + ([section] if section is not None else [])


def section_of(blocks: list[Block], n: int, furniture: list[bool]) -> int | None:
    """The heading of the section block n sits in: the nearest heading above it (a titled text on a DOM page:
    'Issue subscriptions · You are automatically subscribed to ...'), at most SECTION_REACH blocks up."""
    for k in range(n - 1, max(-1, n - 1 - SECTION_REACH), -1):
        if furniture[k]:
            continue
        if opens_section(blocks[k]):
            return k
    return None


def section_lines(blocks: list[Block], n: int, furniture: list[bool]) -> list[int]:
    """The blocks of the section block n titles (a heading or a titled text), up to the next title; none when n titles
    nothing or the section is longer than SECTION_BLOCKS."""
    if not opens_section(blocks[n]):
        return []
    out: list[int] = []
    for k in range(n + 1, len(blocks)):
        if opens_section(blocks[k]):
            break
        if len(out) == SECTION_BLOCKS:
            return []
        if not furniture[k]:
            out.append(k)
    return out


def opens_section(block: Block) -> bool:
    """A heading, or a text that titles what follows it (`titles_section`)."""
    return block.kind == "heading" or titles_section(block)


def titles_section(block: Block) -> bool:
    """A text that opens a section: a short title of words, then a sentence that says what the section is for ('Issue
    subscriptions · You are automatically subscribed to ...'). A list item is not one: its title is an id ('NEX-856 ·
    Refactor notification service architecture · Backend')."""
    if block.kind != "text":
        return False
    parts = block.text.split(" · ")
    title = parts[0]
    return (
        len(parts) >= 2
        and 2 < len(title) <= SECTION_TITLE
        and title[:1].isupper()
        and title[-1:] not in ".:!?"
        and not any(c.isdigit() for c in title)
        and (parts[1].endswith(".") or len(parts[1].split()) >= SECTION_SENTENCE)
    )


def render(blocks: list[Block], chosen: set[int]) -> str:
    """The chosen blocks in page order, one a line, gaps marked; a row under its table's header."""
    out, last = [], -1
    for n in sorted(chosen):
        if n != last + 1:
            out.append("…")
        block = blocks[n]
        if tokens_of(block.text) > BLOCK_TOKENS:
            block = replace(block, text=block.text[: BLOCK_TOKENS * 3] + " …")
        out.append(shown_line(block))
        last = n
    if chosen and last < len(blocks) - 1:
        out.append("…")
    return "\n".join(out)


def page_excerpt(text: str, query: dict[str, float], phrases: list[str], idf: dict[str, float],
                 lines_df: LineCounts | None, max_tokens: int, site: str = "") -> tuple[str, float]:  # fmt: skip
    """(excerpt, match score) of `text` for one query (see Excerpter)."""
    return Excerpter(query, phrases, idf, lines_df).excerpt(text, max_tokens, site)
