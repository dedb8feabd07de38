"""Method R's query path on the host: the shared ranking (runbook.core.recall: BM25 over the pools, fusion, excerpts,
latest/older labels) turned into evidence items cut to the budget, in the order notes, events, slices."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..budget import count_tokens, head_and_tail
from ..context import EvidenceItem
from ..core.blocks import Page
from ..core.excerpt import Excerpter
from ..core.findings import View, findings
from ..core.hits import Hit
from ..core.layout import state_relpath
from ..core.pools import PoolError, undo_fingerprints
from ..core.pools import read_manifest as core_read_manifest
from ..core.question import QuestionAnalysis, analyze, names_label
from ..core.recall import Found, Recall, RecallSettings, ScanCandidates
from ..core.text import tokenize
from ..errors import StoreError
from ..store import Store
from .storage import safe_opener, store_error

log = logging.getLogger(__name__)

_STEP_REPLY = re.compile(r"  → page: [^\n]*")
"""What the page said back after a step of a procedure note (pools/notes.py)."""
_ANSWER = re.compile(r"\s*(?:send_msg_to_user|done|answer|stop|report_infeasible)\(")
FINDING_VIEWS = 60
"""The best slices whose pages the findings read."""
FACT_KINDS, LEAD_SLICES = ("static", "dynamic"), 3
"""For a question about a fact on a page, the best state slices lead the context, before notes and events: the
answer is read first (measured: the notes and events ahead of them put it 1-2k tokens deep)."""
SHARES = {"procedure": (0.20, 0.15), "gotcha": (0.25, 0.20), "static": (0.05, 0.05), "dynamic": (0.05, 0.10)}
"""Budget shares (notes, events) per question kind; the rest, and whatever they leave unused, goes to slices."""


class Search:
    """Method R's answer to one question: its evidence items, the question read, what did not fit, and what its
    findings work out from the best pages."""

    __slots__ = ("analysis", "findings", "items", "left_out")

    def __init__(self, items: list[EvidenceItem], analysis: QuestionAnalysis, left_out: int, findings: list[str]):
        self.items, self.analysis, self.left_out, self.findings = items, analysis, left_out, findings

    def analysis_text(self) -> str:
        """The context's analysis: the findings first (they lead with the answer where one can be computed), then
        how the question was read."""
        return "\n".join([*self.findings, self.analysis.summary()])


@dataclass
class RetrievalSettings(RecallSettings):
    """Knobs of method R: the ranking's (RecallSettings, shared with the sandbox's `recall`) and how its hits are
    cut into evidence items (defaults measured on the dev and generated sets)."""

    slice_tokens: int | None = None
    """Cap of one slice excerpt; default budget/16 within [150, 1200] (500 at 8k: more pages beat longer ones)."""
    event_tokens: int = 200
    note_tokens: int = 450
    shares: dict = field(default_factory=lambda: dict(SHARES))


class Generation:
    """One stamp of the pools with the catalog's goals, loaded once and never changed: every step of a query reads
    the same one. A new stamp gets a new Generation, and a query that started on the old one finishes on it (a
    Recall reloaded in place under a running query once ranked one stamp's documents with the next one's index:
    an IndexError, a 500)."""

    def __init__(self, recall: Recall, rows: list):
        self.recall = recall
        self.stamp: int = recall._loaded().stamp
        self.goals = {row.id: row.goal for row in rows}

    def goal(self, trajectory_id: str) -> str:
        return self.goals.get(trajectory_id, "")


class _LoadedOnce(Recall):
    """A Recall that loads its snapshot once and never reloads it (its stamp is its generation's)."""

    def load(self) -> None:
        if self.snapshot is None:
            super().load()

    @property
    def stamp(self) -> int:
        return self._loaded().stamp

    @property
    def trajectories(self) -> set[str]:
        return set(self._loaded().manifest["trajectories"])

    @property
    def added(self) -> dict[str, str]:
        """id -> catalog fingerprint of each version the stamp's last commit added (core.pools.UNDO)."""
        return undo_fingerprints(self._loaded().manifest)


class Retriever:
    """Searches the pools of one store; safe to share between threads (each call reads one Generation)."""

    def __init__(self, store: Store, settings: RetrievalSettings | None = None):
        self.store = store
        self.settings = settings or RetrievalSettings()
        self._current: Generation | None = None
        self._pending: _LoadedOnce | None = None
        """Pools of a newer stamp than the current generation's, loaded while the catalog did not list all their
        trajectories yet (a writer commits the pools inside its catalog transaction, so they lead by a moment)."""
        self._loading = threading.RLock()  # re-entered once after a recovery

    @property
    def recall(self) -> Recall:
        """The ranking over the pools' current generation."""
        return self._load().recall

    def warm(self) -> None:
        """Load the pools and the tokenizer now, so that the first query pays only for its own work."""
        from ..budget import encoding

        encoding()
        try:
            self._load()
        except StoreError:
            pass  # no pools yet: the query says what to run

    def _load(self) -> Generation:
        """The generation of the pools' committed stamp: the one already loaded, or (once per stamp, whichever
        thread asks first) a new one; StoreError when the pools cannot be read.

        A new stamp is taken only once the catalog lists every trajectory its pools hold: until the writer's
        catalog transaction commits, queries keep the generation before it, so a query never cites a trajectory
        that a GET of /trajectories/<id> does not know (nor one whose insert is then rolled back)."""
        try:
            stamp = core_read_manifest(self.store.layout.pools, safe_opener(self.store.layout))["stamp"]
            current = self._current
            if current is not None and current.stamp == stamp:
                return current
            with self._loading:
                current = self._current
                if current is not None and current.stamp == stamp:
                    return current
                pending = self._pending
                if pending is None or pending.stamp < stamp:
                    pending = _LoadedOnce(self.store.root, self.settings, opener=safe_opener(self.store.layout))
                    pending.load()
                    self._pending = pending
                rows = self.store.rows()  # read after the pools: a trajectory listed here is committed
                versions = {row.id: row.fingerprint for row in rows}
                agrees = pending.trajectories <= versions.keys() and all(
                    versions.get(tid) == fp for tid, fp in pending.added.items()
                )
                if not agrees and not self.store.writing() and self.store.recover_if_idle():
                    # a writer killed between the pools' commit and the catalog's left the pools a commit ahead;
                    # recovery undid it (store/recovery.py): the undone stamp is never taken, the pools are read again
                    self._pending = None
                    return self._load()
                if not agrees and current is not None and not self.store.writing():
                    rows, agrees = self.store.rows(), True  # what the catalog lacks, it will not get: taken
                if current is None or agrees:
                    current = self._current = Generation(pending, rows)
                    self._pending = None
                return current
        except PoolError as exc:
            raise store_error(exc) from exc

    def slice_cap(self, budget: int) -> int:
        return self.settings.slice_tokens or max(150, min(1200, budget // 16))

    def search(
        self, question: str, budget: int, analysis: QuestionAnalysis | None = None
    ) -> tuple[list[EvidenceItem], QuestionAnalysis]:
        """Evidence items for `question`, already cut to fit `budget` in the order notes, events, slices."""
        result = self.search_counted(question, budget, analysis)
        return result.items, result.analysis

    def search_counted(self, question: str, budget: int, analysis: QuestionAnalysis | None = None) -> Search:
        """As `search`, with what the findings work out and how many hits did not fit the budget."""
        generation = self._load()  # one generation for the ranking and the packing
        found = generation.recall.find(analysis or analyze(question), slice_chars=self.slice_cap(budget) * 3)
        items = [item for _, item in self.pack(found, budget, generation=generation)]
        left_out = len(found.notes) + len(found.events) + len(found.slices) - len(items)
        shown = "\n".join(item.text for item in items)
        analysis = found.analysis.confirmed(lambda label: names_label(shown, label))
        return Search(items, analysis, left_out, self.findings(found))

    def findings(self, found: Found) -> list[str]:
        """What can be worked out from the best slices' pages (core.findings: counts, the latest value, the
        largest of a column), each citing its state."""
        views = [
            View(h.trajectory_id, h.state_index, h.timestamp or "", h.title, h.page, h.best_lines)
            for h in found.slices[:FINDING_VIEWS]
            if h.page is not None
        ]
        return findings(found.analysis, views)

    def find(self, question: str, budget: int, analysis: QuestionAnalysis | None = None) -> Found:
        """The ranked hits of every pool for `question` (slices cut for a context of `budget` tokens)."""
        return self._load().recall.find(analysis or analyze(question), slice_chars=self.slice_cap(budget) * 3)

    def scan_candidates(self, analysis: QuestionAnalysis, first: Sequence[str] = ()) -> ScanCandidates | None:
        """The runs C's scan reads of a large store (core.recall.Recall.scan_candidates); None: every run."""
        return self._load().recall.scan_candidates(analysis, first)

    def page_of(self, trajectory_id: str, index: int) -> tuple[dict[str, str], Page] | None:
        """(header, page) of one state as parsed at insert; None when the pools hold none for it."""
        try:
            return self._load().recall.page_of(trajectory_id, index)
        except StoreError:
            return None

    def excerpter(self, *analyses: QuestionAnalysis) -> Excerpter | None:
        """The one page cutter for these analyses (None without pools: pages are then cut as text)."""
        try:
            return self._load().recall.excerpter(*analyses)
        except StoreError:
            return None

    def term_shares(self, text: str) -> dict[str, float]:
        """{word of `text`: share of the stored states that have it}, from the state slices' index."""
        return self._load().recall.term_shares(sorted(set(tokenize(text))))

    def pack(
        self, found: Found, budget: int, reserve: int = 0, *, generation: Generation | None = None
    ) -> list[tuple[Hit, EvidenceItem]]:
        """The hits method R puts in a context of `budget` tokens, with their items: notes and events each within
        their share for the question's kind, then slices in what is left but `reserve` tokens. `generation`: the
        one `found` was ranked on (default: the current one; documents only grow, so its ids stay valid)."""
        generation = generation or self._load()
        note_share, event_share = self.settings.shares.get(found.analysis.kind, (0.1, 0.1))
        notes = _fill([(h, self.note_item(h)) for h in found.notes], int(budget * note_share))
        events = _fill([(h, self.event_item(h)) for h in found.events], int(budget * event_share))
        used = sum(item.tokens for _, item in notes + events)
        slices = self.fill_slices(found.slices, budget - used - reserve, generation)
        if found.analysis.kind in FACT_KINDS:  # a fact is on a page: the best pages come before the runs' notes
            return slices[:LEAD_SLICES] + notes + events + slices[LEAD_SLICES:]
        return notes + events + slices

    def fill_slices(self, hits: list[Hit], budget: int, generation: Generation) -> list[tuple[Hit, EvidenceItem]]:
        """As _fill, for slices: a view folded into one that is not packed before it is shown as its own page (a
        pointer 'the same page as ... above' to a page the budget left out would show nothing)."""
        out, spent, shown = [], 0, set()
        for hit in hits:
            if hit.same_as and hit.same_as not in shown:
                hit = hit.unfolded()
            item = self.slice_item(hit, generation)
            cost = item.measure()
            if spent + cost <= budget:
                out.append((hit, item))
                spent += cost
                shown.add(hit.id)
        return out

    def item(self, hit: Hit) -> EvidenceItem:
        """The evidence item of one recall hit, whatever its pool."""
        return {"notes": self.note_item, "events": self.event_item, "slices": self.slice_item}[hit.pool](hit)

    def note_item(self, hit: Hit) -> EvidenceItem:
        text = hit.text
        if count_tokens(text) > self.settings.note_tokens:
            # a long run's steps before what the pages said back to them: every control it used stays readable
            text = _STEP_REPLY.sub("", text)
        text, _ = head_and_tail(text, self.settings.note_tokens)
        return EvidenceItem(
            trajectory_id=hit.trajectory_id,
            text=text,
            state_index=hit.state_index,
            end_state_index=hit.end_state_index,
            url=hit.url,
            timestamp=hit.timestamp,
            path=f"pools/notes ({hit.kind or None})",
            kind="note",
            score=hit.score,
        )

    def event_item(self, hit: Hit) -> EvidenceItem:
        text, _ = head_and_tail(hit.text, self.settings.event_tokens)
        return EvidenceItem(
            trajectory_id=hit.trajectory_id,
            text=text,
            state_index=hit.state_index,
            end_state_index=hit.end_state_index,
            url=hit.url,
            timestamp=hit.timestamp,
            path="pools/events",
            kind="event",
            label=hit.label,
            score=hit.score,
        )

    def slice_item(self, hit: Hit, generation: Generation | None = None) -> EvidenceItem:
        generation = generation or self._load()
        body, repeat = _slice_text(hit), bool(hit.same_as)
        if repeat:  # another view of a page shown above: where and when, and what the agent said there, only
            first = generation.recall.doc(hit.same_as or "")
            where = f"trajectory {first.trajectory_id} state {first.state_index}" if first else "a state"
            action = (hit.header.get("action") or "").strip()
            body = f"(the same page as {where} above" + (", and here also:)\n" + "\n".join(hit.differs) if hit.differs
                                                         else ")")  # fmt: skip
            if _ANSWER.match(action) or hit.reply:  # the agent's answer there, or what its action led to
                body += f"\nnext action: {action[:300]}" + ("\nthe page then said: " + " | ".join(hit.reply) if
                                                           hit.reply else "")  # fmt: skip
        if hit.sighting_of:  # a corroborating view: its line is the point, kept short
            body = f"page: {hit.title}\n{hit.excerpt}"
        return EvidenceItem(
            trajectory_id=hit.trajectory_id,
            text=body,
            state_index=hit.state_index,
            url="" if repeat else hit.url,
            timestamp=hit.timestamp,
            path=state_relpath(hit.folder, hit.state_index),
            kind="state",
            label=hit.label.split(";")[0] if repeat else hit.label,
            goal="" if hit.sighting_of or repeat else generation.goal(hit.trajectory_id),
            score=hit.score,
            furniture_tokens=0 if repeat or hit.sighting_of else hit.furniture_tokens,
            repeat=repeat or bool(hit.sighting_of),
        )

    def shortlist(self, question: str, k: int = 20) -> list[dict]:
        """The top states for a question, as a starting shortlist (e.g. for method C): id, index, url, time, score."""
        return self._load().recall.shortlist(question, k)


def _action_lines(hit: Hit) -> str:
    header = hit.header
    lines = []
    if header.get("action"):
        lines.append(f"next action: {header['action'][:300]}")
        if hit.reply:  # what the action led to: the next page's message, whether or not that page is shown
            lines.append("the page then said: " + " | ".join(hit.reply))
    if header.get("error"):
        lines.append(f"error: {header['error'].splitlines()[0][:200]}")
    return "\n".join(lines)


def _slice_text(hit: Hit) -> str:
    header = hit.header
    head = [f"page: {header.get('title') or hit.title} (state {hit.state_index} of {hit.n_states})"]
    actions = _action_lines(hit)
    if actions:
        head.append(actions)
    return "\n".join(head) + "\n---\n" + hit.excerpt


def _fill(pairs: list[tuple[Hit, EvidenceItem]], budget: int) -> list[tuple[Hit, EvidenceItem]]:
    """(hit, item) pairs in order while their items fit `budget` (a smaller later item may still fit)."""
    out, spent = [], 0
    for hit, item in pairs:
        cost = item.measure()
        if spent + cost <= budget:
            out.append((hit, item))
            spent += cost
    return out
