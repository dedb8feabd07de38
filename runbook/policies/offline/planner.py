"""OfflinePlanner: the policy used when no model is configured. Deterministic, no model, the same tools and loop.

One query takes two or three tool calls, each a step of a fixed plan:

    1. plan              one sandbox program (rbplan, runbook.core.plan) in one call:
                         scan: one ripgrep pass over every state for the question's phrases and stemmed terms, BM25
                         with the goal, url/title and the site the question names; the best states, the newest strong
                         matches ('current'/'latest' questions), the best runs, terms found nowhere, and with a
                         question image the stored screenshots that look most alike (dHash);
                         choice: the states a question of its kind needs (runbook.core.choice), printed first;
                         detail: for those states, the action with the element it clicked, the error, and the page
                         lines worth quoting
    2. search            gotchas only, when the run that went wrong typed something: where other pages show a
                         different value (runbook.policies.offline.probe)
    3. finish            spans (most important first) and an analysis: the kind, latest vs older values with their
                         times, terms found nowhere (a possibly false premise), a procedure's steps

The planner reads the program's choice (and the note on each state) from its output; it never recomputes it.

The planner only reads tool outputs: the sandbox is its only access to the store. A failed call is not retried
with the same arguments; the planner finishes with what it has.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...agent.specs import PLAN
from ...agent.types import Task
from ...core.choice import Choice, read_choice
from ...core.hits import Hit
from ...core.plan import PlanRequest
from ...core.question import QuestionAnalysis, moments_in, quoted_labels
from ...core.scan import ScanParams
from ...core.scanout import Scan, Step, find_hit, json_lines, read_scan, read_steps
from ...core.text import tokenize
from ...errors import ConfigError
from ...models.messages import Message, ToolCall, ToolSpec
from .analysis import write_analysis
from .image import question_image
from .probe import probe_pattern, read_probe, typed_values
from .spans import SPAN_GAP, spans_of
from .terms import page_words, patterns_for, without_common

if TYPE_CHECKING:  # numpy comes with it, and the programs that only pass it on need none
    from ...core.recall import ScanCandidates

OUTPUT_VIEW_TOKENS = 8_000
"""Tokens of one tool output the planner reads: more than the loop's default for models, because it has no context
window to spare and reads the whole of its one program call (choice, scan and detail: about 3,800 tokens)."""
SCOPE_SITES = 2
"""The scan reads only the states of the sites method R's evidence comes from, when they are this few."""
SCOPE_SITE_SHARE = 0.15
"""A site counts among those of R's evidence when it holds at least this share of R's items."""
RECALL_FINDING_STATES = 30
"""Method R's best pages that rbplan's findings read besides the states it chose and scanned (as many as R's own
findings read)."""
REQUEST_CHARS = 96_000
"""rbplan's request is one argument of its command line: Linux takes at most 128 KiB in one."""
RECALL_RUNS = 5
"""Runs of method R's best notes passed to the choice of a run (procedures, gotchas)."""
PAGE_WORD_STATES = 3
"""The scan's best states whose matches say which word the pages use for a thing the question names otherwise (the
scan names the patterns of its first three states only: ScanParams.full)."""


@dataclass
class Plan:
    """What the planner knows about one question so far."""

    question: str
    analysis: QuestionAnalysis
    patterns: list[dict[str, Any]]
    image: str | None = None
    scan: Scan | None = None
    choice: Choice | None = None
    steps: list[Step] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)
    """Values the walked-through run typed (gotchas): probed for what the site shows instead."""
    recall: list[Hit] = field(default_factory=list)
    """Method R's hits for the question (the Task's), best first; `packed` ones are what R's own context holds."""
    calls: int = 0
    failures: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    """What rbplan worked out from the chosen pages (core.findings): it leads the analysis."""
    candidates: ScanCandidates | None = None
    """A large store's runs the scan reads (the Task's); None: every run."""
    term_shares: dict[str, float] = field(default_factory=dict)
    """The Task's share of stored states holding each word of the question: with `candidates`, which patterns the
    store holds somewhere."""

    @property
    def kind(self) -> str:
        return self.analysis.kind


class OfflinePlanner:
    """A Policy that needs no model: a fixed, question-kind-aware plan over the sandbox tools."""

    name = "offline"
    model = None
    output_view_tokens = OUTPUT_VIEW_TOKENS
    extra_tools = (PLAN,)

    def __init__(self, **_options: Any):
        self.plan: Plan | None = None

    def begin(self, task: Task) -> None:
        """A new query: the question, its image and method R's recall, as structured input."""
        analysis = task.analysis
        assert analysis is not None  # Task.__post_init__ analyses the question when it was not given
        patterns = without_common(patterns_for(analysis), task.term_shares)
        self.plan = Plan(
            question=task.question,
            analysis=analysis,
            patterns=patterns,
            image=task.image,
            recall=list(task.recall),
            candidates=task.scan_candidates,
            term_shares=task.term_shares,
        )

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message:
        """The next call of the plan, given the tool results so far."""
        if self.plan is None:
            raise ConfigError(
                "the offline planner starts from the query's Task: run it through "
                "AgentLoop.run(system, user, task) (runbook.memory.coding_agent does)"
            )
        results = _latest_results(messages)
        if self.plan.calls == 0:
            return self.call("plan", request=self.plan_request().to_json())
        if self.plan.scan is None:
            output = _output(results, "plan", self.plan)
            self.plan.scan = read_scan(output)
            self.plan.choice = read_choice(output, self.plan.scan) or Choice()
            self.plan.findings = [rec["text"] for rec in json_lines(output) if rec.get("type") == "finding"]
            self.plan.steps = read_steps(output)
            probe = self.probe_arguments()
            if probe:
                return self.call("search", **probe)
        elif self.plan.calls == 2 and self.plan.typed:
            self.take_probe(_output(results, "search", self.plan))
        return self.finish()

    # -- the plan ------------------------------------------------------------------------------------------------
    def plan_request(self) -> PlanRequest:
        """rbplan's request: what the scan looks for (the question's patterns and what its kind needs) and the kind
        the choice is made for; how much is printed and quoted are the request's defaults."""
        plan = self.plan
        assert plan is not None
        params = ScanParams(
            patterns=plan.patterns,
            latest=plan.analysis.wants_latest or plan.kind == "dynamic",
            prefer="trouble" if plan.kind == "gotcha" else None,
            answers=plan.kind in ("static", "dynamic"),
            pages=[list(path) for path in plan.analysis.menu_paths],
            scope_sites=scope_sites(plan.recall) or None,
            image=question_image(plan.image) if plan.image else None,
        )
        recalled = [list(hit.key) for hit in plan.recall if hit.pool == "slices" and not hit.same_as]
        request = PlanRequest(
            scan=params,
            kind=plan.kind,
            wants_latest=plan.analysis.wants_latest,
            analysis=asdict(plan.analysis),
            recall_states=recalled[:RECALL_FINDING_STATES],
            recall_runs=[hit.trajectory_id for hit in plan.recall if hit.pool == "notes"][:RECALL_RUNS],
        )
        if plan.candidates is not None:
            with_candidates(request, plan.candidates, plan.term_shares)
        return request

    def probe_arguments(self) -> dict[str, Any] | None:
        """For a gotcha whose run typed something: search other pages for what the site has instead."""
        plan = self.plan
        assert plan is not None and plan.choice is not None  # next() reads the choice before probing
        if plan.kind != "gotcha" or plan.choice.run is None:
            return None
        plan.typed = typed_values(plan.steps, plan.choice.run.trajectory_id)
        pattern = probe_pattern(plan.typed)
        if not pattern:
            return None
        probe = {"pattern": pattern, "ignore_case": True, "field": "text", "sort": "newest", "max_results": 30}
        runs = ",".join(plan.candidates.runs) if plan.candidates is not None else ""
        if runs and len(runs) < REQUEST_CHARS:  # a large store: the runs the scan read, not every state file
            probe["trajectory"] = runs
        return probe

    def take_probe(self, output: str) -> None:
        plan = self.plan
        # a probe is only sent for a chosen run (probe_arguments)
        assert plan is not None and plan.choice is not None and plan.choice.run is not None
        for sighting in read_probe(output, plan.choice.run.trajectory_id, plan.typed):
            if plan.choice.add(sighting.key, f"shows '{sighting.seen}'"):
                plan.choice.contrasts.append((sighting.typed, sighting.seen, sighting.key, sighting.time))

    def finish(self) -> Message:
        plan = self.plan
        assert plan is not None
        scan = plan.scan or Scan()
        choice = plan.choice or Choice()
        # a name the question gives is written nowhere: the analysis says so, and method R's ranking of the closest
        # evidence stands whole (measured: the scan's own closest states displaced better ones of R's)
        weak = _weak_labels(plan.patterns, quoted_labels(plan.question))
        doubt = bool(plan.recall) and premise_in_doubt(scan, weak)
        recall = [hit for hit in plan.recall if hit.packed]  # method R's own evidence, in its order
        recall = _pictured_first(recall, choice.image_states)
        shown = {hit.key for hit in recall if hit.pool == "slices"}
        analysis = write_analysis(
            plan.kind,
            plan.analysis.wants_latest,
            scan,
            choice,
            plan.steps,
            weak_missing=weak,
            premise_only=doubt,
            # a quoted label the scan found in some state is no doubt: only the ones found nowhere stay
            premise_hints=plan.analysis.confirmed(lambda label: label not in scan.missing).possible_false_premise,
        )
        said = page_words(plan.patterns, [state.matched for state in scan.states[:PAGE_WORD_STATES]])
        if said and not doubt:
            analysis += "".join(f" The pages write '{page}' where the question says '{own}'." for own, page in said)
        if plan.findings and not doubt:  # worked out from the pages: it leads
            analysis = "\n".join([*plan.findings, analysis])
        if plan.failures:
            analysis += "\n(Some tool calls failed: " + "; ".join(plan.failures)[:300] + ")"
        if scan.image_error:
            analysis += f"\n(The question's image was not compared: {scan.image_error}.)"
        added = [key for key in choice.keys if key not in shown]
        if plan.analysis.wants_latest or plan.kind == "dynamic":  # the newest sighting leads, as in R's evidence
            added.sort(key=lambda key: _time_of(key, scan, plan.steps), reverse=True)
        spans = spans_of(added, gap=SPAN_GAP)
        if doubt:
            spans = []
        return self.call(
            "finish", analysis=analysis, spans=[span.to_json() for span in spans], recall=[hit.id for hit in recall]
        )

    def call(self, name: str, **arguments: Any) -> Message:
        assert self.plan is not None
        self.plan.calls += 1
        return Message("assistant", tool_calls=[ToolCall(f"offline-{self.plan.calls}", name, arguments)])


def _pictured_first(recall: list[Hit], pictured: list[tuple[str, int]]) -> list[Hit]:
    """R's evidence with the states that look like the question's image first (best look-alike first), the rest
    in R's order: the question points at that screenshot, and R's text ranking does not see pictures."""
    rank = {key: n for n, key in enumerate(pictured)}
    return sorted(recall, key=lambda hit: rank.get(hit.key, len(rank)) if hit.pool == "slices" else len(rank))


def with_candidates(request: PlanRequest, candidates: ScanCandidates, shares: dict[str, float]) -> None:
    """A large store's scan reads only the candidate runs; a pattern they lack is missing only when one of its words
    is written nowhere in the store (R's index says so, without reading the rest). The runs' first slice documents
    go along while the request stays well inside one program argument's limit (128 KiB)."""
    scan = request.scan
    scan.candidates = candidates.runs
    scan.present = [
        k for k, item in enumerate(scan.patterns) if all(shares.get(w, 1.0) > 0 for w in tokenize(item["text"]))
    ]
    request.slice_docs = {t: [d, n] for t, (d, n) in candidates.first_docs.items()}
    request.pools_stamp = candidates.stamp
    if len(json.dumps(request.to_json())) > REQUEST_CHARS:
        request.slice_docs, request.pools_stamp = {}, None  # the sandbox reads every document instead


def _latest_results(messages: list[Message]) -> list[Message]:
    """The tool results after the last assistant turn."""
    out: list[Message] = []
    for message in reversed(messages):
        if message.role == "assistant":
            break
        if message.role == "tool" and message.tool_result is not None:
            out.append(message)
    return list(reversed(out))


def _output(results: list[Message], name: str, plan: Plan) -> str:
    """The output of the last call named `name`; a failed call is noted and gives no output."""
    for message in reversed(results):
        result = message.tool_result
        assert result is not None  # _latest_results keeps only messages with a tool result
        if result.name != name:
            continue
        if result.error or result.exit_code:
            plan.failures.append(f"{name}: {(result.error or result.output)[-200:]}")
        return result.output
    return ""


def _time_of(key: tuple[str, int], scan: Scan, steps: list[Step]) -> str:
    """A chosen state's time, from the detail step or the scan ('' when neither has it)."""
    step = next((s for s in steps if (s.trajectory_id, s.state_index) == key), None)
    hit = find_hit(scan, key)
    return (step.time if step else "") or (hit.time if hit else "")


def scope_sites(recall: list[Hit]) -> list[str]:
    """The sites of method R's own evidence, when it names at most SCOPE_SITES: where the scan looks (R's
    evidence of another site stays in the context); none (the whole store) when R has nothing or is spread. Of
    those few, a site that holds less than SCOPE_SITE_SHARE of R's items is a stray match of common words, not where
    to look (a spread is never narrowed: measured, a question whose site R had missed was found by scanning all)."""
    counts = Counter(hit.site for hit in recall if hit.packed and hit.site)
    if not 0 < len(counts) <= SCOPE_SITES:
        return []
    total = sum(counts.values())
    return sorted(site for site, n in counts.items() if n >= SCOPE_SITE_SHARE * total)


def premise_in_doubt(scan: Scan, weak: set[str]) -> bool:
    """Whether a phrase of the question (several words: a label it quotes) appears in no stored state; `weak`: the
    labels whose absence says little (_weak_labels)."""
    return any(" " in label.strip() and label not in weak for label in scan.missing)


def _weak_labels(patterns: list[dict[str, Any]], quoted: list[str]) -> set[str]:
    """Patterns whose absence says little: low-weight words, compounds the planner made up from a term, a day the
    question names ('on 2025-12-18': when the agent was there, which the states' times say, not their pages), and a
    name of several words the question does not quote ('the Linear Profile page', 'Minerva V-Tee'): a page need
    not write the question's own naming ('Linear' is the app, the page says 'Profile'); a quoted label says the page
    writes it so, and its absence is a doubt about the premise. `quoted`: the question's quoted labels."""
    said = {_bare(q) for q in quoted}
    return {
        label
        for p in patterns
        if (label := p.get("label", p["text"]))
        and (
            p.get("weight", 1.0) < 1.0
            or p.get("derived")
            or moments_in(label)
            or (" " in label.strip() and _bare(label) not in said)
        )
    }


def _bare(label: str) -> str:
    """A label as compared with the question's quotes: no surrounding space or closing punctuation, lower case."""
    return label.strip().rstrip(".?!,;:").lower()
