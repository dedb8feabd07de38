"""Method R's query path: rank the pools with BM25, fuse the rankings (slices, events pointing at states, recency),
order hits in time, cut each hit to what the question needs, and return evidence items: notes, events, slices."""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..budget import head_and_tail
from ..context import EvidenceItem
from ..errors import StoreError, UnsafeStoreFile
from ..question import QuestionAnalysis, analyze
from ..store import Store
from .bm25 import BM25Index, load_index, query_terms
from .boilerplate import LineCounts, load_line_counts
from .excerpt import Excerpter
from .fusion import collapse_duplicates, latest_first, rrf
from .storage import PoolSnapshot
from .text import tokenize

log = logging.getLogger(__name__)

SHARES = {"procedure": (0.20, 0.15), "gotcha": (0.25, 0.20), "static": (0.05, 0.05), "dynamic": (0.05, 0.10)}
"""Budget shares (notes, events) per question kind; the rest, and whatever they leave unused, goes to slices."""
RECENT_FLOOR = 0.5
"""For 'current value' questions, states scoring at least this share of the best BM25 score are ranked by time."""


@dataclass
class Settings:
    """Knobs of method R (defaults measured on the dev and generated sets)."""

    context_weight: float = 2.0
    """tf multiplier of a slice's context (actions around it, thought, goal) against its page text."""
    candidates: int = 300
    """States ranked by BM25 before fusion."""
    reread: int = 60
    """Fused candidates whose page is read to cut an excerpt and check the exact phrases."""
    slice_tokens: int | None = None
    """Cap of one slice excerpt; default budget/16 within [150, 1200] (500 at 8k: more pages beat longer ones)."""
    event_tokens: int = 200
    note_tokens: int = 450
    shares: dict = field(default_factory=lambda: dict(SHARES))


class Retriever:
    """Searches the pools of one store."""

    def __init__(self, store: Store, settings: Settings | None = None):
        self.store = store
        self.settings = settings or Settings()
        self._stamp = None

    def warm(self) -> None:
        """Load the pools and the tokenizer now, so that the first query pays only for its own work."""
        from ..budget import encoding

        encoding()
        try:
            self._load()
        except StoreError:
            pass  # no pools yet: the query says what to run

    def _load(self) -> None:
        snapshot = PoolSnapshot(self.store.layout)
        if self._stamp == snapshot.stamp:
            return
        if snapshot.empty and len(self.store):
            raise StoreError(f"the store at {self.store.root} has no retrieval pools: run `runbook reindex` "
                             "(inserts made with `runbook insert` keep them up to date afterwards)")
        self.snapshot = snapshot
        self.slices = load_index(snapshot, "slices", {"page": 1.0, "context": self.settings.context_weight})
        self.events = load_index(snapshot, "events", {"event": 1.0})
        self.notes = load_index(snapshot, "notes", {"note": 1.0})
        self.lines: LineCounts = load_line_counts(snapshot)
        self.goals = {row.id: row.goal for row in self.store.rows()}
        self._stamp = snapshot.stamp

    # -- ranking ---------------------------------------------------------------------------------------------------
    def _query(self, analysis: QuestionAnalysis) -> dict[str, float]:
        terms = tokenize(" ".join(analysis.terms))
        phrase_terms = tokenize(" ".join(analysis.phrases))
        return query_terms(terms, phrase_terms)

    def _idf(self, index: BM25Index, query: dict[str, float]) -> dict[str, float]:
        n = max(int(index.live.sum()), 1)
        out = {}
        for term in query:
            tid = index.term_ids.get(term)
            df = 0 if tid is None else int(index.matrix.indptr[tid + 1] - index.matrix.indptr[tid])
            out[term] = math.log1p((n - df + 0.5) / (df + 0.5))
        return out

    def rank_states(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[tuple[int, float]]:
        """Slice documents fused from BM25 over slices, events pointing at them, and recency (current values)."""
        docs = self.snapshot.docs("slices")
        scored = self.slices.top(query, self.settings.candidates * (2 if _wants_time(analysis) else 1))
        bm25 = [d for d, _ in scored]
        by_state = {(docs[d]["t"], docs[d]["i"]): d for d in bm25}
        rankings, weights = [bm25], [1.0]
        event_docs = self.snapshot.docs("events")
        via_events = []
        for e, _ in self.events.top(query, 100):
            ev = event_docs[e]
            for idx in (ev["j"], ev["i"]):
                d = by_state.get((ev["t"], idx))
                if d is not None and d not in via_events:
                    via_events.append(d)
        rankings.append(via_events)
        weights.append(0.5)
        if _wants_time(analysis) and scored:
            # the current value sits on the newest page that matches about as well as the best one
            near_best = [d for d, score in scored if score >= RECENT_FLOOR * scored[0][1]]
            recent = sorted(near_best, key=lambda d: docs[d].get("ts") or "", reverse=True)
            rankings.append(recent)
            weights.append(1.0 if analysis.wants_latest else 0.5)
        return rrf(rankings, weights)

    # -- items -----------------------------------------------------------------------------------------------------
    def search(self, question: str, budget: int, analysis: QuestionAnalysis | None = None
               ) -> tuple[list[EvidenceItem], QuestionAnalysis]:
        """Evidence items for `question`, already cut to fit `budget` in the order notes, events, slices."""
        items, analysis, _left_out = self.search_counted(question, budget, analysis)
        return items, analysis

    def search_counted(self, question: str, budget: int, analysis: QuestionAnalysis | None = None
                       ) -> tuple[list[EvidenceItem], QuestionAnalysis, int]:
        """As `search`, and how many items were found but left out because they did not fit the budget."""
        self._load()
        analysis = analysis or analyze(question)
        query = self._query(analysis)
        if not query or self.snapshot.empty:
            return [], analysis, 0
        note_share, event_share = self.settings.shares.get(analysis.kind, (0.1, 0.1))
        found = [self._note_items(analysis, query), self._event_items(analysis, query)]
        notes = _fill(found[0], int(budget * note_share))
        events = _fill(found[1], int(budget * event_share))
        used = sum(i.tokens for i in notes + events)
        found.append(self._slice_items(analysis, query, budget))
        slices = _fill(found[2], budget - used)
        kept = notes + events + slices
        return kept, analysis, sum(map(len, found)) - len(kept)

    def _note_items(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[EvidenceItem]:
        docs = self.snapshot.docs("notes")
        prefer = {"procedure": "procedure", "gotcha": "hints"}.get(analysis.kind)
        hits = []
        for d, score in self.notes.top(query, 40):
            doc = docs[d]
            if prefer and doc.get("kind") == prefer:
                score *= 1.5
            if analysis.kind == "procedure" and doc.get("ok") is False:
                score *= 0.6
            hits.append((score, doc))
        hits.sort(key=lambda h: -h[0])
        items = []
        for score, doc in hits:
            text, _ = head_and_tail(doc["text"], self.settings.note_tokens)
            items.append(EvidenceItem(trajectory_id=doc["t"], text=text, state_index=doc["i"],
                                      end_state_index=doc["j"], url=doc.get("u") or "", timestamp=doc.get("ts"),
                                      path=f"pools/notes ({doc.get('kind')})", kind="note",
                                      score=round(score, 3)))
        return items

    def _event_items(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[EvidenceItem]:
        docs = self.snapshot.docs("events")
        hits = [dict(docs[d], score=score) for d, score in self.events.top(query, 30)]
        hits = latest_first(hits, _page_key, reorder=_wants_time(analysis))
        items = []
        for hit in hits:
            text, _ = head_and_tail(hit["text"], self.settings.event_tokens)
            items.append(EvidenceItem(trajectory_id=hit["t"], text=text, state_index=hit["i"],
                                      end_state_index=hit["j"], url=hit.get("u") or "", timestamp=hit.get("ts"),
                                      path="pools/events", kind="event", label=hit.get("label", ""),
                                      score=round(hit["score"], 3)))
        return items

    def _slice_items(self, analysis: QuestionAnalysis, query: dict[str, float], budget: int) -> list[EvidenceItem]:
        docs = self.snapshot.docs("slices")
        fused = self.rank_states(analysis, query)[: self.settings.reread]
        cap = self.settings.slice_tokens or max(150, min(1200, budget // 16))
        excerpter = Excerpter(query, list(analysis.phrases), self._idf(self.slices, query), self.lines)
        hits = []
        for d, fused_score in fused:
            doc = dict(docs[d])
            try:
                header, page = _read_state(self.store, doc)
            except UnsafeStoreFile as exc:
                log.warning("left out of the evidence: %s", exc)
                continue
            doc["excerpt"], doc["match"] = excerpter.excerpt(page, cap, doc.get("s") or "")
            doc["match"] += excerpter.header_score(f"{doc.get('u') or ''}\n{doc.get('ti') or ''}")
            doc["header"], doc["fused"] = header, fused_score
            hits.append(doc)
        by_match = sorted(range(len(hits)), key=lambda n: -hits[n]["match"])
        final = rrf([list(range(len(hits))), by_match])
        hits = [hits[n] for n, _ in final]
        hits = latest_first(hits, _page_key, reorder=_wants_time(analysis))
        items = []
        same_as = collapse_duplicates([h["excerpt"] for h in hits])
        for hit, dup in zip(hits, same_as):
            body = _slice_text(hit)
            if dup is not None:
                first = hits[dup]
                body = (f"(page excerpt identical to trajectory {first['t']} state {first['i']} above)\n"
                        + _action_lines(hit))
            items.append(EvidenceItem(trajectory_id=hit["t"], text=body, state_index=hit["i"], url=hit.get("u") or "",
                                      timestamp=hit.get("ts"), path=_state_rel(hit), kind="state",
                                      label=hit.get("label", ""), goal=self.goals.get(hit["t"], ""),
                                      score=round(hit["fused"], 5)))
        return items

    def shortlist(self, question: str, k: int = 20) -> list[dict]:
        """The top states for a question, as a starting shortlist (e.g. for method C): id, index, url, time, score."""
        self._load()
        analysis = analyze(question)
        query = self._query(analysis)
        if not query or self.snapshot.empty:
            return []
        docs = self.snapshot.docs("slices")
        return [{"trajectory_id": docs[d]["t"], "state_index": docs[d]["i"], "url": docs[d].get("u"),
                 "timestamp": docs[d].get("ts"), "score": round(s, 5)}
                for d, s in self.rank_states(analysis, query)[:k]]


def _read_state(store: Store, doc: dict) -> tuple[dict, str]:
    from ..store.statefile import parse_state

    return parse_state(store.layout.read_text(store.layout.state_file(doc["d"], doc["i"])))


def _state_rel(doc: dict) -> str:
    from ..store.layout import STATES_DIR, TRAJECTORIES_DIR, state_filename

    return f"{TRAJECTORIES_DIR}/{doc['d']}/{STATES_DIR}/{state_filename(doc['i'])}"


def _action_lines(hit: dict) -> str:
    header = hit["header"]
    lines = []
    if header.get("action"):
        lines.append(f"next action: {header['action'][:300]}")
    if header.get("error"):
        lines.append(f"error: {header['error'].splitlines()[0][:200]}")
    return "\n".join(lines)


def _slice_text(hit: dict) -> str:
    header = hit["header"]
    head = [f"page: {header.get('title', '')} (state {hit['i']} of {hit['n']})"]
    actions = _action_lines(hit)
    if actions:
        head.append(actions)
    return "\n".join(head) + "\n---\n" + hit["excerpt"]


def _wants_time(analysis: QuestionAnalysis) -> bool:
    return analysis.wants_latest or analysis.kind == "dynamic"


def _page_key(hit: dict) -> tuple:
    """Hits on the same page: same site, same path (and hash route), same title."""
    url = hit.get("u") or ""
    parts = urlsplit(url)
    return hit.get("s"), parts.netloc, parts.path.rstrip("/"), parts.fragment.split("?")[0], hit.get("ti")


def _fill(items: list[EvidenceItem], budget: int) -> list[EvidenceItem]:
    """Items in order while they fit `budget` (a smaller later item may still fit)."""
    out, spent = [], 0
    for item in items:
        cost = item.measure()
        if spent + cost <= budget:
            out.append(item)
            spent += cost
    return out
