"""`run_bench` end to end: real stores and methods from the registry, the reader and the judge over the real
OpenAI client against the loopback fake server, run folders with the harness's field names, resuming."""

from __future__ import annotations

import json
import re

import pytest

from runbook.bench.config import ModelSpec, ReaderSpec, config_from_dict
from runbook.bench.runner import RunOptions, run_bench
from runbook.models.fakes import FakeOpenAIServer, Reply
from runbook.models.reader import READER_PROMPTS

ANSWERS = {"dialog ask": "Are you sure", "current price": "$32.88"}


def fake_models(request: dict) -> Reply:
    """A reader that boxes what the context shows (UNKNOWN otherwise), and a judge that reads the reply."""
    system = request["messages"][0]["content"]
    if system in READER_PROMPTS.values():
        parts = request["messages"][1]["content"]
        context = " ".join(p.get("text", "") for p in parts[:-1])
        question = parts[-1]["text"]
        if "Shipping Policy" in question:
            return Reply(text="No such page exists. \\boxed{There is no Shipping Policy page}")
        if "no records" in question:
            return Reply(text="\\boxed{Reload the page}")
        for key, answer in ANSWERS.items():
            if key in question:
                return Reply(text=f"\\boxed{{{answer}}}" if answer in context else "\\boxed{UNKNOWN}")
        return Reply(text="\\boxed{UNKNOWN}")
    user = request["messages"][1]["content"]
    names_flaw = "no Shipping Policy page" in user.split("Model full response:")[1]
    return Reply(text=json.dumps({"label": int(names_flaw), "reason": "flaw named" if names_flaw else "no insight"}))


def make_config(tmp_path, questions, methods, **extra):
    return config_from_dict(
        {
            "name": "t",
            "questions": [q if isinstance(q, dict) else str(q) for q in questions],
            "methods": methods,
            "budgets": ["2k"],
            **extra,
        },
        base=tmp_path,
        name="t",
    )


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(respond=fake_models) as server:
        yield server


def test_a_reader_scored_run_writes_the_harness_files(generated_set, tmp_path, fake_server, clean_env):
    config = make_config(tmp_path, [generated_set], [{"label": "R", "method": "r"}, {"method": "none"}])
    config.reader = ReaderSpec(
        provider="openai", model="reader-model", base_url=fake_server.base_url, max_output_tokens=64
    )
    config.judge = ModelSpec(provider="openai", model="judge-model", base_url=fake_server.base_url)
    results = run_bench(config, RunOptions(insert_workers=1))
    r, none = (res.metrics for res in results)
    folder = tmp_path / "runs" / "t" / "r-2k"
    assert results[0].folder == folder and sorted(p.name for p in folder.iterdir()) == [
        "aggregated_metrics.json",
        "config.json",
        "per_question.jsonl",
    ]
    records = {rec["question_id"]: rec for rec in map(json.loads, (folder / "per_question.jsonl").open())}
    static = records["q-static"]
    for name in (
        "memory_query_duration_seconds",
        "memory_context",
        "memory_context_token_count",
        "response_raw",
        "response_parsed_boxed",
        "is_unknown",
        "score",
        "score_bool",
        "answer_gold",
        "category",
        "is_abstention_problem",
    ):
        assert name in static
    assert static["response_parsed_boxed"] == "Are you sure" and static["score"] == 1.0
    assert static["reader_free"]["answer_phrases"] and static["diagnosis"]["read_failure"] is False
    assert records["q-abs"]["judge_label"] == 1 and records["q-abs"]["score"] == 1.0
    assert records["q-gotcha"]["judge_label"] == 0 and records["q-gotcha"]["judge_reason"] == "no insight"
    # R finds both phrases; the judge passes the flaw and fails the gotcha answer
    assert records["q-dynamic"]["reader_free"]["answer_phrases"] and records["q-dynamic"]["score"] == 1.0
    assert r["overall"]["overall_full_set"] == pytest.approx(3 / 4)
    # the gotcha's evidence reached the context and the reader still missed it: a UTILIZATION failure
    assert records["q-gotcha"]["diagnosis"] == {
        "write_failure": False,
        "read_failure": False,
        "utilization_failure": True,
        "staleness_failure": None,
    }
    assert (r["diagnostics"]["utilization_failures"], r["diagnostics"]["read_failures"]) == (1, 0)
    assert r["overall"]["overall_abstention_only"] == 1.0 and r["overall"]["count_abstention"] == 1
    assert r["non_abstention_by_category"]["static"] == {
        "count": 1,
        "pct_correct": 1.0,
        "pct_answered_wrong": 0.0,
        "pct_unknown": 0.0,
    }
    assert set(r["memory_query"]) == {"avg_seconds", "p50_seconds", "p95_seconds", "max_seconds", "total_seconds"}
    assert r["diagnostics"]["write_failures"] == 0 and r["diagnostics"]["store_write_failures"] == 0
    # no memory: the reader says UNKNOWN to the phrase questions, which score 0 and count as unknown
    assert none["non_abstention_by_category"]["static"]["pct_unknown"] == 1.0
    assert none["overall"]["overall_non_abstention_only"] == 0.0 and none["diagnostics"]["read_failures"] == 3
    readers = [q for q in fake_server.requests if q["model"] == "reader-model"]
    judges = [q for q in fake_server.requests if q["model"] == "judge-model"]
    assert len(readers) == 8 and len(judges) == 4 and all(q["max_tokens"] == 64 for q in readers)
    config_json = json.loads((folder / "config.json").read_text())
    assert config_json["method"] == "r" and config_json["budget"] == 2000
    assert config_json["reader"]["reader_model"] == "reader-model"


def test_runs_resume_where_they_stopped(dev_set, tmp_path, clean_env):
    config = make_config(tmp_path, [dev_set], [{"label": "BM25", "method": "bm25"}])
    run_bench(config, RunOptions(limit=2, insert_workers=1))
    path = tmp_path / "runs" / "t" / "bm25-2k" / "per_question.jsonl"
    assert len(path.read_text().splitlines()) == 2
    text = path.read_text()
    path.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1] + '{"question_id": "q-dyn')  # killed mid-line
    metrics = run_bench(config, RunOptions(insert_workers=1))[0].metrics
    lines = path.read_text().splitlines()
    ids = [json.loads(line)["question_id"] for line in lines if line.endswith("}")]
    assert ids == ["q-static", "q-dynamic", "q-abs", "q-gotcha"] and metrics["count"] == 4
    assert metrics["reader_free"]["answer_phrases_count"] == 2  # the static and the dynamic question
    run_bench(config, RunOptions(insert_workers=1))  # nothing left to do: no new record
    assert path.read_text().splitlines() == lines


def test_a_changed_method_refuses_to_resume_without_fresh(dev_set, tmp_path, clean_env):
    from runbook.errors import ConfigError

    run_bench(make_config(tmp_path, [dev_set], [{"label": "R", "method": "r"}]), RunOptions(limit=1, insert_workers=1))
    changed = make_config(tmp_path, [dev_set], [{"label": "R", "method": "r", "options": {"slice_tokens": 300}}])
    with pytest.raises(ConfigError, match="another options"):
        run_bench(changed, RunOptions(limit=1, insert_workers=1))
    assert run_bench(changed, RunOptions(limit=1, fresh=True, insert_workers=1))[0].metrics["count"] == 1


def test_jobs_run_questions_at_once_and_a_failed_query_is_recorded(lme_root, tmp_path, clean_env, monkeypatch):
    from runbook.memory.baselines import FullTrajectoriesMemory

    real_query = FullTrajectoriesMemory.query

    def flaky(self, question, *, budget, image=None):
        if "Shipping" in question:
            raise OSError("disk went away")
        return real_query(self, question, budget=budget, image=image)

    monkeypatch.setattr(FullTrajectoriesMemory, "query", flaky)
    config = make_config(tmp_path, [{"path": str(lme_root), "tier": "small"}], [{"method": "full"}])
    metrics = run_bench(config, RunOptions(jobs=3, insert_workers=1))[0].metrics
    assert metrics["count"] == 4 and metrics["errors"] == 1
    records = [json.loads(line) for line in (tmp_path / "runs/t/full-2k/per_question.jsonl").open()]
    failed = next(r for r in records if r["question_id"] == "q-abs")
    assert re.match(r"OSError: disk went away", failed["error"]) and failed["memory_context"] == []
    assert len({r["haystack"] for r in records}) == 2  # the gotcha question has a haystack of its own
    assert len(list((tmp_path / "stores").iterdir())) == 2
    monkeypatch.setattr(FullTrajectoriesMemory, "query", real_query)  # the disk is back: resume retries it
    metrics = run_bench(config, RunOptions(insert_workers=1))[0].metrics
    assert metrics["count"] == 4 and metrics["errors"] == 0


def test_a_sandbox_error_stops_the_run(dev_set, tmp_path, clean_env, monkeypatch):
    from runbook.errors import SandboxError
    from runbook.memory.baselines import NoMemory

    def no_engine(self, question, *, budget, image=None):
        raise SandboxError("no Docker engine answers")

    monkeypatch.setattr(NoMemory, "query", no_engine)
    with pytest.raises(SandboxError, match="no Docker engine"):
        run_bench(make_config(tmp_path, [dev_set], [{"method": "none"}]), RunOptions(insert_workers=1))
    assert not (tmp_path / "runs/t/none-2k/per_question.jsonl").exists()


class NotesKept:
    """A Progress that keeps the runner's notes."""

    def __init__(self):
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def begin(self, label: str, total: int, done: int) -> None:
        pass

    def advance(self, label: str) -> None:
        pass


def test_a_store_whose_pools_an_older_runbook_wrote_is_reindexed_before_r_reads_it(dev_set, tmp_path, clean_env):
    from runbook.core.pools import FORMAT, MANIFEST

    config = make_config(tmp_path, [dev_set], [{"label": "R", "method": "r"}])
    run_bench(config, RunOptions(limit=2, insert_workers=1))
    [store] = [p for p in (tmp_path / "stores").iterdir() if p.is_dir()]
    manifest = json.loads((store / "pools" / MANIFEST).read_text())
    (store / "pools" / MANIFEST).write_text(json.dumps(manifest | {"format": FORMAT - 1}))
    progress = NotesKept()
    run_bench(config, RunOptions(limit=2, fresh=True, insert_workers=1), progress)
    assert any("reindexing" in note and store.name in note for note in progress.notes)
    records = [json.loads(line) for line in (tmp_path / "runs" / "t" / "r-2k" / "per_question.jsonl").open()]
    assert len(records) == 2 and not any("error" in r for r in records)
    assert all(r["memory_context"] for r in records)


def test_a_config_store_is_asked_instead_of_building_haystack_stores(dev_set, tmp_path, clean_env):
    from runbook.errors import ConfigError
    from runbook.ingest import insert_paths
    from runbook.pools import insert_listener
    from runbook.store import Store
    from tests.bench.conftest import trajectories
    from tests.conftest import make_trajectory

    # an agent's own memory: two of the haystack's four trajectories, plus one of its own
    kept = [t for t in trajectories() if t["id"] in ("t-cancel", "t-new-price")]
    own = make_trajectory("agent-1", 2, texts=["RootWebArea 'Dashboard'", "StaticText 'Welcome'"]).to_dict()
    lines = tmp_path / "m.jsonl"
    lines.write_text("".join(json.dumps(t) + "\n" for t in [*kept, own]))
    memory = Store(tmp_path / "memory", create=True)
    insert_paths(memory, [lines], listeners=[insert_listener(memory)], workers=1)
    config = make_config(tmp_path, [dev_set], [{"label": "R", "method": "r"}], store="memory")
    [result] = run_bench(config, RunOptions(insert_workers=1))
    assert result.metrics["count"] == 4 and not (tmp_path / "stores").exists()  # nothing built
    assert result.metrics["diagnostics"]["store_write_failures"] == 2  # t-old-price and t-filters are not in it
    records = [json.loads(line) for line in (result.folder / "per_question.jsonl").open()]
    assert not any("error" in r for r in records)
    texts = [part["value"] for r in records for part in r["memory_context"] if part["type"] == "text"]
    cited = {t for text in texts for t in re.findall(r"^\[\w+\] trajectory ([\w-]+)", text, re.M)}
    assert cited and cited <= {"t-cancel", "t-new-price", "agent-1"}
    assert json.loads((result.folder / "config.json").read_text())["store"] == str(tmp_path / "memory")
    elsewhere = make_config(tmp_path, [dev_set], [{"label": "R", "method": "r"}], store="missing")
    with pytest.raises(ConfigError, match="no runbook store at"):
        run_bench(elsewhere, RunOptions(insert_workers=1, fresh=True))
