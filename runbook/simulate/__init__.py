"""runbook.simulate: a deterministic synthetic web app ("Acme Admin") whose simulated agents produce trajectories
in the shared JSONL schema, plus questions with gold answers derived from the simulator's ground truth.

    trajectories, questions = generate_world(seed=7, n_trajectories=200)
    write_dataset("out/", seed=7, n=200)          # trajectories.jsonl, questions.jsonl, screenshots/
"""

from .dataset import generate_world, write_dataset
from .questions import state_text

__all__ = ["generate_world", "state_text", "write_dataset"]
