"""How the scan scores states: BM25 of the question's patterns over single states (core.weights' formula), plus the
trajectory's goal, the state's url and title, exact phrases, the names the question gives, the page a menu path
names and the site the question names; and the picks made from those scores (complements, newest strong matches,
trouble for gotchas)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import Catalog, StateKey, StateMeta, TrajectoryRow
from .question import normalize_term
from .weights import idf as bm25_idf
from .weights import term_weight

GOAL_WEIGHT = 0.8
"""A question term in the trajectory's goal counts this much of a saturated page term: the goal says what the run
was for."""
HEAD_WEIGHT = 1.0
"""A term in the state's url or title counts this much extra: it names the page."""
ANSWER_BOOST = 0.25
"""A state where the agent reported its answer (send_msg_to_user, done) scores this much more for fact questions."""
_ANSWER = re.compile(r"\s*(?:send_msg_to_user|done|answer|stop|report_infeasible)\(")
ANCHOR_BOOST = 1.0
"""A state showing every name the question gives (quoted labels, Capitalised names, ids) scores this much more."""
PHRASE_BONUS = 1.0
"""Phrases (names, ids, quoted labels) weigh this much more than single words."""
PAGE_BOOST = 1.0
"""A state whose title names a menu path the question gives ('Sales > Orders': 'Orders / Operations / Sales / ...')
scores this much more: it is the page the question is about, where every page of the site has the menu's words."""
SITE_BOOST = 0.6
"""States of the site the question names score this much more (x1.6)."""


@dataclass(slots=True)
class StateScore:
    """How well one state matches the question (score_states). Slotted, not frozen, as StateMeta is: one per state
    matched."""

    score: float
    coverage: float
    """The share of the question's weight its page and its run's goal cover."""
    matched: list[int]
    """The patterns its page matched (their indices), in order."""
    page_share: float
    """The share of the weight of the question's own words (not derived ones) its page alone has."""


Scores = dict[StateKey, StateScore]
"""score_states' result, by (folder, index)."""


@dataclass(frozen=True)
class WeightedPatterns:
    """The question's patterns as the scan weighs them."""

    items: list[dict]
    """The patterns (runbook.core.patterns: text, label, kind, stem, weight, derived)."""
    compiled: list[re.Pattern]
    """Each one's regex, for Python."""
    idf: list[float]
    """Each one's weight (weights_of)."""


FILLERS = frozenset("a an the my our your all this that these those some any new to of for in on with".split())
"""Words skipped when reading a goal's first words."""


def site_matches(
    rows: dict[str, TrajectoryRow], compiled: list[re.Pattern], site_terms: Iterable[int]
) -> dict[str, float]:
    """Sites whose name the question uses ('GitLab', 'admin', 'theme editor'): {site: share of its name's words
    the question has}; only the best share counts, so 'accounts' does not pull in 'linear-account-settings'
    when 'admin' names 'shopping_admin' better."""
    sites = {r.site for r in rows.values() if r.site}
    shares = {}
    for site in sites:
        words = [w for w in re.split(r"[-_\s]+", site) if w]
        n = sum(1 for w in words if any(compiled[k].fullmatch(w) for k in site_terms))
        if n:
            shares[site] = n / len(words)
    top = max(shares.values(), default=0)
    return {s: share for s, share in shares.items() if share == top}


def weights_of(items: list[dict], df: Mapping[int, int], n_states: int) -> list[float]:
    """Each pattern's weight: its BM25 idf among all states, times its own weight (phrases count more)."""
    return [
        float(bm25_idf(n_states, df[k]))
        * float(items[k].get("weight", 1.0))
        * (1 + PHRASE_BONUS * (items[k].get("kind") == "phrase"))
        for k in range(len(items))
    ]


@functools.lru_cache(maxsize=1 << 14)
def title_words(title: str) -> frozenset[str]:
    """The words of a page title in the question analysis's normal form (lower-case, plurals trimmed); a store has
    few distinct titles (857 among 8,537 states), so each is read once."""
    return frozenset(normalize_term(w) for w in re.findall(r"[a-z0-9]+", title.lower()))


def page_words(pages: Iterable[Sequence[str]]) -> list[list[frozenset[str]]]:
    """Each menu path of `pages` as the word sets of its steps (fillers aside: 'All Customers' is 'customer')."""
    return [
        [title_words(" ".join(w for w in step.split() if w.lower() not in FILLERS)) for step in path]
        for path in pages
        if path
    ]


def names_page(title: str, paths: Sequence[Sequence[frozenset[str]]]) -> bool:
    """Whether the title has every word of every step of one of the menu paths (`page_words`)."""
    words = title_words(title)
    return any(all(step <= words for step in path) for path in paths)


def score_states(
    tfs: Mapping[StateKey, Mapping[int, int]],
    catalog: Catalog,
    patterns: WeightedPatterns,
    *,
    sites: Iterable[str],
    answers: bool = False,
    anchors: Sequence[int] = (),
    pages: Sequence[Sequence[frozenset[str]]] = (),
) -> Scores:
    """Every state of `tfs` (the pattern matches per state) scored. `sites`: the sites the question names;
    `answers`: states where the agent reported its answer score more; `anchors`: the question's names
    (anchor_patterns); `pages`: the question's menu paths as `page_words`.

    Every term is weighed by its rarity among all states (BM25's idf, times the pattern's own weight).
    """
    idf, compiled, rows, states = patterns.idf, patterns.compiled, catalog.rows, catalog.states
    total_weight = sum(idf) or 1.0
    own = {k for k, it in enumerate(patterns.items) if not it.get("derived")}
    own_weight = sum(idf[k] for k in own) or 1.0
    goal_hits = {d: [k for k, rx in enumerate(compiled) if rx.search(r.goal)] for d, r in rows.items()}
    avg_len = sum(m.tokens for m in states.values()) / max(1, len(states))
    scores, named = {}, {}
    for key, tf in tfs.items():
        m = states.get(key)
        if m is None:
            continue
        site = rows[key[0]].site
        # the patterns in a fixed order: ripgrep prints its matches in a different order from run to run, and a
        # float sum in another order differs in its last bits, enough to swap two runs that tie (measured: 5 of
        # 242 generated questions changed from one run to the next)
        matched = sorted(tf)
        s = sum(idf[k] * term_weight(tf[k], m.tokens, avg_len) for k in matched)
        head = f"{m.url} {m.title}"
        s += HEAD_WEIGHT * sum(idf[k] for k in matched if compiled[k].search(head))
        goal = goal_hits.get(key[0], ())
        s += GOAL_WEIGHT * sum(idf[k] for k in goal)
        if sites and site in sites:
            s *= 1 + SITE_BOOST
        if pages and m.title not in named:  # a site has few distinct titles: each is read once
            named[m.title] = names_page(m.title, pages)
        if pages and named[m.title]:
            s *= 1 + PAGE_BOOST
        if answers and _ANSWER.match(m.action):
            s *= 1 + ANSWER_BOOST
        if anchors and all(k in tf for k in anchors):
            s *= 1 + ANCHOR_BOOST
        covered = set(tf) | set(goal)
        scores[key] = StateScore(
            s,
            sum(idf[k] for k in sorted(covered)) / total_weight,
            sorted(tf),
            sum(idf[k] for k in matched if k in own) / own_weight,
        )
    return scores


def prefer_trouble(scores: Scores, catalog: Catalog, troubles: dict[StateKey, int]) -> None:
    """Gotcha questions: states whose action failed, in failed runs, with words of trouble, score higher."""
    for key, found in list(scores.items()):
        boost = 1 + 0.5 * bool(catalog.states[key].error.strip()) + 0.4 * (catalog.rows[key[0]].success == 0)
        boost += 0.3 * min(troubles.get(key, 0), 3) / 3
        scores[key] = StateScore(found.score * boost, found.coverage, found.matched, found.page_share)


def complements(
    ranked: list[StateKey], scores: Scores, idf: list[float], limit: int, top: int = 3, pool: int = 300
) -> list[StateKey]:
    """States that best cover what the best states leave out (a question may ask about two things at once)."""
    covered = set().union(*(scores[key].matched for key in ranked[:top])) if ranked else set()
    out = []
    for _ in range(limit):
        gain = {
            key: sum(idf[k] for k in scores[key].matched if k not in covered)
            for key in ranked[top:pool]
            if key not in out
        }
        best = max(gain, key=lambda key: (gain[key], scores[key].score), default=None)
        if best is None or gain[best] <= 0.2 * sum(idf):
            break
        out.append(best)
        covered |= set(scores[best].matched)
    return out


def anchor_patterns(
    items: list[dict], compiled: list[re.Pattern], df: Mapping[int, int], rows: dict[str, TrajectoryRow]
) -> list[int]:
    """The question's own names that occur in the store (quoted labels, Capitalised names, ids), site names aside:
    a state showing all of them shows the thing asked about."""
    site_names = {re.sub(r"[-_]+", " ", r.site) for r in rows.values()}
    return [
        k
        for k, it in enumerate(items)
        if it.get("kind") == "phrase"
        and not it.get("derived")
        and df[k]
        and not any(compiled[k].search(name) for name in site_names)
    ]


def newest_with(
    anchors: Sequence[int],
    tfs: Mapping[StateKey, Mapping[int, int]],
    catalog: Catalog,
    sites: Iterable[str],
) -> list[StateKey]:
    """States that show every anchor (on the site the question names, if any), newest first."""
    rows = catalog.rows
    keys = [
        key for key, tf in tfs.items() if all(k in tf for k in anchors) and (not sites or rows[key[0]].site in sites)
    ]
    return sorted(keys, key=lambda key: (catalog.states[key].time, key), reverse=True)


def newest_strong(
    ranked: list[StateKey], scores: Scores, states: Mapping[StateKey, StateMeta], params: Any
) -> list[StateKey]:
    """States whose page covers nearly as much of the question as the best pages do, newest first."""
    pool = ranked[: params.latest_pool]
    best_page = max(scores[key].page_share for key in pool)
    floor = params.near_best * scores[ranked[0]].score
    near = [key for key in pool if scores[key].page_share >= params.near_cov * best_page and scores[key].score >= floor]
    return sorted(near, key=lambda key: states[key].time, reverse=True)
