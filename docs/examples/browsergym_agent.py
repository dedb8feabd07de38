"""A BrowserGym agent that asks runbook before its task and streams every step in: the README's BrowserGym loop,
whole and runnable.

    runbook serve http --port 8765 --create &
    python docs/examples/browsergym_agent.py --replay docs/examples/agentlab_steps.json
    python docs/examples/browsergym_agent.py --start-url http://localhost:7780/admin --goal "..." --agent my_agent:Agent

--replay plays an AgentLab run's recorded observations and actions back through the same loop, without a browser
(CI runs it against a real server). A live run needs BrowserGym and its browser (`pip install browsergym-core`,
`playwright install chromium`) and your agent: a class with BrowserGym's `get_action(obs) -> (action, info)` that
puts `obs["runbook_memory"]` in its prompt (AgentLab's agents return an AgentInfo with `think`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from runbook.serve.client import Client


# README: the BrowserGym loop
def run_task(memory: Client, env, agent, site: str) -> float:
    """One task with memory: ask before it, stream every step in, close with the reward."""
    obs, _ = env.reset()
    run_id = f"bgym-{uuid.uuid4().hex[:8]}"
    hints = as_text(memory.query(obs["goal"], budget="4k"))  # what earlier runs show, every item cited
    memory.open_trajectory(run_id, goal=obs["goal"], site=site)
    done, reward = False, 0.0
    while not done:
        action, info = agent.get_action({**obs, "runbook_memory": hints})
        memory.append_state(
            run_id,
            {
                "url": obs["url"],
                "axtree_txt": obs["axtree_txt"],  # AgentLab's flattened tree (live runs: see with_axtree_text)
                "action": action,
                "think": info.think,
                "last_action_error": obs["last_action_error"],  # the previous action's: stored on that step
            },
        )
        obs, reward, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    memory.close_trajectory(run_id, outcome=f"{'success' if reward >= 1 else 'failure'} (reward {reward})")
    return reward
# end README


def as_text(context: dict[str, Any]) -> str:
    """A context as the text to put in a prompt: the analysis, then each item (each names its source)."""
    return "\n\n".join([context["analysis"], *(item["text"] for item in context["items"])])


class ReplayEnv:
    """A recorded AgentLab run's observations, played back as BrowserGym's env.reset() and env.step() return them."""

    def __init__(self, records: list[dict[str, Any]]):
        self.records, self.position = records, 0

    def reset(self) -> tuple[dict[str, Any], dict]:
        self.position = 0
        return self.records[0]["obs"], {}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict]:
        self.position += 1
        last = self.position >= len(self.records)
        record = self.records[min(self.position, len(self.records) - 1)]
        return record["obs"], float(record.get("reward") or 0), last or bool(record.get("terminated")), False, {}


class ReplayAgent:
    """The recorded run's actions and thoughts, in the order they were taken."""

    def __init__(self, records: list[dict[str, Any]]):
        self.records, self.position = records, 0

    def get_action(self, obs: dict[str, Any]) -> tuple[str, SimpleNamespace]:
        record = self.records[self.position]
        self.position += 1
        return record["action"], SimpleNamespace(think=(record.get("agent_info") or {}).get("think", ""))


def live_env(start_url: str, goal: str):
    """BrowserGym's open-ended task at `start_url`, its observations with AgentLab's flattened tree added."""
    import gymnasium as gym

    import browsergym.core  # noqa: F401  (registers browsergym/openended)

    return with_axtree_text(gym.make("browsergym/openended", task_kwargs={"start_url": start_url, "goal": goal}))


def with_axtree_text(env):
    """BrowserGym observes an accessibility tree object; runbook (and AgentLab's agents) read it as text."""
    from browsergym.utils.obs import flatten_axtree_to_str

    reset, step = env.reset, env.step

    def flat(obs: dict[str, Any]) -> dict[str, Any]:
        return {**obs, "axtree_txt": flatten_axtree_to_str(obs["axtree_object"])}

    env.reset = lambda *a, **k: (lambda out: (flat(out[0]), out[1]))(reset(*a, **k))
    env.step = lambda action: (lambda out: (flat(out[0]), *out[1:]))(step(action))
    return env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765", help="the runbook server")
    parser.add_argument("--replay", help="an AgentLab run's recorded steps (JSON list) instead of a browser")
    parser.add_argument("--start-url", help="live: where the task starts")
    parser.add_argument("--goal", help="live: the task")
    parser.add_argument("--agent", help="live: your agent class, as module:Class")
    parser.add_argument("--site", default="shopping_admin")
    args = parser.parse_args(argv)
    memory = Client(args.url)  # the key, if the server has one: env RUNBOOK_API_KEY
    if args.replay:
        records = json.loads(Path(args.replay).read_text())
        env, agent = ReplayEnv(records), ReplayAgent(records)
    else:
        module, _, name = args.agent.partition(":")
        env, agent = live_env(args.start_url, args.goal), getattr(importlib.import_module(module), name)()
    reward = run_task(memory, env, agent, site=args.site)
    print(f"reward {reward}; what the store holds now: {memory.stats()['trajectories']} trajectories")


if __name__ == "__main__":
    main()
