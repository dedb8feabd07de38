"""What a model policy is told: the store's layout, the tools (rendered from their specs), the strategy, the finish
contract, and the first user message with the question and method R's recall for it."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections.abc import Iterable

from ..core.hits import Hit
from ..models.messages import ToolSpec
from .specs import MAX_SPAN_STATES, TOOL_SPECS

SYSTEM_PROMPT = """\
You are the retrieval step of a long-term memory for web agents. A reader model will answer a question about a web
environment using ONLY the evidence you hand back. Your job: find the recorded browser states that answer the
question (or show that its premise is wrong) and return them with `finish`. Do not answer the question yourself
beyond the short analysis.

# The memory (read-only; the folder is $RUNBOOK_STORE_DIR, /store in the sandbox)
Web-agent trajectories, each a goal and a list of states. State i is the page the agent saw (url, title, page text
= accessibility tree or DOM text) and the action it took NEXT; `error` is what that action raised.
- summaries/trajectories.tsv: one line per trajectory, oldest first: seq, id, site, outcome, n_states,
  first_time, last_time, start_url, goal.
- summaries/actions.txt: per trajectory `## id | site | outcome | n states | time`, `goal: ...`, then one line
  per state: `  idx action  @ url  !! error`. Search it to shortlist trajectories by goal, action, url or error.
- trajectories/<id>/states/NNNN.md: one file per state (NNNN = the 4-digit state index). Header lines
  `trajectory:`, `state: 3 of 12`, `time:`, `url:`, `title:`, `action:`, `error:`, `thought:`, `screenshot:`,
  then a line `---`, then the page text.
- catalog.sqlite: tables trajectories(seq, id, site, goal, start_url, outcome, success, n_states, first_ts,
  last_ts, ...) and states(trajectory_id, state_index, url, title, timestamp, action, action_error, screenshot).

# Tools
{tools}
`import rbk` in python reads the store:
{rbk_guide}

# How to work
1. Triage: is the question about a fact on a page (static), a value that changes over time (dynamic: "current",
   "latest", "now"), how to do something (procedure), or what goes wrong (errors, gotchas)? Pull out the exact
   names, ids and values it gives.
2. Shortlist runs: the recall hits in the first message (call recall again with other words if they miss), or the
   summaries (goals, action sequences) searched for the question's names.
3. Verify: open the exact states with show (or search for the exact value) before relying on them; reject
   near-but-different pages, sites and workflows.
4. Finish with spans of a few states each, at most {max_states} states in all, plus the ids of the recall hits
   worth keeping. Be quick: a handful of calls is usually enough.

# Weighing evidence
- Latest value wins: trajectories are recorded over time. When a value differs between states, the state with
  the latest `time` holds the current value; put it first and say in the analysis which value is the latest
  (and when it was seen). Include an older state only to show the change.
- The premise may be false: if the thing the question assumes (an item, option, step, reply, setting) never
  appears, or appears differently, say so plainly in the analysis ("The premise is wrong: ...") and return the
  states that show what is actually there.
- Procedures: take the steps from successful runs (outcome success) of the same workflow; cite the span that
  shows the key steps, usually no more than 3 states per span; where runs disagree, say so.
- Errors and gotchas: look at `error:` lines, failed runs and retries; cite the state where the error shows and
  the state where the agent got past it, and name the pitfall in the analysis.
- If the question comes with an image, match its page (url, title, visible labels) to a stored state first.
- Never guess: if nothing supports an answer, say that in the analysis and return the closest real evidence.

# finish
- analysis: 2-5 plain sentences for the reader: where the evidence is, what it shows (the value, and whether it
  is the latest), and whether the premise is wrong.
- spans: [{{"trajectory_id": ..., "start_state_index": i, "end_state_index": j}}], indices inclusive, most
  important first, at most {max_states} states in all. Keep spans short; one exact state is often best.
- recall: ids of recall hits (["n12", "s56"]) that are evidence too, most important first.
"""

RBK_FALLBACK = "  rbk.grep(pattern), rbk.latest(pattern), rbk.timeline(pattern), rbk.state(id, i); help(rbk) lists all."
RECALL_SHOWN = 12
"""Recall hits listed in the first message (the agent can call recall for more)."""


def system_prompt(specs: list[ToolSpec] = TOOL_SPECS) -> str:
    """The system prompt for model policies (stable across queries, so providers can cache it)."""
    return SYSTEM_PROMPT.format(tools=tool_section(specs), rbk_guide=rbk_guide(), max_states=MAX_SPAN_STATES)


def tool_signature(spec: ToolSpec) -> str:
    """`name(required, optional?)` from the spec's schema."""
    schema = spec.parameters
    required = schema.get("required", [])
    names = [name if name in required else f"{name}?" for name in schema.get("properties", {})]
    return f"{spec.name}({', '.join(names)})"


def tool_section(specs: list[ToolSpec] = TOOL_SPECS) -> str:
    """One line per tool, in the specs' order (recall first): its signature and its description."""
    return "\n".join(f"- {tool_signature(spec)}: {spec.description}" for spec in specs)


@functools.lru_cache(maxsize=1)
def rbk_guide() -> str:
    """The examples from the `rbk` module's docstring: the sandbox's Python helpers, as their author wrote them."""
    try:
        from ..sandbox.sources import programs_dir

        doc = ast.get_docstring(ast.parse((programs_dir() / "rbk.py").read_text(encoding="utf-8"))) or ""
    except Exception:  # an installation missing its programs still gets a working prompt
        return RBK_FALLBACK
    lines = doc.splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip().startswith("Examples")), None)
    body = textwrap.dedent("\n".join(lines[start + 1 :] if start is not None else lines)).strip("\n")
    return textwrap.indent(body, "  ") or RBK_FALLBACK


RECALL_HEADER = "recall for this question (method R's best hits; a starting point, not proof):"


def recall_lines(hits: Iterable[Hit], limit: int = RECALL_SHOWN) -> list[str]:
    """One line per hit, headed as the recall program heads it (id, trajectory, states, time, url, labels), then
    its first words."""
    return [hit.heading() + (f"\n    {hit.gist()}" if hit.gist() else "") for hit in list(hits)[:limit]]


def user_prompt(
    question: str, *, overview: Iterable[str] = (), has_image: bool = False, recall: Iterable[Hit] = ()
) -> str:
    """The first user message: the question, whether an image comes with it, a few facts about the store, and
    method R's recall for the question."""
    parts = ["Question: " + " ".join(question.split())]
    if has_image:
        parts.append("The question comes with the image attached below; find the stored state it shows.")
    facts = [line for line in overview if line]
    if facts:
        parts.append("About the memory:\n" + "\n".join(f"- {line}" for line in facts))
    hits = recall_lines(recall)
    if hits:
        parts.append(RECALL_HEADER + "\n" + "\n".join(hits))
    parts.append("Find the evidence, then call finish.")
    return "\n\n".join(parts)
