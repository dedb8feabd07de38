"""Method R's ranking, shared by the host (runbook.pools) and the `recall` program in the query sandbox.

    recall = Recall(store_root)
    found = recall.find("What price does the admin list for WS05-XS-Black?", slice_chars=1500)
    found.notes, found.events, found.slices    # ranked Hits: trajectory, states, url, time, text, excerpt

Each pool is ranked with BM25; states are fused from their own BM25 rank, the events that point at them and, for
'current value' questions, recency among the near-best; the best pages are read and cut to the lines that match;
the same page seen at different times is labelled latest or older. Cutting to a token budget is the host's job.
Every hit carries an `id` (n12, e34, s56: pool and document number) that stays valid for the pools' stamp.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import numpy as np

from .blocks import Page
from .bm25 import DEFAULT_FIELDS, BM25Index, idf, load_index, query_terms
from .boilerplate import LineCounts, load_line_counts
from .excerpt import Excerpter
from .findings import COUNT_QUESTION, at_moment
from .fusion import collapse_duplicates, latest_first, rrf
from .hits import Hit
from .layout import POOLS_DIR, TRAJECTORIES_DIR
from .pools import Opener, PoolError, PoolSnapshot, read_manifest
from .question import QuestionAnalysis, analyze, is_name
from .scoring import FILLERS, names_page, page_words, title_words
from .text import line_hash, stem, tokenize

SIGHTING_SOURCES = 3
"""Best pages whose best-matching line is looked for on other states (static and dynamic questions)."""
MAX_SIGHTINGS = 12
MIN_SIGHTING_CHARS = 8
"""Shorter lines ('Search', a bare number) say too little to corroborate anything."""
MOMENT_CANDIDATES, MOMENT_FLOOR, MOMENT_WEIGHT = 3000, 0.5, 1.5
"""For a question that names a day or minute: the states at that moment among this many BM25 candidates that score
at least this share of the best, fused with this weight (the question says when; BM25 cannot)."""
WHOLE_PAGES, WHOLE_FACTOR = 1, 2.0
"""The best pages are shown whole (their own content, the site's furniture aside) when that fits in this many times
a slice's share, else excerpted to it: breadth gives way to depth where the answer most likely is."""
MATCH_WEIGHT = 0.5
"""Weight of the pages' own match (their best lines) against the fused ranking (BM25, events, the page a phrase
names, the moment asked about, recency) when the best pages are ordered."""
TITLE_WEIGHT = 1.0
"""Weight of the states whose title holds a phrase of the question (it names their page)."""
EVENT_APPEARED = 12
"""Lines an event shows of what appeared after its action: those that match the question, the rest in page order."""
DIFFER_TOKENS = 60
"""A view folded into an earlier one shows at most this many tokens of the lines only it has."""
RECENT_FLOOR = 0.5
"""For 'current value' questions, states scoring at least this share of the best BM25 score are ranked by time."""
SCAN_ALL_STATES = 40_000
"""Up to this many stored states, C's scan reads every state file (one ripgrep pass, about a second at 8,537); beyond,
it reads the runs R's index ranks best for the question (at 179,277 states a full scan took 7.5-20 s)."""
CANDIDATE_STATES, CANDIDATE_RUNS = 20_000, 1_000
"""A scan of a large store reads the runs of this many of the best states by BM25, at most this many runs (about
what the whole 928-trajectory store holds)."""
KIND_PREFIX = {"notes": "n", "events": "e", "slices": "s"}
POOLS = tuple(KIND_PREFIX)

T = TypeVar("T")


@dataclass
class RecallSettings:
    """Knobs of the ranking (defaults measured on the dev and generated sets)."""

    context_weight: float = 2.0
    """tf multiplier of a slice's context (actions around it, thought, goal) against its page text."""
    candidates: int = 300
    """States ranked by BM25 before fusion."""
    reread: int = 60
    """Fused candidates whose page is read to cut an excerpt and check the exact phrases."""
    notes: int = 40
    events: int = 30


@dataclass
class Found:
    """Ranked hits of one question, best first in each pool."""

    analysis: QuestionAnalysis
    notes: list[Hit] = field(default_factory=list)
    events: list[Hit] = field(default_factory=list)
    slices: list[Hit] = field(default_factory=list)


@dataclass(frozen=True)
class ScanCandidates:
    """What C's scan reads of a large store: R's best runs for the question, and where their pages are."""

    runs: list[str]
    """Trajectory ids, best first."""
    first_docs: dict[str, tuple[int, int]]
    """{trajectory id: (slice document of its state 0, states)} for the runs whose current slices are consecutive:
    state i's page record is document first + i, found without reading every document."""
    stamp: int
    """The pools' stamp the documents are of."""


@dataclass
class StateDocs:
    """Each current state's slice document, read once per stamp from every document."""

    by_state: dict[tuple[str, int], int]
    run_of: list[str | None]
    """The trajectory id of each document (None for an older generation's)."""
    first: dict[str, tuple[int, int]]
    """As ScanCandidates.first_docs, for every run."""

    @classmethod
    def read(cls, snapshot: PoolSnapshot) -> StateDocs:
        by_state = snapshot.state_docs()
        run_of: list[str | None] = [None] * len(snapshot.docs("slices"))
        runs: dict[str, list[tuple[int, int]]] = {}
        for (t, i), d in by_state.items():
            run_of[d] = t
            runs.setdefault(t, []).append((i, d))
        first = {}
        for t, states in runs.items():
            start = states[0][1] - states[0][0]
            # consecutive: state i is document start + i for every i in 0..n-1
            if all(d - i == start for i, d in states) and {i for i, _ in states} == set(range(len(states))):
                first[t] = (start, len(states))
        return cls(by_state, run_of, first)


def parse_id(text: str) -> tuple[str, int] | None:
    """'n12' -> ('notes', 12); None for anything else."""
    text = text.strip()
    pool = next((p for p, prefix in KIND_PREFIX.items() if text[:1] == prefix), None)
    return (pool, int(text[1:])) if pool and text[1:].isdigit() else None


class Recall:
    """The pools of one store, loaded once per manifest stamp. `load` reloads in place: one thread's (the sandbox's
    `recall`); a server's threads share runbook.pools.Retriever, which gives each query a Recall of its own stamp."""

    def __init__(
        self,
        store_root: str | os.PathLike,
        settings: RecallSettings | None = None,
        *,
        write_cache: bool = True,
        opener: Opener | None = None,
    ):
        self.root = Path(store_root)
        self.opener = opener
        self.settings = settings or RecallSettings()
        self.write_cache = write_cache
        self._state_docs: tuple[int, StateDocs] | None = None
        self._stamp = None
        self.snapshot: PoolSnapshot | None = None

    def load(self) -> None:
        """(Re)load the pools when their stamp changed; PoolError when the store has trajectories but no pools."""
        opener = [self.opener] if self.opener else []
        if self.snapshot is not None and read_manifest(self.root / POOLS_DIR, *opener)["stamp"] == self._stamp:
            return
        snapshot = PoolSnapshot(self.root / POOLS_DIR, *opener)
        if snapshot.empty and _has_trajectories(self.root):
            raise PoolError(
                f"the store at {self.root} has no retrieval pools: run `runbook reindex` "
                "(inserts made with `runbook insert` keep them up to date afterwards)"
            )
        fields = dict(DEFAULT_FIELDS)
        fields["slices"] = {"page": 1.0, "context": self.settings.context_weight}
        write = self.write_cache
        self.indexes: dict[str, BM25Index] = {p: load_index(snapshot, p, fields[p], write=write) for p in POOLS}
        self.lines: LineCounts = load_line_counts(snapshot, write=write)
        self.snapshot, self._stamp = snapshot, snapshot.stamp

    def _loaded(self) -> PoolSnapshot:
        """The snapshot load() read: the ranking methods below run after it."""
        assert self.snapshot is not None, "Recall.load() first"
        return self.snapshot

    # -- ranking ---------------------------------------------------------------------------------------------------
    def excerpter(self, *analyses: QuestionAnalysis) -> Excerpter:
        """The Excerpter for these analyses' terms and phrases (a question's, and the agent's analysis text):
        the one way a page is cut, for R's slices and C's spans alike."""
        self.load()
        terms = [t for a in analyses for t in a.terms]
        phrases = [p for a in analyses for p in a.phrases]
        query = query_terms(tokenize(" ".join(terms)), tokenize(" ".join(phrases)))
        return Excerpter(query, phrases, self.idf("slices", query), self.lines)

    def page_of(self, trajectory_id: str, index: int) -> tuple[dict[str, str], Page] | None:
        """(header, page) of a state as parsed at insert, or None when the pools hold none for it."""
        snapshot, state_docs = self._loaded_state_docs()
        d = state_docs.by_state.get((trajectory_id, index))
        if d is None:
            return None
        try:
            return snapshot.page(d)
        except (OSError, PoolError):
            return None

    def _loaded_state_docs(self) -> tuple[PoolSnapshot, StateDocs]:
        """The pools, and which document holds each current state (read once per stamp)."""
        self.load()
        snapshot = self._loaded()
        if self._state_docs is None or self._state_docs[0] != snapshot.stamp:
            self._state_docs = (snapshot.stamp, StateDocs.read(snapshot))
        return snapshot, self._state_docs[1]

    def scan_candidates(self, analysis: QuestionAnalysis, first: Iterable[str] = ()) -> ScanCandidates | None:
        """The runs C's scan reads of a store of more than SCAN_ALL_STATES states: `first` (R's own evidence),
        then the runs of the CANDIDATE_STATES best states by BM25; None for a smaller store (every run is read)."""
        self.load()
        index = self.indexes["slices"]
        if int(index.live.sum()) <= SCAN_ALL_STATES:
            return None
        snapshot, state_docs = self._loaded_state_docs()
        runs = dict.fromkeys(first)
        for d, _ in index.top(self.query(analysis), CANDIDATE_STATES):
            if len(runs) >= CANDIDATE_RUNS:
                break
            run = state_docs.run_of[d]
            if run is not None:
                runs.setdefault(run)
        where = state_docs.first
        return ScanCandidates(list(runs), {t: where[t] for t in runs if t in where}, snapshot.stamp)

    def query(self, analysis: QuestionAnalysis) -> dict[str, float]:
        return query_terms(tokenize(" ".join(analysis.terms)), tokenize(" ".join(analysis.phrases)))

    def term_shares(self, words: list[str]) -> dict[str, float]:
        """{word: share of the stored states whose slice has it}, for each word and its normal form ('heads',
        'head')."""
        index = self.indexes["slices"]
        n = max(int(index.live.sum()), 1)
        shares = {}
        for word in words:
            shares[word] = shares[stem(word)] = min(1.0, index.df(stem(word)) / n)
        return shares

    def idf(self, pool: str, query: dict[str, float]) -> dict[str, float]:
        index = self.indexes[pool]
        n = max(int(index.live.sum()), 1)
        return {term: float(idf(n, index.df(term))) for term in query}

    def rank_states(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[tuple[int, float]]:
        """Slice documents fused from BM25 over slices, events pointing at them, and recency (current values)."""
        docs = self._loaded().docs("slices")
        scored = self.indexes["slices"].top(query, self.settings.candidates * (2 if wants_time(analysis) else 1))
        bm25 = [d for d, _ in scored]
        by_state = {(docs[d]["t"], docs[d]["i"]): d for d in bm25}
        rankings, weights = [bm25], [1.0]
        event_docs = self._loaded().docs("events")
        via_events = []
        for e, _ in self.indexes["events"].top(query, 100):
            ev = event_docs[e]
            for idx in (ev["j"], ev["i"]):
                d = by_state.get((ev["t"], idx))
                if d is not None and d not in via_events:
                    via_events.append(d)
        rankings.append(via_events)
        weights.append(0.5)
        naming = [p.lower() for p in analysis.phrases if len(p) >= 4 and is_name(p)]
        if naming and scored:
            # a phrase of the question is a state's title, or part of it: the page the question names
            rankings.append(self.titled(naming, query, scored[0][1]))
            weights.append(TITLE_WEIGHT)
        if analysis.menu_paths and scored:
            # the question names a page by its menu path ('Sales > Invoices'): the states of that page
            rankings.append(self.named_pages(analysis.menu_paths, query, scored[0][1]))
            weights.append(TITLE_WEIGHT)
        if analysis.moments and scored:
            # the question names when ('on 2025-12-16 at 19:39'): the views of that moment that match it well enough
            rankings.append(self.at_moments(analysis.moments, query, scored[0][1]))
            weights.append(MOMENT_WEIGHT)
        if wants_time(analysis) and scored:
            # the current value sits on the newest page that matches about as well as the best one
            near_best = [d for d, score in scored if score >= RECENT_FLOOR * scored[0][1]]
            rankings.append(sorted(near_best, key=lambda d: docs[d].get("ts") or "", reverse=True))
            weights.append(1.0 if analysis.wants_latest else 0.5)
        return rrf(rankings, weights)

    def titled(self, phrases: list[str], query: dict[str, float], best: float) -> list[int]:
        """The states whose title holds one of `phrases`, among the BM25 candidates that match at least
        MOMENT_FLOOR as well as the best, best first."""
        docs = self._loaded().docs("slices")
        scored = self.indexes["slices"].top(query, MOMENT_CANDIDATES)
        floor = MOMENT_FLOOR * best
        return [
            d for d, score in scored if score >= floor and any(p in (docs[d].get("ti") or "").lower() for p in phrases)
        ]

    def named_pages(self, paths: Iterable[Iterable[str]], query: dict[str, float], best: float) -> list[int]:
        """The states whose title names one of the menu paths ('Sales > Invoices': 'Invoices / Operations / Sales')
        among the BM25 candidates that match at least MOMENT_FLOOR as well as the best, best first."""
        docs = self._loaded().docs("slices")
        words = page_words([list(path) for path in paths])
        floor = MOMENT_FLOOR * best
        named: dict[str, bool] = {}  # a store has few distinct titles: each is read once
        out = []
        for d, score in self.indexes["slices"].top(query, MOMENT_CANDIDATES):
            title = docs[d].get("ti") or ""
            if title not in named:
                named[title] = names_page(title, words)
            if score >= floor and named[title]:
                out.append(d)
        return out

    def at_moments(self, moments: tuple[tuple[str, str], ...], query: dict[str, float], best: float) -> list[int]:
        """The states recorded at the minutes a question names that match it at all, best first; else those of the
        days it names that match it at least MOMENT_FLOOR as well as the best (a day holds many runs; a minute, the
        few states of one)."""
        docs = self._loaded().docs("slices")
        scored = self.indexes["slices"].top(query, MOMENT_CANDIDATES)
        timed = [(d, docs[d].get("ts") or "", score) for d, score in scored]
        to_minute = [d for d, ts, _ in timed if any(m and at_moment(ts, day, m) for day, m in moments)]
        floor = MOMENT_FLOOR * best
        return to_minute or [d for d, ts, s in timed if s >= floor and any(at_moment(ts, day) for day, _ in moments)]

    def find(self, question: str | QuestionAnalysis, *, slice_chars: int = 1500) -> Found:
        """Ranked notes, events and state slices for `question`; slices are cut to about `slice_chars`."""
        self.load()
        analysis = analyze(question) if isinstance(question, str) else question
        found = Found(analysis)
        query = self.query(analysis)
        if not query or self._loaded().empty:
            return found
        found.notes = self.note_hits(analysis, query)
        found.events = self.event_hits(analysis, query)
        found.slices = self.slice_hits(analysis, query, slice_chars)
        return found

    def note_hits(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[Hit]:
        docs = self._loaded().docs("notes")
        prefer = {"procedure": "procedure", "gotcha": "hints"}.get(analysis.kind)
        hits = []
        for d, score in self.indexes["notes"].top(query, self.settings.notes):
            doc = docs[d]
            if prefer and doc.get("kind") == prefer:
                score *= 1.5
            if analysis.kind == "procedure" and doc.get("ok") is False:
                score *= 0.6
            hits.append(Hit.from_doc(doc, f"n{d}", "notes", score=round(score, 3)))
        hits.sort(key=lambda h: -h.score)
        return hits

    def event_hits(self, analysis: QuestionAnalysis, query: dict[str, float]) -> list[Hit]:
        docs = self._loaded().docs("events")
        excerpter = Excerpter(query, list(analysis.phrases), self.idf("slices", query), self.lines)
        hits = []
        for d, score in self.indexes["events"].top(query, self.settings.events):
            hit = Hit.from_doc(docs[d], f"e{d}", "events", score=round(score, 3))
            if docs[d].get("a"):  # more appeared than its text shows: the lines that match the question first
                hit.text = with_appeared(hit.text, excerpter.pick_lines(docs[d]["a"], EVENT_APPEARED, hit.site))
            hits.append(hit)
        return latest_first(hits, hit_page, reorder=wants_time(analysis))

    def slice_hits(self, analysis: QuestionAnalysis, query: dict[str, float], slice_chars: int) -> list[Hit]:
        snapshot = self._loaded()
        docs = snapshot.docs("slices")
        fused = self.rank_states(analysis, query)[: self.settings.reread]
        excerpter = Excerpter(query, list(analysis.phrases), self.idf("slices", query), self.lines)
        hits = []
        for d, fused_score in fused:
            hit = Hit.from_doc(docs[d], f"s{d}", "slices")
            try:
                header, page = snapshot.page(d)  # the structure parsed at insert
            except (OSError, PoolError):
                continue  # a page that cannot be read safely is left out, not guessed at
            hit.excerpt, hit.match = excerpter.excerpt(
                page, slice_chars // 3, hit.site, header.get("title") or hit.title
            )
            hit.page, hit.furniture_tokens = page, excerpter.furniture_tokens
            hit.best_lines = excerpter.best_lines
            hit.match += excerpter.header_score(f"{hit.url}\n{hit.title}")
            hit.header, hit.score = header, round(fused_score, 5)
            hits.append(hit)
        by_match = sorted(range(len(hits)), key=lambda n: -hits[n].match)
        rankings, weights = [list(range(len(hits))), by_match], [1.0, MATCH_WEIGHT]
        if analysis.menu_paths and fused:  # the page the question names keeps its place after the excerpts' match
            named = set(self.named_pages(analysis.menu_paths, query, self.indexes["slices"].top(query, 1)[0][1]))
            rankings.append([n for n, hit in enumerate(hits) if int(hit.id[1:]) in named])
            weights.append(TITLE_WEIGHT)
        if COUNT_QUESTION.search(analysis.question):  # 'how many invoices': the page that counts them keeps its place
            terms = set(analysis.terms)
            rankings.append([n for n, hit in enumerate(hits) if counts_what_is_named(hit, terms)])
            weights.append(TITLE_WEIGHT)
        hits = [hits[n] for n, _ in rrf(rankings, weights)]
        hits = latest_first(hits, hit_page, reorder=wants_time(analysis))
        hits = at_named_minute_first(hits, analysis.moments)
        for hit, dup in zip(hits, collapse_duplicates([h.excerpt for h in hits])):
            if dup is not None:
                hit.same_as = hits[dup].id
                first = hits[dup].page
                if hit.page is not None and first is not None:
                    hit.differs = excerpter.differences(hit.page, first, DIFFER_TOKENS, hit.site, hit.title)
        for hit in [h for h in hits if h.same_as is None and h.page is not None][:WHOLE_PAGES]:
            hit.excerpt = excerpter.whole(hit.page, int(slice_chars // 3 * WHOLE_FACTOR), hit.site, hit.title)  # type: ignore[arg-type]
            hit.furniture_tokens = excerpter.furniture_tokens
        if analysis.kind in ("static", "dynamic"):
            hits = self.with_sightings(hits, newest_first=wants_time(analysis))
        return hits

    def with_sightings(self, hits: list[Hit], *, newest_first: bool = False) -> list[Hit]:
        """After each of the best pages, the other states that show its best-matching line (oldest first, or newest
        first for 'current value' questions): views of the same fact that corroborate it, or show how it changed.
        A state already among the hits moves up here; the others come compact, the line alone."""
        docs, live = self._loaded().docs("slices"), self.indexes["slices"].live
        by_doc = {int(h.id[1:]): h for h in hits}
        placed: set[int] = set()
        out, added = [], 0
        for rank, hit in enumerate(hits):
            if int(hit.id[1:]) in placed:
                continue  # moved up as a sighting
            out.append(hit)
            placed.add(int(hit.id[1:]))
            if rank >= SIGHTING_SOURCES or hit.same_as:
                continue
            for line in hit.best_lines:
                if len(line) < MIN_SIGHTING_CHARS or added >= MAX_SIGHTINGS:
                    continue
                key = line_hash(line, hit.site)
                if self.lines.is_boilerplate(np.asarray([key], dtype="<u8"), hit.site)[0]:
                    continue  # the site's furniture, not a fact
                found = sorted(
                    (int(d) for d in self.lines.docs_with(key) if live[d] and int(d) not in placed),
                    key=lambda d: docs[d].get("ts") or "",
                    reverse=newest_first,
                )
                found = runs_first(found, lambda d: doc_view(docs[d]), [hit_view(h) for h in out])
                for d in found[: MAX_SIGHTINGS - added]:
                    placed.add(d)
                    out.append(
                        by_doc.get(d)
                        or Hit.from_doc(
                            docs[d],
                            f"s{d}",
                            "slices",
                            excerpt=line,
                            sighting_of=hit.id,
                            label=f"shows the same line as {hit.trajectory_id} state {hit.state_index}",
                        )
                    )
                    added += 1
        return out

    def shortlist(self, question: str, k: int = 20) -> list[dict]:
        """The top states for a question: id, index, url, time, score."""
        self.load()
        analysis = analyze(question)
        query = self.query(analysis)
        if not query or self._loaded().empty:
            return []
        docs = self._loaded().docs("slices")
        return [
            {
                "trajectory_id": docs[d]["t"],
                "state_index": docs[d]["i"],
                "url": docs[d].get("u"),
                "timestamp": docs[d].get("ts"),
                "score": round(s, 5),
            }
            for d, s in self.rank_states(analysis, query)[:k]
        ]

    def doc(self, hit_id: str) -> Hit | None:
        """The pool document a hit id names (n12, e34, s56), as a Hit, or None."""
        self.load()
        parsed = parse_id(hit_id)
        if parsed is None:
            return None
        pool, n = parsed
        docs = self._loaded().docs(pool)
        return Hit.from_doc(docs[n], hit_id, pool) if 0 <= n < len(docs) else None


def runs_first(items: list[T], view_of: Callable[[T], tuple], taken: list[tuple]) -> list[T]:
    """`items` (in their given order) in two groups: first a view from each run `taken` has none of, and any view
    right next to a taken one on the same page (the same view, continued); then the rest. A view is (run, state
    index, page key). Another run's view of a line corroborates it, the same run's later views mostly repeat it
    (measured: one run's ten views of a forum page took every sighting place, and the other runs that saw the same
    post were left out)."""
    pages = {(t, i): page for t, i, page in taken}
    runs = {t for t, _ in pages}
    views = [view_of(item) for item in items]
    chosen: set[int] = set()
    grew = True
    while grew:  # again until no view joins: a view continued backwards in time joins on a later pass
        grew = False
        for n, (t, i, page) in enumerate(views):
            if n not in chosen and (t not in runs or page in (pages.get((t, i - 1)), pages.get((t, i + 1)))):
                chosen.add(n)
                pages[(t, i)] = page
                runs.add(t)
                grew = True
    return [items[n] for n in sorted(chosen)] + [items[n] for n in range(len(items)) if n not in chosen]


def counts_what_is_named(hit: Hit, terms: set[str]) -> bool:
    """Whether the hit's page shows a count ('308 records found') and its own name (the title's first part, fillers
    aside: 'Invoices' of 'Invoices / Operations / Sales') is words the question says: the list a count question asks
    about, not a page that only mentions it."""
    if hit.page is None or not any(b.kind == "count" and not b.furniture for b in hit.page.blocks):
        return False
    own = " ".join(w for w in (hit.title or "").split(" / ")[0].split() if w.lower() not in FILLERS)
    words = title_words(own)
    return bool(words) and words <= terms


def at_named_minute_first(hits: list[Hit], moments: tuple[tuple[str, str], ...]) -> list[Hit]:
    """The hits recorded at a minute the question names ('on 2025-12-16 at 08:32 UTC') first, in their order: a
    minute points at one visit, which the words of a page visited every day cannot tell from the others."""
    minutes = [(day, minute) for day, minute in moments if minute]
    if not minutes:
        return hits
    named = [h for h in hits if h.timestamp and any(at_moment(h.timestamp, day, m) for day, m in minutes)]
    return named + [h for h in hits if h not in named] if named else hits


def with_appeared(text: str, lines: list[str]) -> str:
    """An event's stored text with its 'appeared:' line made of `lines` instead of the first ones."""
    out = [line for line in text.split("\n") if not line.startswith("appeared: ")]
    at = next((n for n, line in enumerate(out) if line.startswith("disappeared: ")), len(out))
    return "\n".join([*out[:at], "appeared: " + " | ".join(lines), *out[at:]])


def wants_time(analysis: QuestionAnalysis) -> bool:
    return analysis.wants_newest


def doc_view(doc: dict) -> tuple:
    """(run, state index, page key) of a stored slice document."""
    return doc["t"], doc["i"], page_key(doc.get("s") or "", doc.get("u") or "", doc.get("ti") or "")


def hit_view(hit: Hit) -> tuple:
    """(run, state index, page key) of a hit."""
    return hit.trajectory_id, hit.state_index, hit_page(hit)


def hit_page(hit: Hit) -> tuple:
    return page_key(hit.site, hit.url, hit.title)


def page_key(site: str, url: str, title: str) -> tuple:
    """Views of the same page: same site, same path (and hash route), same title."""
    parts = urlsplit(url)
    return site, parts.netloc, parts.path.rstrip("/"), parts.fragment.split("?")[0], title


def _has_trajectories(root: Path) -> bool:
    folder = root / TRAJECTORIES_DIR
    return folder.is_dir() and any(not p.name.startswith(".") for p in folder.iterdir())
