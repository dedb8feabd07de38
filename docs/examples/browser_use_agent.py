"""A browser-use agent that asks runbook before its task and streams every step in: the README's browser-use hook,
whole and runnable.

    runbook serve http --port 8765 --create &
    python docs/examples/browser_use_agent.py --replay docs/examples/browser_use_steps.json
    OPENAI_API_KEY=... python docs/examples/browser_use_agent.py --task "Rename the user to Jordan R. Rivera"

--replay plays a recorded browser-use run's history entries back through the same hook, without a browser or a
model (CI runs it against a real server). A live run needs browser-use (`pip install browser-use`, 0.13) with its
browser, and a model key for browser-use's ChatOpenAI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from runbook.serve.client import Client


# README: the browser-use hook
async def run_task(memory: Client, task: str, make_agent, site: str) -> bool:
    """One task with memory: ask before it, append each step as browser-use records it, close with the outcome."""
    run_id = f"browser-use-{uuid.uuid4().hex[:8]}"
    hints = as_text(memory.query(task, budget="4k"))  # what earlier runs show, every item cited
    memory.open_trajectory(run_id, goal=task, site=site)
    agent = make_agent(task, hints)  # e.g. Agent(task=task, llm=llm, extend_system_message=hints)

    async def on_step_end(agent) -> None:  # the step's history entry, exactly as browser-use records it
        await asyncio.to_thread(memory.append_state, run_id, agent.history.history[-1].model_dump())

    history = await agent.run(on_step_end=on_step_end)
    memory.close_trajectory(run_id, outcome="success" if history.is_successful() else "failure")
    return bool(history.is_successful())
# end README


def as_text(context: dict[str, Any]) -> str:
    """A context as the text to put in a prompt: the analysis, then each item (each names its source)."""
    return "\n\n".join([context["analysis"], *(item["text"] for item in context["items"])])


class _Entry:
    """A recorded history entry with the one method the hook calls on browser-use's AgentHistory."""

    def __init__(self, recorded: dict[str, Any]):
        self.recorded = recorded

    def model_dump(self) -> dict[str, Any]:
        return self.recorded


class ReplayAgent:
    """A recorded run's history entries, added one per step as browser-use's Agent.run adds them."""

    def __init__(self, entries: list[dict[str, Any]]):
        self.entries = entries
        self.history = SimpleNamespace(history=[])

    async def run(self, on_step_end=None) -> SimpleNamespace:
        for entry in self.entries:
            self.history.history.append(_Entry(entry))
            if on_step_end is not None:
                await on_step_end(self)
        last = (self.entries[-1].get("result") or [{}])[-1] if self.entries else {}
        return SimpleNamespace(is_successful=lambda: bool(last.get("is_done") and last.get("success")))


def live_agent(model: str):
    """browser-use's Agent with its ChatOpenAI, the hints in its system message."""
    from browser_use import Agent, ChatOpenAI

    return lambda task, hints: Agent(task=task, llm=ChatOpenAI(model=model), extend_system_message=hints)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765", help="the runbook server")
    parser.add_argument("--replay", help="a recorded run's history entries (JSON list) instead of a browser")
    parser.add_argument("--task", default="Rename the user to Jordan R. Rivera.")
    parser.add_argument("--model", default="gpt-4.1-mini", help="live: the model browser-use drives")
    parser.add_argument("--site", default="linear")
    args = parser.parse_args(argv)
    memory = Client(args.url)  # the key, if the server has one: env RUNBOOK_API_KEY
    if args.replay:
        entries = json.loads(Path(args.replay).read_text())
        make_agent = lambda task, hints: ReplayAgent(entries)  # noqa: E731
    else:
        make_agent = live_agent(args.model)
    succeeded = asyncio.run(run_task(memory, args.task, make_agent, site=args.site))
    print(f"succeeded: {succeeded}; what the store holds now: {memory.stats()['trajectories']} trajectories")


if __name__ == "__main__":
    main()
