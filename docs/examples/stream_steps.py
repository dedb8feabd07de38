"""Stream recorded agent steps into a running `runbook serve http`, in the shape the framework wrote them, then ask.

    runbook serve http --port 8765 --create &
    python docs/examples/stream_steps.py docs/examples/agentlab_steps.json http://127.0.0.1:8765
    python docs/examples/stream_steps.py docs/examples/browser_use_steps.json http://127.0.0.1:8765

Inside an agent's own loop the same three calls go around each step (see the README's "A browser-use or
BrowserGym agent").
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from runbook.serve.client import Client


def main(steps_file: str, url: str = "http://127.0.0.1:8765") -> None:
    steps = json.loads(Path(steps_file).read_text())
    memory = Client(url)
    run_id = f"{Path(steps_file).stem}-{uuid.uuid4().hex[:8]}"
    memory.open_trajectory(run_id, goal="an example run", site="example")
    for step in steps:  # an AgentLab step record or a browser-use history entry, exactly as recorded
        reply = memory.append_state(run_id, step)
        print(f"step {reply['state_index']}: stored at {reply['timestamp']}")
    print(memory.close_trajectory(run_id, outcome="success (reward 1.0)"))
    stored = memory.trajectory(run_id)["states"]
    for state in stored:
        print(f"  {state['state_index']}: {state['url']} {state['action']!r} error={state['action_error']!r}")
    context = memory.query("What must be done before the report shows any data?", budget="2k", method="r")
    print(context["analysis"])


if __name__ == "__main__":
    main(*sys.argv[1:])
