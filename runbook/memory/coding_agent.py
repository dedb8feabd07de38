"""Method C: a coding agent investigates the store inside a sandbox, standing on method R's recall, and hands back
spans and recall hits; they become the context.

    memory = CodingAgentMemory(store, policy="anthropic", model="claude-sonnet-4-5", sandbox="docker")
    context = memory.query("What is the latest price of ...?", budget=8000)

A query first ranks method R's pools for the question on the host (the same ranking the sandbox's `recall` tool
runs) and gives the hits to the policy: model policies read them in the first message, the offline planner as
structured input. Then ONE sandbox (store read-only) hosts the agent loop. The context is, most important first:
the agent's analysis, the recall hits it kept, its spans expanded from the store (goal, url, time, action, error,
thought, page text, screenshot; pages cut to what the hits leave), and then R's other evidence in what budget is
left, labelled as not checked by the agent. A loop that stops without `finish` still returns what the agent looked
at, marked as such.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..agent.loop import AgentLoop, AgentRun
from ..agent.prompts import system_prompt, user_prompt
from ..agent.specs import MAX_SPAN_STATES, TOOL_SPECS
from ..agent.tools import ToolBox, ToolError
from ..agent.transcript import TranscriptWriter, transcript_path
from ..agent.types import Policy, Span, Task
from ..budget import DEFAULT_BUDGET, count_tokens, parse_budget
from ..config import Settings, load_settings
from ..context import Context, EvidenceItem, pack
from ..core.hits import Hit
from ..core.question import QuestionAnalysis, analyze, is_name
from ..errors import StoreError
from ..models.messages import Message
from ..policies import get_policy
from ..query_input import check_query
from ..store import Store
from ..store.catalog import TrajectoryRow
from .sandboxes import SandboxSupply
from .spans import PageSlot, SpanExpander, fit_pages, focus_terms
from .weakness import phrases_lacking, shows_any, weakness

if TYPE_CHECKING:  # numpy comes with it, and the programs that only pass it on need none
    from ..core.recall import ScanCandidates

NOT_CHOSEN = "seen by the agent, not chosen"
UNCHECKED = "fast retrieval, not checked by the agent"
RECALL_SHARE = 0.9
"""When R's own signals say its evidence is weak (memory/weakness.py), or the question asks for the newest value (the
agent orders every sighting by time; R's ranking does not), method R marks as `packed` (its own evidence,
kept first) the head of its whole-budget context that fits in this share of the budget (its notes and events
always), leaving room for what the agent adds; the rest of R's context follows the agent's spans, in R's order, so a
run that adds nothing returns R's context. Measured on the dev and generated sets: 0.5-0.8 lost R's tail evidence,
1.0 left the agent no room. When R's evidence looks strong, all of it is kept and the agent's spans fill what is
left: on the check split (dev3, 111 questions) each of C's 3 losses against R was an answer in R's last tenth
(7.2-7.3k of 8k tokens) that the agent's spans had displaced. Questions for the newest value (33 of 135 tune, 29
of 111 check, 31 of 120 held-out, 93 of 400 probes): on the tune split, the held-out and the generated sets, evidence
+10 questions and phrases +1 (a newest uninstall R ranked below its budget), none lost."""
MIN_SPAN_SHARE = 0.1
"""The agent's spans always get at least this share of the budget, however many recall hits it keeps."""
LACKING_SHARE = 0.25
"""The agent's spans that show one of the question's names (quoted labels, Capitalised names, ids) which none of
R's kept evidence shows get at least this share of the budget, ahead of R's evidence: what the agent found that R did
not."""
LACKING_STATES = 3
"""At most this many of those states go ahead."""
RUN_ENDED_HERE = "where this successful run ended, on the same page"
"""The label of a leading state's run's last state (CodingAgentMemory.answer_on_same_page)."""


class CodingAgentMemory:
    """Method C over one store. `policy` is a name (offline, anthropic, openai) or a ready Policy object."""

    name = "c"
    concurrent_queries = True
    """Queries may run at once: each has its own sandbox, policy and transcript."""

    def __init__(
        self,
        store: Store | str | os.PathLike,
        *,
        policy: str | Policy | None = None,
        model: str | None = None,
        sandbox: str | None = None,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        output_tokens: int | None = None,
        transcripts: str | os.PathLike | None = None,
        settings: Settings | None = None,
        sandbox_options: dict[str, Any] | None = None,
        retriever=None,
        warm: bool = False,
    ):
        self.store = store if isinstance(store, Store) else Store(store)
        self._policy_object = None if policy is None or isinstance(policy, str) else policy
        overrides = {
            "policy": policy if isinstance(policy, str) else None,
            "model": model,
            "sandbox": sandbox,
            "max_steps": max_steps,
            "max_seconds": max_seconds,
            "max_tokens": max_tokens,
            "max_cost": max_cost,
            "output_tokens": output_tokens,
            "transcripts": str(transcripts) if transcripts else None,
        }
        self.settings = (settings or load_settings()).with_overrides(**overrides)
        self.sandbox_options = dict(sandbox_options or {})
        self._row_cache: dict[str, TrajectoryRow] | None = None
        self.limits = self.settings.limits()
        if retriever is None:
            from ..pools import Retriever

            retriever = Retriever(self.store)
            retriever.warm()  # a memory is long-lived: loading the pools belongs to its set-up, not to a query
        self.retriever = retriever
        """Method R's retriever (shared with an `auto` memory's R)."""
        self.sandboxes = SandboxSupply(self._new_sandbox, warm=warm)
        """One fresh sandbox per query; `warm`: the next one starts while a query runs (long-lived memories)."""

    def _new_sandbox(self):
        from ..sandbox import get_sandbox

        return get_sandbox(self.settings.sandbox, self.store.root, **self.sandbox_options)

    def close(self) -> None:
        """Stop a spare sandbox kept warm (the exit hook would too)."""
        self.sandboxes.close()

    def insert(self, trajectory) -> str:
        """Insert one trajectory into the store and its pools (recall needs them)."""
        from ..pools.build import insert_with_pools

        return insert_with_pools(self.store, trajectory)

    def make_policy(self) -> Policy:
        if self._policy_object is not None:
            return self._policy_object
        name = self.settings.policy
        model = self.settings.model if name != "offline" else None
        return get_policy(name, self.settings, model=model)

    def query(
        self,
        question: str,
        *,
        budget: int | str = DEFAULT_BUDGET,
        image: str | None = None,
        analysis: QuestionAnalysis | None = None,
    ) -> Context:
        """Recall, then run the agent on `question` in a fresh sandbox, and pack what it found into `budget`.
        `analysis`: the question's, when the caller has analysed it already (it is analysed once per query)."""
        started = time.perf_counter()
        budget = parse_budget(budget)
        question, image = check_query(question, image)
        analysis = analysis or analyze(question)
        policy = self.make_policy()
        model = getattr(policy, "model", None)
        path = transcript_path(question, self.settings.transcripts)
        self._row_cache = None  # the store may have grown since the last query
        keep = self.settings.transcripts_keep
        with TranscriptWriter(path, keep=keep) as transcript, ThreadPoolExecutor(max_workers=1) as pool:
            # recall runs while the sandbox starts; the sandbox starts on this thread, which its jail may outlive
            # only as long as the thread lives (bwrap's --die-with-parent)
            recalling = pool.submit(self.recall_and_shares, question, analysis, budget)
            with self.sandboxes.sandbox() as box:
                recall, shares, candidates = recalling.result()
                task = Task(
                    question,
                    image,
                    [hit for hit, _ in recall],
                    term_shares=shares,
                    analysis=analysis,
                    scan_candidates=candidates,
                )
                user = self.first_message(task)
                toolbox = ToolBox(
                    box,
                    call_seconds=self.limits.call_seconds,
                    check_spans=self.check_spans,
                    specs=[*TOOL_SPECS, *getattr(policy, "extra_tools", ())],
                )
                loop = AgentLoop(
                    policy, toolbox, self.limits, transcript=transcript, price=self.settings.price(model), model=model
                )
                run = loop.run(system_prompt(), user, task)
            context = self.context_of(question, budget, run, recall, analysis)
            context.latency_s = time.perf_counter() - started
            context.meta.update(
                policy=policy.name, model=model, sandbox=box.name, transcript=str(path) if keep else None
            )
            transcript.record(
                "result",
                items=len(context.items),
                tokens=context.tokens,
                budget=budget,
                latency_s=round(context.latency_s, 3),
                analysis=context.analysis,
                citations=[item.citation() for item in context.items],
            )
        return context

    def first_message(self, task: Task) -> Message:
        """The agent's first message: the question, the store's overview, R's recall, the image if any."""
        image = task.image
        return Message(
            "user",
            user_prompt(task.question, overview=self.overview(), has_image=bool(image), recall=task.recall),
            parts=[{"type": "image", "value": str(image)}] if image else [],
        )

    def recall_and_shares(
        self, question: str, analysis: QuestionAnalysis, budget: int
    ) -> tuple[list[tuple[Hit, EvidenceItem]], dict, ScanCandidates | None]:
        """recall(), how common each word of the question is among the stored states, and in a large store the runs
        the sandbox's scan reads (the runs of R's evidence first)."""
        hits = self.recall(question, analysis, budget)
        if not hits:
            return hits, {}, None
        first = [hit.trajectory_id for hit, _ in hits]
        return hits, self.retriever.term_shares(question), self.retriever.scan_candidates(analysis, first)

    def recall(self, question: str, analysis: QuestionAnalysis, budget: int) -> list[tuple[Hit, EvidenceItem]]:
        """Method R's hits for the question with their items: the ones R would put in a `budget` context first
        (in R's order), then the rest of what it ranked. Pools that cannot be read (an older format, none at all
        in a store with trajectories, a planted link) raise StoreError, as they do for R: C without R's evidence
        would answer worse without saying why."""
        found = self.retriever.find(question, budget, analysis)
        whole = self.retriever.pack(found, budget)  # R's own context, in R's order
        signals = weakness(Context(question, budget, items=[item for _, item in whole]), analysis)
        room = int(budget * RECALL_SHARE) if signals.weak or analysis.wants_newest else budget
        for hit, item in whole:  # its head, leaving the agent a share of the budget
            room -= item.measure()
            if room < 0 and hit.pool == "slices":
                break
            hit.packed = True
        chosen = {hit.id for hit, _ in whole}
        rest = [
            (hit, self.retriever.item(hit)) for hit in found.notes + found.events + found.slices if hit.id not in chosen
        ]
        return whole + rest

    # -- the store's view ----------------------------------------------------------------------------------------
    def overview(self) -> list[str]:
        """A few facts about the store for the agent's first message: size, sites, time range."""
        rows = self.store.rows()
        if not rows:
            return ["the store is empty"]
        sites = Counter(row.site or "(none)" for row in rows)
        times = sorted(t for row in rows for t in (row.first_ts, row.last_ts) if t)
        facts = [
            f"{len(rows):,} trajectories, {sum(r.n_states for r in rows):,} states"
            + (f", recorded {times[0][:10]} .. {times[-1][:10]}" if times else ""),
            "sites: " + ", ".join(f"{site} ({n})" for site, n in sites.most_common(12)),
        ]
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
                raise ToolError(
                    f"no trajectory {span.trajectory_id!r} in the store; use the ids printed by search "
                    f"or summaries/trajectories.tsv, e.g. {next(iter(rows), 'wa-shopping-21')!r}"
                )
            if span.end_state_index >= row.n_states:
                raise ToolError(
                    f"trajectory {row.id} has states 0-{row.n_states - 1}; the span "
                    f"{span.start_state_index}-{span.end_state_index} goes past its end"
                )

    # -- from a run to a context ---------------------------------------------------------------------------------
    def context_of(
        self,
        question: str,
        budget: int,
        run: AgentRun,
        recall: Sequence[tuple[Hit, EvidenceItem]] = (),
        question_analysis: QuestionAnalysis | None = None,
    ) -> Context:
        """The packed Context of a run: its spans and kept recall hits, or what the agent saw when it did not
        finish; then R's other evidence in what is left."""
        if run.finished:
            spans, analysis, label = run.spans, run.analysis, ""
        else:
            spans = self.seen_spans(run.seen)
            analysis = (
                f"The agent stopped before choosing its evidence ({run.stop.reason}). The states below are "
                f"the ones it looked at most; they were not checked as an answer."
            )
            label = NOT_CHOSEN
        by_id = {hit.id: (hit, item) for hit, item in recall}
        chosen = [by_id[i] for i in run.recall if i in by_id]
        pairs = self.without_dangling_folds(chosen + [pair for pair in recall if pair[0].id not in set(run.recall)])
        kept, rest = [item for _, item in pairs[: len(chosen)]], [item for _, item in pairs[len(chosen) :]]
        for item in rest:
            item.label = "; ".join(filter(None, [UNCHECKED, item.label]))
        question_analysis = question_analysis or analyze(question)
        front, back = self.lacking_first(spans, label, kept, question_analysis)
        room = budget - count_tokens(analysis) - 8 - sum(item.measure() for item in kept)
        excerpter = self.retriever.excerpter(question_analysis, *([analyze(analysis)] if analysis else []))
        focus = focus_terms(question_analysis, analysis)
        if front:
            fit_pages(front, max(room, int(budget * LACKING_SHARE)), focus, excerpter)
            room -= sum(item.measure() for item, _ in front)
        fit_pages(back, max(room, int(budget * MIN_SPAN_SHARE)), focus, excerpter)
        # the agent's states that show a name none of R's kept evidence shows, first; then the recall hits the agent
        # kept (method R's evidence, checked or chosen), then what else the agent added
        context = pack(
            question,
            budget,
            [item for item, _ in front] + kept + [item for item, _ in back] + rest,
            analysis=analysis,
            method="c",
            store_root=str(self.store.root),
        )
        context.meta.update(
            steps=run.steps,
            stop=run.stop.kind,
            stop_reason=run.stop.reason,
            finished=run.finished,
            tokens_used=run.tokens,
            cost=run.cost,
            agent_seconds=round(run.seconds, 3),
            spans=[s.to_json() for s in spans],
            recall=list(run.recall),
        )
        return context

    def lacking_first(
        self, spans: list[Span], label: str, kept: list[EvidenceItem], question_analysis: QuestionAnalysis
    ) -> tuple[list[tuple[EvidenceItem, list[PageSlot]]], list[tuple[EvidenceItem, list[PageSlot]]]]:
        """The spans' items in two parts: the states that show a name of the question none of R's `kept` evidence
        shows (at most LACKING_STATES, each on its own and labelled with what it shows), and the rest of the spans
        split around them. Only when the agent kept R's evidence: otherwise its spans are all there is, in the order
        it chose."""
        expander = SpanExpander(self.store, self._rows(), self.retriever.page_of)
        items = expander.expand(spans, label=label)
        lacking = [p for p in phrases_lacking(question_analysis.phrases, [i.render_text() for i in kept]) if is_name(p)]
        showing = states_showing(items, lacking if kept else [])[:LACKING_STATES]
        if not showing:
            return [], items
        ends = {key: end for key in showing if (end := self.answer_on_same_page(*key)) is not None}
        leading = [Span(t, j, j) for t, i in showing for j in (i, ends.get((t, i))) if j is not None]
        items = expander.expand(leading + spans, label=label)
        front, back = items[: len(leading)], items[len(leading) :]
        ended = {(t, end) for (t, _), end in ends.items()}
        for item, slots in front:
            if (item.trajectory_id, item.state_index) in ended:
                item.label = "; ".join(filter(None, [item.label, RUN_ENDED_HERE]))
                continue
            shown = [p for p in lacking if shows_any(item_text(item, slots), [p])]
            item.label = "; ".join(filter(None, [item.label, "shows " + ", ".join(map(repr, shown))]))
        return front, back

    def answer_on_same_page(self, trajectory_id: str, index: int) -> int | None:
        """The last state of a successful run that ended on the page of its state `index`, later than it: where the
        agent read its answer off that page once its own actions had changed it (a directions panel switched from
        car to foot, a filter applied)."""
        row = self._rows().get(trajectory_id)
        if row is None or row.success != 1 or row.n_states - 1 <= index:
            return None
        try:
            shown = self.store.read_state(row.id, index)[0].get("url", "")
            last = self.store.read_state(row.id, row.n_states - 1)[0].get("url", "")
        except (OSError, StoreError):  # a planted link too (UnsafeStoreFile)
            return None
        return row.n_states - 1 if shown and urlsplit(shown).path == urlsplit(last).path else None

    def without_dangling_folds(self, pairs: list[tuple[Hit, EvidenceItem]]) -> list[tuple[Hit, EvidenceItem]]:
        """The recall hits in this order, a view folded into one that does not come before it shown as its own
        page: 'the same page as ... above' must point at a page the context shows above."""
        out, before = [], set()
        for hit, item in pairs:
            if hit.same_as and hit.same_as not in before:
                hit = hit.unfolded()
                item = self.retriever.item(hit)
            out.append((hit, item))
            before.add(hit.id)
        return out

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


def item_text(item: EvidenceItem, slots: list[PageSlot]) -> str:
    return " ".join(map(slot_text, slots)) if slots else item.text


def slot_text(slot: PageSlot) -> str:
    return f"{slot.header} {slot.page}"


def states_showing(items: list[tuple[EvidenceItem, list[PageSlot]]], phrases: list[str]) -> list[tuple[str, int]]:
    """The states of the span items that show one of `phrases`, in the spans' order."""
    if not phrases:
        return []
    return [
        (item.trajectory_id, (item.state_index or 0) + n)
        for item, slots in items
        for n, slot in enumerate(slots)
        if shows_any(slot_text(slot), phrases)
    ]
