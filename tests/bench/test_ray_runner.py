"""`run_bench` on a real Ray cluster on loopback (a head and a worker node, each its own raylet and worker processes):
the run folders hold what a local run writes, item for item; a run resumes; a worker node lost mid-run loses
nothing (Ray restarts its actor elsewhere and retries the questions it had not answered)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import runbook
from runbook.bench.runner import RunOptions, run_bench
from tests.bench.test_runner import make_config

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
VARYING = {"timestamp_utc", "memory_query_duration_seconds", "method_latency_s"}
"""What differs between any two runs of the same question: when it ran and how long it took."""


@pytest.fixture(scope="module")
def ray_cluster():
    """A head (1 CPU) and a worker node (1 CPU, the only sandbox slot), every port on 127.0.0.1; the nodes' worker
    processes import the runbook under test."""
    temp_dir = tempfile.mkdtemp(prefix="rbray-", dir="/tmp")
    with pytest.MonkeyPatch.context() as env, contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, temp_dir, ignore_errors=True)  # also when the cluster does not start
        source_root = str(Path(runbook.__file__).resolve().parents[1])
        env.setenv("PYTHONPATH", os.pathsep.join(p for p in (source_root, os.environ.get("PYTHONPATH")) if p))
        env.setenv("RAY_USAGE_STATS_ENABLED", "0")
        env.setenv("RAY_TMPDIR", temp_dir)  # what loopback.start sets, undone after the module
        env.syspath_prepend(str(BENCHMARKS))
        import ray_cluster as loopback

        cluster, [worker] = loopback.start(workers=1, cpus=1, sandbox_slots=1, temp_dir=temp_dir, head_sandbox_slots=0)
        cluster.worker, cluster.replacement = worker, lambda: cluster.add_node(**loopback.node_args(1, 1))
        try:
            yield cluster
        finally:
            cluster.shutdown()


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "per_question.jsonl").read_text().splitlines()]


def same_records(a: Path, b: Path) -> None:
    """Both runs answered the same questions with the same contexts, item for item, and the same other fields."""
    left = {r["question_id"]: r for r in records(a)}
    right = {r["question_id"]: r for r in records(b)}
    assert sorted(left) == sorted(right)
    for qid, record in left.items():
        assert record["memory_context"] == right[qid]["memory_context"], qid
        assert steady(record) == steady(right[qid]), qid


def settled(metrics: dict) -> dict:
    """Aggregated metrics without the run's name, its end time and its latencies."""
    return {k: v for k, v in metrics.items() if k not in ("name", "completed_at_utc", "memory_query")}


def steady(record: dict) -> dict:
    """A record without what varies from run to run."""
    return {k: steady(v) if isinstance(v, dict) else v for k, v in record.items() if k not in VARYING}


def test_a_run_on_the_cluster_writes_what_a_local_run_writes(dev_set, tmp_path, ray_cluster):
    methods = [{"label": "R", "method": "r"}, {"method": "bm25"}]
    on_ray = make_config(tmp_path, [dev_set], methods, name="on-ray")
    local = make_config(tmp_path, [dev_set], methods, name="local")
    ray_results = run_bench(on_ray, RunOptions(insert_workers=1, ray=ray_cluster.address))
    local_results = run_bench(local, RunOptions(insert_workers=1))
    for r, l in zip(ray_results, local_results):
        assert sorted(p.name for p in r.folder.iterdir()) == sorted(p.name for p in l.folder.iterdir())
        same_records(r.folder, l.folder)
        assert settled(r.metrics) == settled(l.metrics)
    before = [(r.folder / "per_question.jsonl").read_bytes() for r in ray_results]
    again = run_bench(on_ray, RunOptions(insert_workers=1, ray=ray_cluster.address))
    assert [(r.folder / "per_question.jsonl").read_bytes() for r in again] == before  # resumed: nothing asked again


class LoseTheWorkerNode:
    """Progress that kills the worker node (its raylet and every worker process on it) when the first answer of
    `label` arrives, while that node still has questions of `label` to answer, then adds a fresh node in its place
    (the sandbox slot lived only there)."""

    def __init__(self, cluster, label: str):
        self.cluster, self.label, self.killed = cluster, label, False

    def note(self, text: str) -> None:
        pass

    def begin(self, label: str, total: int, done: int) -> None:
        pass

    def advance(self, label: str) -> None:
        if label == self.label and not self.killed:
            self.killed = True
            self.cluster.remove_node(self.cluster.worker, allow_graceful=False)
            self.cluster.worker = self.cluster.replacement()


@pytest.mark.docker
def test_a_worker_node_lost_mid_run_loses_nothing(dev_set, tmp_path, ray_cluster, clean_env):
    methods = [{"label": "C", "method": "c", "options": {"policy": "offline", "warm": True}}, {"method": "r"}]
    on_ray = make_config(tmp_path, [dev_set], methods, name="on-ray")
    local = make_config(tmp_path, [dev_set], methods, name="local")
    progress = LoseTheWorkerNode(ray_cluster, "C 2k")
    ray_results = run_bench(on_ray, RunOptions(insert_workers=1, ray=ray_cluster.address), progress)
    assert progress.killed
    local_results = run_bench(local, RunOptions(insert_workers=1))
    for r, l in zip(ray_results, local_results):
        lines = records(r.folder)
        assert sorted(rec["question_id"] for rec in lines) == ["q-abs", "q-dynamic", "q-gotcha", "q-static"]
        same_records(r.folder, l.folder)  # no duplicate, none missing, each context as a local run builds it
        assert r.metrics["errors"] == 0


def test_on_the_cluster_an_old_store_is_reindexed_and_a_given_store_is_asked(dev_set, tmp_path, ray_cluster):
    from runbook.core.pools import FORMAT, MANIFEST
    from tests.bench.test_runner import NotesKept

    methods = [{"label": "R", "method": "r"}]
    run_bench(make_config(tmp_path, [dev_set], methods, name="local"), RunOptions(insert_workers=1))
    [store] = [p for p in (tmp_path / "stores").iterdir() if p.is_dir()]
    manifest = json.loads((store / "pools" / MANIFEST).read_text())
    (store / "pools" / MANIFEST).write_text(json.dumps(manifest | {"format": FORMAT - 1}))
    progress = NotesKept()
    [old] = run_bench(
        make_config(tmp_path, [dev_set], methods, name="on-ray"),
        RunOptions(insert_workers=1, ray=ray_cluster.address),
        progress,
    )
    assert any("reindexing" in note and store.name in note for note in progress.notes)  # said on the node, shown here
    same_records(old.folder, tmp_path / "runs" / "local" / "r-2k")
    given = make_config(tmp_path, [dev_set], methods, name="given", store=str(store))
    [asked] = run_bench(given, RunOptions(insert_workers=1, ray=ray_cluster.address))
    same_records(asked.folder, tmp_path / "runs" / "local" / "r-2k")
    assert asked.metrics["diagnostics"]["store_write_failures"] == 0
