"""Method C's spans turned into evidence: one item per run of consecutive states (header lines and page text of
each), pages cut around the lines that matter when the chosen states must share a budget."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from ..agent.types import Span
from ..budget import count_tokens, count_tokens_batch, truncate_to_tokens
from ..context import EvidenceItem
from ..core.actions import error_gist
from ..core.blocks import Page
from ..core.detail import ERROR_WIDTH
from ..core.excerpt import Excerpter
from ..core.question import QuestionAnalysis, analyze
from ..core.statefile import header_time
from ..errors import UnsafeStoreFile
from ..store import Store
from ..store.catalog import TrajectoryRow

log = logging.getLogger(__name__)

PageSource = Callable[[str, int], "tuple[dict[str, str], Page] | None"]
"""(trajectory id, state index) -> the state's header and structure as parsed at insert, or None."""

MIN_PAGE_TOKENS = 200
"""A page cut below this says too little: the budget goes to fewer states instead."""
PAGE_CONTEXT_LINES = 2
"""Lines kept around each line of a page that mentions the question's or the analysis's terms."""


class SpanExpander:
    """Expands spans of one store, given its catalog rows by id and by folder name."""

    def __init__(self, store: Store, rows: dict[str, TrajectoryRow], pages: PageSource | None = None):
        self.store = store
        self.rows = rows
        self.pages = pages
        """A state's structure as parsed at insert (the pools'), when there is one: its blocks are what is shown."""

    def expand(self, spans: list[Span], *, label: str = "") -> list[tuple[EvidenceItem, list[PageSlot]]]:
        """One EvidenceItem per span, with its pages; states an earlier span covered are left out (splitting the
        span where they sat)."""
        rows = self.rows
        covered: set[tuple[str, int]] = set()
        out = []
        for span in spans:
            row = rows.get(span.trajectory_id)
            if row is None:
                continue
            indices = [
                i
                for i in range(span.start_state_index, min(span.end_state_index, row.n_states - 1) + 1)
                if (row.id, i) not in covered
            ]
            covered.update((row.id, i) for i in indices)
            states = self.read_states(row, indices)
            out += [self.span_item(row, run, states, label=label) for run in consecutive_runs(list(states))]
        return out

    def read_states(self, row: TrajectoryRow, indices: list[int]) -> dict[int, tuple[dict[str, str], str]]:
        """index -> (header, page) of the states that can be read safely; a planted link is left out, with a
        warning, rather than followed out of the store."""
        states = {}
        for index in indices:
            try:
                states[index] = self.store.read_state(row.id, index)
            except UnsafeStoreFile as exc:
                log.warning("left out of the evidence: %s", exc)
        return states

    def span_item(
        self, row: TrajectoryRow, indices: list[int], states: dict[int, tuple[dict[str, str], str]], *, label: str = ""
    ) -> tuple[EvidenceItem, list[PageSlot]]:
        """The item for consecutive states of one trajectory: per state its header lines and page text."""
        folder = self.store.layout.trajectory_dir(row.dir)
        slots, screenshot, first = [], None, None
        for index in indices:
            header, page = states[index]
            first = first or header
            if screenshot is None and header.get("screenshot"):
                screenshot = self.stored_screenshot(folder / header["screenshot"])
            parsed = self.pages(row.id, index) if self.pages else None
            if parsed is not None:
                blocks = parsed[1]
                slots.append(
                    PageSlot(
                        state_header(index, header), blocks.shown(), blocks, row.site or "", header.get("title", "")
                    )
                )
            else:
                slots.append(PageSlot(state_header(index, header), page))
        item = EvidenceItem(
            trajectory_id=row.id,
            text="",
            state_index=indices[0],
            end_state_index=indices[-1] if len(indices) > 1 else None,
            url=(first or {}).get("url", ""),
            timestamp=header_time(first or {}),
            path=self.store.layout.relative(self.store.state_path(row.id, indices[0])),
            kind="span" if len(indices) > 1 else "state",
            label=label or outcome_label(row),
            goal=row.goal or "",
            screenshot=screenshot,
        )
        item.text = render_pages(slots)
        return item, slots

    def stored_screenshot(self, path) -> str | None:
        """The store-relative path of a screenshot that is a regular file in the store, else None (with a warning
        for a planted link): readers open it by path, so it is checked here."""
        try:
            with self.store.layout.open(path):
                return self.store.layout.relative(path)
        except UnsafeStoreFile as exc:
            log.warning("screenshot left out of the evidence: %s", exc)
        except FileNotFoundError:
            pass
        return None


def consecutive_runs(indices: list[int]) -> list[list[int]]:
    """[2, 3, 5, 6] -> [[2, 3], [5, 6]]."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][-1] + 1 == index:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


class PageSlot:
    """One state inside an item: its header lines and its page text (which fit_pages may cut), and the page's
    structure when the pools hold it (then the text is its blocks, and a cut keeps what the excerpt keeps)."""

    __slots__ = ("blocks", "furniture_tokens", "header", "page", "site", "title")

    def __init__(self, header: str, page: str, blocks: Page | None = None, site: str = "", title: str = ""):
        self.header, self.page, self.blocks, self.site, self.title = header, page, blocks, site, title
        self.furniture_tokens = 0


def state_header(index: int, header: dict[str, str]) -> str:
    """A state's header lines; its action error cut to the gist (a driver's retry log runs to 30 lines and 500
    tokens of 'waiting for element to be visible' that say nothing the first line and the reason do not)."""
    lines = [f"state {index} | {header.get('time', '')} | {header.get('url', '')}"]
    for key in ("title", "action", "error", "thought"):
        if header.get(key):
            lines.append(f"{key}: {error_gist(header[key], ERROR_WIDTH) if key == 'error' else header[key]}")
    return "\n".join(lines)


def render_pages(slots: list[PageSlot]) -> str:
    return "\n\n".join(f"{slot.header}\npage:\n{slot.page.rstrip()}" for slot in slots)


def outcome_label(row: TrajectoryRow) -> str:
    """'successful run' / 'failed run': procedures should come from the former, gotchas often from the latter."""
    if row.success == 1:
        return "successful run"
    if row.success == 0:
        return "failed run"
    return ""


def focus_terms(question: QuestionAnalysis, analysis: str) -> list[str]:
    """Words and phrases a page line should mention to be worth keeping when the page must be cut: the
    question's (analysed already) and those of the agent's analysis."""
    terms: list[str] = []
    for found in (question, analyze(analysis) if analysis else None):
        if found is not None:
            terms += [p for p in found.phrases] + [t for t in found.terms if len(t) > 2]
    seen: set[str] = set()
    out: list[str] = []
    for t in terms:  # the first spelling of each term, case aside
        if t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    return out


def fit_pages(
    items: list[tuple[EvidenceItem, list[PageSlot]]], room: int, focus: list[str], excerpter: Excerpter | None = None
) -> None:
    """Cut the longest pages first, to one shared cap, so the chosen states fit `room` tokens together.

    Headers (url, action, error, thought) are never cut. A page with its structure is cut by the excerpter (the
    one method R's slices use: heading, counts and messages, then the blocks that match with their table header
    or form); a page of plain text is cut around its lines that mention `focus` terms, not just at its head,
    because the line that answers the question can sit anywhere in a long page.
    """
    slots = [slot for _, item_slots in items for slot in item_slots]
    if not slots:
        return
    sizes = count_tokens_batch([slot.page for slot in slots])
    fixed = sum(item.measure() for item, _ in items) - sum(sizes)
    cap = water_level(sizes, room - fixed)
    cap = None if cap is None else max(cap, MIN_PAGE_TOKENS)
    for slot, size in zip(slots, sizes):
        if slot.blocks is not None and excerpter is not None:
            if cap is not None and size > cap:
                slot.page = excerpter.excerpt(slot.blocks, cap, slot.site, slot.title)[0]
                slot.furniture_tokens = excerpter.furniture_tokens
            else:
                slot.furniture_tokens = excerpter.furniture_in(slot.blocks, slot.site)
        elif cap is not None and size > cap:
            slot.page = focus_page(slot.page, focus, cap)
    for item, item_slots in items:
        item.text = render_pages(item_slots)
        item.furniture_tokens = sum(slot.furniture_tokens for slot in item_slots)


def water_level(sizes: list[int], room: int) -> int | None:
    """The largest cap with sum(min(size, cap)) <= room; None when everything fits uncut."""
    if sum(sizes) <= room:
        return None
    remaining, ordered = max(room, 0), sorted(sizes)
    for n, size in enumerate(ordered):
        share = remaining // (len(ordered) - n)
        if size > share:
            return share
        remaining -= size
    return None


def focus_page(page: str, focus: list[str], limit: int) -> str:
    """`page` within about `limit` tokens: the first lines, then the lines mentioning `focus` with their neighbours."""
    lines = page.splitlines()
    costs = count_tokens_batch(lines)
    patterns = [re.compile(re.escape(term), re.I) for term in focus[:40]]
    # one pass with all terms finds the few lines that mention any; only those are scored term by term
    anywhere = re.compile("|".join(p.pattern for p in patterns), re.I) if patterns else None
    scores = [sum(1 for p in patterns if p.search(line)) if anywhere and anywhere.search(line) else 0 for line in lines]
    keep: set[int] = set()
    spent = 0
    note_cost = 24
    ranked = [0, 1, 2] + sorted((i for i, s in enumerate(scores) if s), key=lambda i: (-scores[i], i))
    for center in ranked:
        for i in range(max(0, center - PAGE_CONTEXT_LINES), min(len(lines), center + PAGE_CONTEXT_LINES + 1)):
            if i not in keep and spent + costs[i] + 2 <= limit - note_cost:
                keep.add(i)
                spent += costs[i] + 1
    for i in range(len(lines)):  # fill what is left with the page's head, in order
        if i not in keep and spent + costs[i] + 2 <= limit - note_cost:
            keep.add(i)
            spent += costs[i] + 1
    if not keep:  # one enormous line (DOM text without breaks): plain head cut
        return truncate_to_tokens(page, limit)[0]
    out, last = [], -1
    for i in sorted(keep):
        if i != last + 1:
            out.append("  …")
        out.append(lines[i])
        last = i
    if last != len(lines) - 1:
        out.append("  …")
    kept_tokens = sum(costs[i] for i in keep)
    out.append(f"[page cut to {kept_tokens:,} of {sum(costs):,} tokens, around the lines that mention the question]")
    text = "\n".join(out)
    return text if count_tokens(text) <= limit else truncate_to_tokens(text, limit)[0]
