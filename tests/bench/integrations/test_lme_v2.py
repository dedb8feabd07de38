"""The LongMemEval-V2 adapter without the harness: a stand-in base class with the harness's signatures, and a
stand-in harness checkout that the launcher runs in a subprocess exactly as the README says."""

from __future__ import annotations

import abc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runbook.bench.integrations.lme_v2 import MEMORY_TYPE, memory_class
from tests.bench.conftest import PNG_BYTES, trajectories

ROOT = Path(__file__).resolve().parents[3]


class StandInMemory(abc.ABC):
    """The harness's base class, reduced to what a memory sees: its constructor and two abstract calls."""

    memory_type: str = ""

    def __init__(self, memory_params: dict[str, object]) -> None:
        self.memory_params = dict(memory_params)

    @abc.abstractmethod
    def insert(self, trajectory: dict[str, object]) -> None: ...

    @abc.abstractmethod
    def query(self, query: str, query_image: str | None = None) -> list[dict[str, str]]: ...


def content_form(obj: dict) -> dict:
    """The same trajectory in the harness's content + metadata form."""
    return {
        "id": obj["id"],
        "outcome": obj["outcome"],
        "metadata": {"original_goal": obj["goal"]},
        "content": [
            {
                "url": s["url"],
                "action": s["action"],
                "thoughts": s["thought"],
                "observation": {"text": s["accessibility_tree"], "screenshot": s.get("screenshot")},
            }
            for s in obj["states"]
        ],
    }


def test_the_memory_subclasses_the_harness_base_and_registers(tmp_path):
    registry = {}
    cls = memory_class(StandInMemory, lambda c: registry.setdefault(c.memory_type, c))
    assert registry == {MEMORY_TYPE: cls} and issubclass(cls, StandInMemory)
    (tmp_path / "screenshots" / "t-cancel").mkdir(parents=True)
    (tmp_path / "screenshots" / "t-cancel" / "1.png").write_bytes(PNG_BYTES)
    memory = cls({"method": "r", "budget": "2k", "screenshot_root": str(tmp_path), "store_dir": str(tmp_path / "s")})
    assert memory.memory_params["method"] == "r"
    cancel, *others = trajectories()
    cancel["states"][1]["screenshot"] = "screenshots/t-cancel/1.png"
    memory.insert(cancel)
    for other in others:
        memory.insert(content_form(other))
    items = memory.query("What does the dialog ask before an order is canceled?")
    assert items and all(set(i) == {"type", "value"} and i["type"] in ("text", "image") for i in items)
    assert items[0]["value"].startswith("Analysis:")
    text = "\n".join(i["value"] for i in items if i["type"] == "text")
    assert "Are you sure you want to cancel this order?" in text
    images = [i["value"] for i in items if i["type"] == "image"]
    assert all(Path(p).is_file() for p in images)


def test_any_registered_method_can_stand_behind_it(tmp_path):
    memory = memory_class(StandInMemory)({"method": "none", "store_dir": str(tmp_path)})
    memory.insert(trajectories()[0])
    assert memory.query("anything?") == []


STAND_IN_HARNESS = {
    "memory_modules/__init__.py": "",
    "memory_modules/memory.py": """
        import abc
        MEMORY_TYPES = {}
        class Memory(abc.ABC):
            memory_type = ""
            def __init__(self, memory_params):
                self.memory_params = dict(memory_params)
            @abc.abstractmethod
            def insert(self, trajectory): ...
            @abc.abstractmethod
            def query(self, query, query_image=None): ...
        def register_memory(cls):
            MEMORY_TYPES[cls.memory_type] = cls
            return cls
        def build_memory(config):
            return MEMORY_TYPES[config["memory_type"]](config["memory_params"])
    """,
    "data/__init__.py": "",
    "data/public_data.py": """
        import json
        def materialize_runtime_questions(*, data_root, domain, question_ids, limit, output_path):
            rows = [json.loads(l) for l in (data_root / "questions.jsonl").read_text().splitlines()]
            rows = [r for r in rows if r["domain"] == domain][:limit]
            output_path.write_text(json.dumps(rows))
            return rows
        def materialize_runtime_haystack(*, data_root, tier, selected_questions, output_path):
            mapping = json.loads((data_root / "haystacks" / f"lme_v2_{tier}.json").read_text())
            output_path.write_text(json.dumps({q["id"]: mapping[q["id"]] for q in selected_questions}))
    """,
    "evaluation/__init__.py": "",
    "evaluation/harness.py": """
        import argparse, json, time
        from pathlib import Path
        import os
        from memory_modules.memory import build_memory
        def get_memory_context_processor():
            if os.environ.get("STAND_IN_NO_PROCESSOR"):
                raise OSError("We couldn't connect to 'https://huggingface.co' to load the files of Qwen/Qwen3.5-9B")
            return object()
        def main():
            p = argparse.ArgumentParser()
            for name in ("--domain", "--questions-path", "--haystack-path", "--trajectories-path",
                         "--memory-config-path", "--output-dir", "--model", "--memory-context-max-tokens"):
                p.add_argument(name)
            a = p.parse_args()
            config = json.loads(Path(a.memory_config_path).read_text())
            trajectories = {t["id"]: t for t in map(json.loads, Path(a.trajectories_path).read_text().splitlines())}
            haystacks = json.loads(Path(a.haystack_path).read_text())
            out = Path(a.output_dir)
            with open(out / "per_question.jsonl", "w") as fh:
                for q in json.loads(Path(a.questions_path).read_text()):
                    memory = build_memory(config)
                    for tid in haystacks[q["id"]]:
                        memory.insert(trajectories[tid])
                    started = time.perf_counter()
                    context = memory.query(q["question"], query_image=None)
                    fh.write(json.dumps({"question_id": q["id"], "memory_context": context, "model": a.model,
                                         "memory_query_duration_seconds": time.perf_counter() - started}) + "\\n")
    """,
}


def stand_in_harness(tmp_path: Path) -> Path:
    harness = tmp_path / "LongMemEval-V2"
    for name, body in STAND_IN_HARNESS.items():
        (harness / name).parent.mkdir(parents=True, exist_ok=True)
        (harness / name).write_text(textwrap.dedent(body))
    return harness


def launcher(lme_root: Path, tmp_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "runbook.bench.integrations.lme_v2",
        "--data-root",
        str(lme_root),
        "--domain",
        "web",
        "--tier",
        "small",
        "--output-dir",
        str(tmp_path / "out"),
        "--limit",
        "2",
        "--params",
        json.dumps({"method": "r", "budget": "2k"}),
        "--",
        "--model",
        "Qwen/Qwen3.5-9B",
        "--memory-context-max-tokens",
        "8000",
    ]


def test_the_launcher_runs_runbook_inside_the_harness(lme_root, tmp_path):
    harness = stand_in_harness(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = launcher(lme_root, tmp_path)
    done = subprocess.run(command, cwd=harness, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "out" / "runtime_inputs" / "memory_config.json").read_text())
    assert config == {
        "memory_type": "runbook",
        "memory_params": {"screenshot_root": str(lme_root.resolve()), "method": "r", "budget": "2k"},
    }
    rows = [json.loads(line) for line in (tmp_path / "out" / "per_question.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ["q-static", "q-dynamic"] and rows[0]["model"] == "Qwen/Qwen3.5-9B"
    assert "Are you sure" in json.dumps(rows[0]["memory_context"]) and "$32.88" in json.dumps(rows[1]["memory_context"])


def test_a_reader_processor_that_does_not_load_stops_the_launcher_before_any_insert(lme_root, tmp_path):
    """Issue 34 item 15: the harness loads its processor at its first prompt, after inserting the whole haystack,
    so a missing one failed minutes into a run; the launcher loads it first and says what to do."""
    harness = stand_in_harness(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STAND_IN_NO_PROCESSOR": "1"}
    done = subprocess.run(launcher(lme_root, tmp_path), cwd=harness, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the harness's reader processor does not load (OSError" in done.stderr and "HF_HUB_OFFLINE=1" in done.stderr
    assert not (tmp_path / "out" / "per_question.jsonl").exists()
    started = subprocess.run(
        [*launcher(lme_root, tmp_path)[:-5], "--no-processor-check", *launcher(lme_root, tmp_path)[-5:]],
        cwd=harness,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr


@pytest.mark.parametrize("bad", [{"id": "x"}, {"id": "x", "states": []}])
def test_a_bad_trajectory_is_named(tmp_path, bad):
    memory = memory_class(StandInMemory)({"method": "none", "store_dir": str(tmp_path)})
    with pytest.raises(RuntimeError, match="trajectory 'x'"):
        memory.insert(bad)


def test_a_question_is_visual_when_its_context_lacks_a_thing_the_pages_rarely_write():
    from runbook.bench.integrations.lme_v2 import is_visual
    from runbook.context import Context, EvidenceItem

    context = Context(question="", budget=1000)
    context.items.append(EvidenceItem(trajectory_id="t", state_index=0, text="Open issues: 3 · Closed issues: 5"))
    rare = {"badge": 0.001, "header": 0.004}  # the store's other words are on many of its pages

    def share_of(text: str) -> dict[str, float]:
        return {word: rare.get(word, 0.3) for word in text.split()}

    assert is_visual("What number does the count badge in the header show?", None, context, share_of)
    # words the context does not repeat but the pages often write, and a verb's form, name nothing to look at
    assert not is_visual("How many issues did the shopper see?", None, context, share_of)
    assert not is_visual("Which issues were switched?", None, context, share_of)
    assert is_visual("Which issues were open?", "shot.png", context, share_of)  # a question with an image is
    assert is_visual("How many issues did the shopper see?", None, context)  # without the store's shares: any word
