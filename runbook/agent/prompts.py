"""What a model policy is told: the store's layout, the tools, the finish contract, and how to weigh evidence."""
from __future__ import annotations

import re

import ast
import functools
import textwrap
from typing import Iterable

from .tools import MAX_SPAN_STATES

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
- search: regex over every state file; prints `path:line:text`. Start here for exact names, values, errors.
- show: print one state ("3"), a span ("3-5"), or a trajectory's overview (no states); `grep` filters states.
- read: print lines of any store file (summaries first when you need an overview).
- python: run Python 3 in the sandbox (cwd /scratch is writable). `import rbk` reads the store:
{rbk_guide}
- finish(analysis, spans): your answer to the caller. Call it exactly once, at the end.

# How to work
1. Triage the question: a fact on a page (static), a value that changes over time (dynamic: "current",
   "latest", "now"), how to do something (procedure), or what goes wrong (errors, gotchas). Pull the exact
   names, ids and values out of it and search for them.
2. Shortlist a few trajectories (search the summaries or the states), then verify with `show` on the exact
   states. Prefer the same site, page and workflow the question names; reject near-but-different matches.
3. Stop as soon as the evidence is in hand. Be quick: a handful of calls is usually enough.

# Weighing evidence
- Latest value wins: trajectories are recorded over time. When a value differs between states, the state with
  the latest `time` holds the current value; put it first and say in the analysis which value is the latest
  (and when it was seen). Include an older state only to show the change.
- The premise may be false: if the thing the question assumes (an item, option, step, reply, setting) never
  appears, or appears differently, say so plainly in the analysis ("The premise is wrong: ...") and return the
  states that show what is actually there.
- Procedures: take the steps from successful runs (outcome success) of the same workflow; cite the span that
  shows the key steps, usually no more than 3 states per span.
- Errors and gotchas: look at `error:` lines, failed runs and retries; cite the state where the error shows and
  the state where the agent got past it, and name the pitfall in the analysis.
- If the question comes with an image, match its page (url, title, visible labels) to a stored state first.
- Never guess: if nothing supports an answer, say that in the analysis and return the closest real evidence.

# finish
- analysis: 2-5 plain sentences for the reader: where the evidence is, what it shows (the value, and whether it
  is the latest), and whether the premise is wrong.
- spans: [{{"trajectory_id": ..., "start_state_index": i, "end_state_index": j}}], indices inclusive, most
  important first, at most {max_states} states in all. Keep spans short; one exact state is often best.
"""

QUESTION_PREFIX = "Question: "
"""How the first user message starts; `question_from` reads the question back (e.g. for the offline planner)."""

RBK_FALLBACK = "  rbk.grep(pattern), rbk.latest(pattern), rbk.timeline(pattern), rbk.state(id, i); help(rbk) lists all."


def system_prompt() -> str:
    """The system prompt for model policies (stable across queries, so providers can cache it)."""
    return SYSTEM_PROMPT.format(rbk_guide=rbk_guide(), max_states=MAX_SPAN_STATES)


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
    body = textwrap.dedent("\n".join(lines[start + 1:] if start is not None else lines)).strip("\n")
    return textwrap.indent(body, "  ") or RBK_FALLBACK


SHORTLIST_HEADER = "Fast retrieval's best states for this question (a starting point, not proof):"
_SHORTLIST_LINE = re.compile(r"^- (\S+) state (\d+)\b")


def user_prompt(question: str, *, overview: Iterable[str] = (), has_image: bool = False,
                shortlist: Iterable[dict] = ()) -> str:
    """The first user message: the question, whether an image comes with it, a few facts about the store, and
    (when asked for) method R's shortlist of states."""
    parts = [QUESTION_PREFIX + " ".join(question.split())]
    if has_image:
        parts.append("The question comes with the image attached below; find the stored state it shows.")
    facts = [line for line in overview if line]
    if facts:
        parts.append("About the memory:\n" + "\n".join(f"- {line}" for line in facts))
    hints = [f"- {h['trajectory_id']} state {h['state_index']} ({h.get('url') or ''}, {h.get('timestamp') or ''})"
             for h in shortlist]
    if hints:
        parts.append(SHORTLIST_HEADER + "\n" + "\n".join(hints))
    parts.append("Find the evidence, then call finish.")
    return "\n\n".join(parts)


def shortlist_from(messages) -> list[tuple[str, int]]:
    """The (trajectory id, state index) pairs of the shortlist in the first user message, best first."""
    first = next((m for m in messages if m.role == "user"), None)
    if first is None or SHORTLIST_HEADER not in first.text:
        return []
    block = first.text.split(SHORTLIST_HEADER, 1)[1].split("\n\n", 1)[0]
    return [(m.group(1), int(m.group(2))) for m in map(_SHORTLIST_LINE.match, block.splitlines()) if m]


def question_from(messages) -> str:
    """The question of a conversation started with `user_prompt` (what a policy without a model reads)."""
    first = next((m for m in messages if m.role == "user"), None)
    if first is None:
        return ""
    head = first.text.split("\n\n", 1)[0]
    return head[len(QUESTION_PREFIX):] if head.startswith(QUESTION_PREFIX) else first.text
