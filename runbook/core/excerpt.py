"""The part of a page worth showing for a question: the lines that match it, with a little context, in page order.

Works on the raw page: the query's terms and phrases are found with one regex scan each, and only the lines that
end up shown (and their neighbours) are cleaned and checked against the boilerplate counts.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .boilerplate import LineCounts
from .text import _BARE, _HAS_WORD, clean_line, line_hash

BEFORE, AFTER = 1, 4
"""Context kept around a matching line: grids and forms put a row's values on the lines after its label."""
HEAD_SHARE = 0.2
"""Share of an excerpt kept for the top of the page's own content (headings, messages, record counts)."""
HEAD_SCAN = 400
"""Lines scanned from the top for that opening content."""
HEAD_BATCH = 40
"""Opening lines whose boilerplate verdicts are looked up together (the scan usually stops within a few batches)."""
TOP_LINES, TOP_SHARE = 2, 0.6
"""The lines that match a page best (`Excerpter.best_lines`): at most this many, scoring this share of the best."""
BOILERPLATE_FACTOR = 0.3
MIN_IDF = 1.0


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


class Excerpter:
    """Cuts excerpts for one query; remembers boilerplate verdicts across the pages it reads."""

    def __init__(self, query: dict[str, float], phrases: list[str], idf: dict[str, float], lines_df: LineCounts | None):
        # terms on most pages (idf under MIN_IDF) would mark half the page as matching: they only count in BM25
        self.weights = {t: w * idf.get(t, 1.0) for t, w in query.items() if idf.get(t, 1.0) >= MIN_IDF}
        self.phrases = [p for p in phrases if len(p) >= 2]
        self.bonus = 2.0 * (max(self.weights.values()) if self.weights else 1.0)
        self.lines_df = lines_df
        self._boiler: dict[tuple[str, str], bool] = {}
        self.site = ""
        self.best_lines: list[str] = []
        """The best-matching lines (cleaned) of the last page excerpted."""

    def is_boilerplate(self, body: str) -> bool:
        key = (self.site, body)
        found = self._boiler.get(key)
        if found is None:
            found = bool(
                self.lines_df is not None
                and self.lines_df.is_boilerplate(np.asarray([line_hash(body, self.site)], dtype="<u8"), self.site)[0]
            )
            self._boiler[key] = found
        return found

    def prefetch(self, bodies) -> None:
        """Boilerplate verdicts for many line bodies in one lookup (one numpy call per line is the slow way)."""
        missing = list({b for b in bodies if b and (self.site, b) not in self._boiler})
        if not missing:
            return
        if self.lines_df is None:
            verdicts = [False] * len(missing)
        else:
            hashes = np.fromiter((line_hash(b, self.site) for b in missing), dtype="<u8", count=len(missing))
            verdicts = self.lines_df.is_boilerplate(hashes, self.site).tolist()
        self._boiler.update(((self.site, b), bool(v)) for b, v in zip(missing, verdicts))

    def excerpt(self, text: str, max_tokens: int, site: str = "") -> tuple[str, float]:
        """(excerpt, match score) of one page of `site` within about `max_tokens`."""
        self.site = site
        lines = text.split("\n")
        scores = self._line_scores(text, lines)
        chosen = self._choose(lines, scores, max_tokens)
        best = sorted(scores, key=lambda n: -scores[n])
        self.best_lines = [
            clean_line(lines[n]).strip() for n in best[:TOP_LINES] if scores[n] >= TOP_SHARE * scores[best[0]]
        ]
        top = [scores[n] for n in best[:5]]
        return _render(lines, chosen), float(sum(top))

    def header_score(self, header: str) -> float:
        """Phrases found in a state's URL or title (e.g. '/f/books'): they count like a matching page line."""
        low = header.lower()
        return self.bonus * sum(1 for p in self.phrases if phrase_pattern(p).search(low))

    def _line_scores(self, text: str, lines: list[str]) -> dict[int, float]:
        low = text.lower()
        # line number of a character offset: newline positions found in C, looked up in one batch per pattern
        newlines = np.flatnonzero(np.frombuffer(low.encode("utf-32-le"), dtype=np.uint32) == 10)
        scores: dict[int, float] = {}
        for term, weight in self.weights.items():
            starts = [m.start() for m in term_pattern(term).finditer(low) if _word_start(low, m.start())]
            for n in set(np.searchsorted(newlines, starts).tolist()):
                scores[n] = scores.get(n, 0.0) + weight
        for phrase in self.phrases:
            starts = [m.start() for m in phrase_pattern(phrase).finditer(low)]
            for n in np.searchsorted(newlines, starts).tolist():
                scores[n] = scores.get(n, 0.0) + self.bonus
        bodies = {n: clean_line(lines[n]).strip() for n in scores}
        self.prefetch(bodies.values())
        for n, body in bodies.items():
            if not body or self.is_boilerplate(body):
                scores[n] *= BOILERPLATE_FACTOR  # the site's furniture: shown only when nothing better matches
        return scores

    def _choose(self, lines: list[str], scores: dict[int, float], max_tokens: int) -> dict[int, str]:
        chosen: dict[int, str] = {}
        spent = 0

        def shown(i: int) -> str | None:
            return shown_line(lines[i])

        def says_something(i: int) -> bool:
            return _says_something(lines[i])

        head_limit = int(max_tokens * HEAD_SHARE)
        for i in range(min(len(lines), HEAD_SCAN)):  # the page's own opening lines, past the site's menus
            if i % HEAD_BATCH == 0:  # verdicts for the next lines in one lookup
                self.prefetch(
                    s.strip() for s in map(shown, range(i, min(len(lines), HEAD_SCAN, i + HEAD_BATCH))) if s is not None
                )
            line = shown(i)
            if line is None or self.is_boilerplate(line.strip()):
                continue
            cost = len(line) // 3 + 1
            if spent + cost > head_limit:
                break
            chosen[i] = line
            spent += cost
        for i in sorted(scores, key=lambda n: -scores[n]):
            if scores[i] <= 0 or spent >= max_tokens:
                break
            for j in _around(lines, i, shown, says_something):
                if j in chosen:
                    continue
                line = shown(j)
                assert line is not None  # _around gives only shown lines
                cost = len(line) // 3 + 1  # a close, cheap estimate; packing counts exactly
                if spent + cost > max_tokens:
                    break
                chosen[j] = line
                spent += cost
        return chosen


@functools.lru_cache(maxsize=50_000)
def shown_line(raw: str) -> str | None:
    """A page line as an excerpt shows it (cleaned), or None for a line without words. Pages repeat their menus'
    lines on every state, and the windows around matches ask for each line many times: cached per distinct line."""
    line = clean_line(raw)
    return line if line.strip() and _HAS_WORD.search(line) and not _BARE.match(line) else None


@functools.lru_cache(maxsize=50_000)
def _says_something(raw: str) -> bool:
    """Shown, and its names hold a word (see _says_nothing)."""
    line = shown_line(raw)
    return line is not None and not _says_nothing(line)


def _around(lines: list[str], i: int, shown, says_something) -> list[int]:
    """Line i with BEFORE shown lines before it and AFTER after it, counting only lines that say something new: an
    accessibility tree repeats each cell's name as its text child, which would halve how far a row's values reach."""
    before = []
    for j in range(i - 1, max(-1, i - 4 * BEFORE - 1), -1):
        if says_something(j):
            before.append(j)
            if len(before) == BEFORE:
                break
    after, last = [], shown(i) or ""
    for j in range(i + 1, min(len(lines), i + 4 * AFTER + 1)):
        if not says_something(j):
            continue
        line = shown(j)
        body = line.strip()
        if body[:1] in "'\"" and body.strip("'\" ") in last:
            continue  # the previous line's name again
        after.append(j)
        last = line
        if len(after) == AFTER:
            break
    return sorted(before) + ([i] if shown(i) is not None else []) + after


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")


def _says_nothing(line: str) -> bool:
    """A tree line whose names hold no word: `strong ''`, `row ''`, an icon font's glyphs (`'\\ue605\\ue605'`)."""
    if "'" not in line and '"' not in line:
        return False  # no name at all (most lines of a text page)
    names = [a or b for a, b in _QUOTED.findall(line)]
    return bool(names) and not any(re.search(r"\w", _ESCAPE.sub("", name)) for name in names)


_INDENT = re.compile(r"^[\t ]+")


def _render(lines: list[str], chosen: dict[int, str]) -> str:
    """Chosen lines in page order, indentation as one space per level, gaps marked."""
    out, last = [], -1
    for i in sorted(chosen):
        if i != last + 1:
            out.append("…")
        out.append(_INDENT.sub(lambda m: " " * min(len(m.group(0)), 8), chosen[i]))
        last = i
    if chosen and last < len(lines) - 1:
        out.append("…")
    return "\n".join(out)


def page_excerpt(
    text: str,
    query: dict[str, float],
    phrases: list[str],
    idf: dict[str, float],
    lines_df: LineCounts | None,
    max_tokens: int,
    site: str = "",
) -> tuple[str, float]:
    """(excerpt, match score) of `text` for one query (see Excerpter)."""
    return Excerpter(query, phrases, idf, lines_df).excerpt(text, max_tokens, site)
