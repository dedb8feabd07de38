"""Method C: a coding agent searches the store inside a sandbox and hands back spans; they become the context.

    memory = CodingAgentMemory(store, policy="anthropic", model="claude-sonnet-4-5", sandbox="docker")
    context = memory.query("What is the latest price of ...?", budget=8000)

One sandbox per query (store read-only). The chosen spans are expanded from the store (goal, url, time, action,
error, thought, page text, screenshot), most important first, and packed into the budget with the agent's analysis
on top. A loop that stops without `finish` still returns what the agent looked at, marked as such.
"""
from __future__ import annotations

import logging
import os
import re
import time
from collections import Counter
from typing import Any

from ..agent import get_policy
from ..agent.loop import AgentLoop, AgentRun, Limits
from ..agent.prompts import system_prompt, user_prompt
from ..agent.tools import MAX_SPAN_STATES, ToolBox, ToolError
from ..agent.transcript import TranscriptWriter, transcript_path
from ..agent.types import Message, Policy, Span
from ..budget import count_tokens, count_tokens_batch, truncate_to_tokens
from ..context import Context, EvidenceItem, pack
from ..llm.config import Settings, load_settings
from ..question import analyze
from ..errors import StoreError, UnsafeStoreFile
from ..query_input import check_query
from ..store import Store
from ..store.catalog import TrajectoryRow

log = logging.getLogger(__name__)

MIN_PAGE_TOKENS = 200
"""A page cut below this says too little: the budget goes to fewer states instead."""
PAGE_CONTEXT_LINES = 2
"""Lines kept around each line of a page that mentions the question's or the analysis's terms."""
NOT_CHOSEN = "seen by the agent, not chosen"


class CodingAgentMemory:
    """Method C over one store. `policy` is a name (offline, anthropic, openai) or a ready Policy object."""

    name = "c"

    def __init__(self, store: Store | str | os.PathLike, *, policy: str | Policy | None = None,
                 model: str | None = None, sandbox: str | None = None, max_steps: int | None = None,
                 max_seconds: float | None = None, max_tokens: int | None = None, max_cost: float | None = None,
                 output_tokens: int | None = None, transcripts: str | os.PathLike | None = None,
                 shortlist: int | None = None, settings: Settings | None = None,
                 sandbox_options: dict[str, Any] | None = None):
        self.store = store if isinstance(store, Store) else Store(store)
        self._policy_object = None if policy is None or isinstance(policy, str) else policy
        overrides = {"policy": policy if isinstance(policy, str) else None, "model": model, "sandbox": sandbox,
                     "max_steps": max_steps, "max_seconds": max_seconds, "max_tokens": max_tokens,
                     "max_cost": max_cost, "output_tokens": output_tokens,
                     "transcripts": str(transcripts) if transcripts else None, "shortlist": shortlist}
        self.settings = (settings or load_settings()).with_overrides(**overrides)
        self.sandbox_options = dict(sandbox_options or {})
        self._row_cache: dict[str, TrajectoryRow] | None = None
        self._retriever = None
        self.limits = Limits(max_steps=int(self.settings.max_steps), max_seconds=float(self.settings.max_seconds),
                             max_tokens=int(self.settings.max_tokens), max_cost=self.settings.max_cost,
                             output_tokens=int(self.settings.output_tokens))

    def insert(self, trajectory) -> str:
        """Insert one trajectory into the store; method C needs nothing derived beyond the store's summaries."""
        with self.store.writer() as writer:
            return writer.insert(trajectory).status

    def make_policy(self) -> Policy:
        if self._policy_object is not None:
            return self._policy_object
        name = self.settings.get("policy", "offline")
        model = self.settings.model if name != "offline" else None
        return get_policy(name, self.settings, model=model)

    def query(self, question: str, *, budget: int, image: str | None = None) -> Context:
        """Run the agent on `question` in a fresh sandbox and pack what it found into `budget` tokens."""
        from ..sandbox import get_sandbox

        started = time.perf_counter()
        question, image = check_query(question, image)
        policy = self.make_policy()
        model = getattr(policy, "model", None)
        path = transcript_path(question, self.settings.transcripts)
        self._row_cache = None  # the store may have grown since the last query
        user = Message("user", user_prompt(question, overview=self.overview(), has_image=bool(image),
                                           shortlist=self.shortlist(question)),
                       parts=[{"type": "image", "value": str(image)}] if image else [])
        with TranscriptWriter(path) as transcript:
            with get_sandbox(self.settings.get("sandbox", "auto"), self.store.root, **self.sandbox_options) as box:
                toolbox = ToolBox(box, call_seconds=self.limits.call_seconds, check_spans=self.check_spans)
                loop = AgentLoop(policy, toolbox, self.limits, transcript=transcript,
                                 price=self.settings.price(model), model=model)
                run = loop.run(system_prompt(), user)
            context = self.context_of(question, budget, run)
            context.latency_s = time.perf_counter() - started
            context.meta.update(policy=policy.name, model=model, sandbox=box.name, transcript=str(path))
            transcript.record("result", items=len(context.items), tokens=context.tokens, budget=budget,
                              latency_s=round(context.latency_s, 3), analysis=context.analysis,
                              citations=[item.citation() for item in context.items])
        return context

    def shortlist(self, question: str) -> list[dict]:
        """Method R's top states, when the `shortlist` setting asks for them and the store has pools."""
        k = int(self.settings.get("shortlist", 0) or 0)
        if k <= 0:
            return []
        if self._retriever is None:
            from ..retrieval import Retriever

            self._retriever = Retriever(self.store)
        try:
            return self._retriever.shortlist(question, k)
        except StoreError:
            return []  # no pools: the agent starts from the question alone

    # -- the store's view ----------------------------------------------------------------------------------------
    def overview(self) -> list[str]:
        """A few facts about the store for the agent's first message: size, sites, time range."""
        rows = self.store.rows()
        if not rows:
            return ["the store is empty"]
        sites = Counter(row.site or "(none)" for row in rows)
        times = sorted(t for row in rows for t in (row.first_ts, row.last_ts) if t)
        facts = [f"{len(rows):,} trajectories, {sum(r.n_states for r in rows):,} states"
                 + (f", recorded {times[0][:10]} .. {times[-1][:10]}" if times else ""),
                 "sites: " + ", ".join(f"{site} ({n})" for site, n in sites.most_common(12))]
        return facts

    def _rows(self) -> dict[str, TrajectoryRow]:
        """Catalog rows by id and by folder name (the agent may cite either), read once per query."""
        if self._row_cache is None:
            rows: dict[str, TrajectoryRow] = {}
            for row in self.store.rows():
                rows.setdefault(row.dir, row)
                rows[row.id] = row
            self._row_cache = rows
        return self._row_cache

    def check_spans(self, spans: list[Span]) -> None:
        """ToolError naming the first span whose trajectory or states the store does not have."""
        rows = self._rows()
        for span in spans:
            row = rows.get(span.trajectory_id)
            if row is None:
                raise ToolError(f"no trajectory {span.trajectory_id!r} in the store; use the ids printed by search "
                                f"or summaries/trajectories.tsv, e.g. {next(iter(rows), 'wa-shopping-21')!r}")
            if span.end_state_index >= row.n_states:
                raise ToolError(f"trajectory {row.id} has states 0-{row.n_states - 1}; the span "
                                f"{span.start_state_index}-{span.end_state_index} goes past its end")

    # -- from a run to a context ---------------------------------------------------------------------------------
    def context_of(self, question: str, budget: int, run: AgentRun) -> Context:
        """The packed Context of a run: its spans, or what the agent saw when it did not finish."""
        if run.finished:
            spans, analysis, label = run.spans, run.analysis, ""
        else:
            spans = self.seen_spans(run.seen)
            analysis = (f"The agent stopped before choosing its evidence ({run.stop.reason}). The states below are "
                        f"the ones it looked at most; they were not checked as an answer.")
            label = NOT_CHOSEN
        focus = focus_terms(question, analysis)
        items = self.expand(spans, label=label)
        fit_pages(items, budget - count_tokens(analysis) - 8, focus)
        context = pack(question, budget, [item for item, _ in items], analysis=analysis, method="c",
                       store_root=str(self.store.root))
        context.meta.update(steps=run.steps, stop=run.stop.kind, stop_reason=run.stop.reason,
                            finished=run.finished, tokens_used=run.tokens, cost=run.cost,
                            agent_seconds=round(run.seconds, 3), spans=[s.to_json() for s in spans])
        return context

    def seen_spans(self, seen: list[tuple[str, int]]) -> list[Span]:
        """Single-state spans of what the agent looked at most, valid ones only, up to the states limit."""
        rows = self._rows()
        spans: list[Span] = []
        for ref, index in seen:
            row = rows.get(ref)
            if row is not None and 0 <= index < row.n_states:
                spans.append(Span(row.id, index, index))
            if len(spans) == MAX_SPAN_STATES:
                break
        return spans

    def expand(self, spans: list[Span], *, label: str = "") -> list[tuple[EvidenceItem, list["PageSlot"]]]:
        """One EvidenceItem per span, with its pages; states an earlier span covered are left out (splitting the
        span where they sat)."""
        rows = self._rows()
        covered: set[tuple[str, int]] = set()
        out = []
        for span in spans:
            row = rows.get(span.trajectory_id)
            if row is None:
                continue
            indices = [i for i in range(span.start_state_index, min(span.end_state_index, row.n_states - 1) + 1)
                       if (row.id, i) not in covered]
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

    def span_item(self, row: TrajectoryRow, indices: list[int], states: dict[int, tuple[dict[str, str], str]], *,
                  label: str = "") -> tuple[EvidenceItem, list["PageSlot"]]:
        """The item for consecutive states of one trajectory: per state its header lines and page text."""
        folder = self.store.layout.trajectory_dir(row.dir)
        slots, screenshot, first = [], None, None
        for index in indices:
            header, page = states[index]
            first = first or header
            if screenshot is None and header.get("screenshot"):
                screenshot = self.stored_screenshot(folder / header["screenshot"])
            slots.append(PageSlot(state_header(index, header), page))
        item = EvidenceItem(trajectory_id=row.id, text="", state_index=indices[0],
                            end_state_index=indices[-1] if len(indices) > 1 else None,
                            url=(first or {}).get("url", ""), timestamp=(first or {}).get("time") or None,
                            path=self.store.layout.relative(self.store.state_path(row.id, indices[0])),
                            kind="span" if len(indices) > 1 else "state",
                            label=label or outcome_label(row), goal=row.goal or "", screenshot=screenshot)
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
    """One state inside an item: its header lines and its page text (which fit_pages may cut)."""

    __slots__ = ("header", "page")

    def __init__(self, header: str, page: str):
        self.header, self.page = header, page


def state_header(index: int, header: dict[str, str]) -> str:
    lines = [f"state {index} | {header.get('time', '')} | {header.get('url', '')}"]
    for key in ("title", "action", "error", "thought"):
        if header.get(key):
            lines.append(f"{key}: {header[key]}")
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


def focus_terms(question: str, analysis: str) -> list[str]:
    """Words and phrases a page line should mention to be worth keeping when the page must be cut."""
    terms: list[str] = []
    for text in (question, analysis):
        if text:
            found = analyze(text)
            terms += [p for p in found.phrases] + [t for t in found.terms if len(t) > 2]
    seen: set[str] = set()
    return [t for t in terms if not (t.lower() in seen or seen.add(t.lower()))]


def fit_pages(items: list[tuple[EvidenceItem, list[PageSlot]]], room: int, focus: list[str]) -> None:
    """Cut the longest pages first, to one shared cap, so the chosen states fit `room` tokens together.

    Headers (url, action, error, thought) are never cut. A page is cut around its lines that mention `focus`
    terms, not just at its head, because the line that answers the question can sit anywhere in a long page.
    """
    slots = [slot for _, item_slots in items for slot in item_slots]
    if not slots:
        return
    sizes = count_tokens_batch([slot.page for slot in slots])
    fixed = sum(item.measure() for item, _ in items) - sum(sizes)
    cap = water_level(sizes, room - fixed)
    if cap is None:
        return
    cap = max(cap, MIN_PAGE_TOKENS)
    for slot, size in zip(slots, sizes):
        if size > cap:
            slot.page = focus_page(slot.page, focus, cap)
    for item, item_slots in items:
        item.text = render_pages(item_slots)


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
    scores = [sum(1 for p in patterns if p.search(line)) for line in lines]
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
