"""The offline planner's second program in the sandbox: `detail` reads the states it chose and prints, per state,
the action with the element it clicked, the error, and the page lines worth quoting (JSON lines within a character
budget; `scan` in core/scan.py is the first step, and `rbplan` (core/plan.py) runs both in one call)."""

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .actions import describe, error_gist, split_actions
from .catalog import Catalog, load_catalog
from .files import open_regular
from .layout import state_relpath
from .patterns import pattern_regex, python_regex
from .reader import default_store_dir
from .scan import Printer
from .scanout import Step
from .statefile import parse_state

LINE_WIDTH = 200
QUOTE_WIDTH = 480
ERROR_WIDTH = 300
ACTION_WIDTH = 400
FURNITURE_PAGES, FURNITURE_SHARE = 3, 0.5
"""A line on at least 3 of the pages read together, and on half of them, is a menu or a header."""
_IDS = re.compile(r"\[\d+\]")
THOUGHT_SHARE = 0.3
"""A thought's sentence is quoted only when it carries this share of the question's weight ('I need to look up order
221' shares two common words with a question about order 133: a quote of it only costs the budget)."""
WEAK_LINE = 0.5
"""A line carrying less than this share of the best line's weight is not worth quoting."""
_VALUE_ATTR = re.compile(r"\b(?:value|checked|selected|aria-checked|aria-selected)=(?:'[^']*'|\"[^\"]*\"|\S+)")
_TAG_NAME = re.compile(r"<(\w+)")
_ESCAPED = re.compile(r"\\u[0-9a-fA-F]{4}|[\ue000-\uf8ff]")
"""Icon glyphs, escaped ('\\ue605') or not: private-use characters that say nothing."""
_AX_NAME = re.compile(r"^(?:\[\d+\]\s*)?[A-Za-z]+ '(.*?)'(?:,|$)")
_TAG_ID = re.compile(r"\bid=[\w-]+")
_BARE = re.compile(r"(?:\*?\[\d+\]\s*)?<[^>]*>|(?:\[\d+\]\s*)?\w+ ''(?:, \w+=\S+)*|\|[A-Z]+\([a-z]+\)\|.*")
"""A page line that carries no text of its own: a DOM tag, an unnamed accessibility node."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def read_state(root: str, d: str, index: int) -> tuple[str, list[str]]:
    """(the agent's thought, the page-text lines) of a state (empty when its file cannot be read)."""
    try:
        with open_regular(os.path.join(root, state_relpath(d, index)), encoding="utf-8", errors="replace") as fh:
            header, body, _ = parse_state(fh.read())
    except OSError:
        return "", []
    return header.get("thought", ""), body.splitlines()


def line_weight(line: str, compiled: list[re.Pattern], weights: list[float]) -> float:
    """The question weight a line (or sentence) carries: each pattern found in it counts once."""
    return sum(w for rx, w in zip(compiled, weights) if rx.search(line))


def best_sentence(text: str, compiled: list[re.Pattern], weights: list[float]) -> tuple[str, float]:
    """(the sentence of `text` that carries the most question weight, its weight)."""
    best, best_weight = "", 0.0
    for sentence in _SENTENCE_END.split(text):
        weight = line_weight(sentence, compiled, weights)
        if weight > best_weight:
            best, best_weight = sentence.strip(), weight
    return best, best_weight


def best_lines(
    lines: list[str], compiled: list[re.Pattern], weights: list[float], limit: int, after: int = 0
) -> list[str]:
    """The page lines that carry the most question weight, in page order; each with `after` lines of text after it.

    Values sit after their labels in both page formats (a grid row after its name cell, a DOM text under its tag),
    so a quoted label brings the value that follows it. A line inside an earlier quote is not quoted again, and
    lines far weaker than the best one are left out.
    """
    scored = []
    for n, line in enumerate(lines):
        if "://" in line:
            continue  # a tab bar or link target: the url is in the state's header already
        hit = [k for k, rx in enumerate(compiled) if rx.search(line)]
        if hit:
            scored.append((sum(weights[k] for k in hit), -n))
    scored.sort(reverse=True)
    chosen: list[tuple[int, str]] = []
    windows: list[tuple[int, int]] = []
    seen: set[str] = set()
    for weight, neg in scored:
        at = -neg
        text = lines[at].strip()
        if text[:60] in seen or weight < WEAK_LINE * scored[0][0]:
            continue
        quote, upto = [cut_line(text, compiled)], at
        if after:
            more, upto = following_text(lines, at, after)
            quote += more
        if any(a <= upto and at <= b for a, b in windows):
            continue
        seen.add(text[:60])
        windows.append((at, upto))
        chosen.append((at, " ⏎ ".join(dict.fromkeys(quote))[:QUOTE_WIDTH]))
        if len(chosen) >= limit:
            break
    return [quote for _, quote in sorted(chosen)]


def following_text(lines: list[str], at: int, count: int) -> tuple[list[str], int]:
    """(up to `count` lines after line `at` that carry text, compacted; the index of the last line looked at)."""
    out, last, previous = [], at, _name_of(lines[at])
    for n in range(at + 1, min(len(lines), at + 1 + 4 * count)):
        last = n
        text = compact_line(lines[n])
        name = _name_of(text)
        if text and name not in previous:  # a child repeating (part of) its parent's name adds nothing
            out.append(text[:LINE_WIDTH])
            if len(out) >= count:
                break
        previous = name or previous
    return out, last


def _name_of(line: str) -> str:
    """The visible name of an accessibility-tree line ("link 'View All'" -> "View All"), else the line."""
    m = _AX_NAME.search(line)
    return m.group(1) if m else line.strip()


def compact_line(line: str) -> str:
    """A page line as worth quoting: its text, an input tag cut to its value, or '' for a bare tag."""
    text = line.strip()
    if not text:
        return ""
    name = _AX_NAME.search(text)
    if name and not re.search(r"[^\W_]", _ESCAPED.sub("", name.group(1))) and "=" not in text:
        return ""  # an icon glyph or an empty name
    value = _VALUE_ATTR.search(text)
    if _BARE.fullmatch(text):
        if not value:
            return ""
        tag = _TAG_NAME.search(text)
        ident = _TAG_ID.search(text)
        return f"<{tag.group(1) if tag else 'input'}{' ' + ident.group(0) if ident else ''} {value.group(0)}>"
    return text


def cut_line(line: str, compiled: list[re.Pattern]) -> str:
    if len(line) <= LINE_WIDTH:
        return line
    first = min((m.start() for rx in compiled for m in [rx.search(line)] if m), default=0)
    start = max(0, min(first - LINE_WIDTH // 3, len(line) - LINE_WIDTH))
    return ("…" if start else "") + line[start : start + LINE_WIDTH] + ("…" if start + LINE_WIDTH < len(line) else "")


def described_action(action: str, lines: list[str]) -> str:
    """The action with the controls it used as the page's structure names them ("click link 'SALES'",
    "select_option combobox 'Show … per page' with '50'"), as the notes describe a run's steps."""
    if not action:
        return ""
    page = "\n".join(lines)
    return "; ".join(describe(one, page) for one in split_actions(action))[:ACTION_WIDTH]


@dataclass
class DetailParams:
    """Which states `detail` reads and how much it quotes (defaults: the offline planner's)."""

    states: list = field(default_factory=list)
    """[trajectory id, state index, page lines to quote (0: the action and error only)] per state."""
    patterns: list[dict] = field(default_factory=list)
    """The question's patterns, weighted by rarity: quoted lines favour rare terms."""
    max_chars: int = 3800
    """Characters printed (with the scan's, within the planner's view of one output)."""
    after: int = 6
    """Lines of text quoted after a matching line: values follow their labels."""

    @classmethod
    def from_dict(cls, params: dict) -> "DetailParams":
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in params.items() if key in names})


def detail(params: dict) -> None:
    """For each chosen state: time, url, the action with what it clicked, the error, the lines worth quoting."""
    detail_output(DetailParams.from_dict(params)).flush()


def detail_output(params: DetailParams, catalog: Catalog | None = None) -> Printer:
    """The Printer holding detail's lines; `catalog`: load_catalog's result when the caller has it already."""
    root = default_store_dir()
    catalog = catalog or load_catalog(root)
    compiled = [python_regex(pattern_regex(it)) for it in params.patterns]
    weights = [float(it.get("weight", 1.0)) for it in params.patterns]
    out = Printer(params.max_chars)
    read = {
        (tid, index): read_state(root, catalog.folder_of[tid], index)
        for tid, index, _ in params.states
        if catalog.state(tid, index) is not None
    }
    pages = {key: lines for key, (_, lines) in read.items()}
    names = [rx for rx, it in zip(compiled, params.patterns) if it.get("kind") == "phrase" and not it.get("derived")]
    common = furniture(
        {catalog.states[(catalog.folder_of[t], i)].url.split("?")[0]: lines for (t, i), lines in pages.items()}.values()
    )
    common = {line for line in common if not any(rx.search(line) for rx in names)}  # the thing asked about stays
    for tid, index, want_lines in params.states:
        m = catalog.state(tid, index)
        if m is None:
            continue
        lines = pages[(tid, index)]
        quoted, thought = [], ""
        if want_lines:
            kept = [line if _IDS.sub("", line).strip() not in common else "" for line in lines]
            quoted = best_lines(kept, compiled, weights, want_lines, params.after)
            # the agent's own words at this state, when they say more about the question than any page line
            # ('the map is centered on Singapore, but that does not matter'): the page shows, the thought explains
            sentence, weight = best_sentence(read[(tid, index)][0], compiled, weights)
            if (
                sentence
                and weight >= THOUGHT_SHARE * sum(weights)
                and weight > max((line_weight(line, compiled, weights) for line in lines), default=0.0)
            ):
                thought = sentence[:QUOTE_WIDTH]
        step = Step(
            trajectory_id=tid,
            state_index=index,
            time=m.time,
            url=m.url[:100],
            title=m.title[:80],
            action=described_action(m.action, lines),
            error=error_gist(m.error, ERROR_WIDTH),
            lines=quoted,
            thought=thought,
        )
        out.add(step.to_json(quoted=bool(want_lines)))
    return out


def furniture(pages: Iterable[list[str]]) -> set[str]:
    """Lines (element ids aside) on most of these pages (one per url: the same page seen twice shows the same
    content, not furniture), or naming the page: menus and headers."""
    pages = list(pages)
    counts = Counter(key for lines in pages for key in {_IDS.sub("", line).strip() for line in lines})
    floor = max(FURNITURE_PAGES, FURNITURE_SHARE * len(pages))
    common = {key for key, n in counts.items() if n >= floor}
    common |= {key for lines in pages for key in map(str.strip, lines[:3]) if key.startswith("RootWebArea")}
    return common
