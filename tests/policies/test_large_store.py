"""C over a large store reads only the runs R's index ranks best for the question (core.recall.scan_candidates):
its scan, its catalog rows and its findings' page lookups. Tested on real WebArena runs with the size threshold
lowered, so that 16 runs count as a large store."""

from __future__ import annotations

import json

import pytest

import runbook.core.recall as recall_module
from runbook.agent.types import Task
from runbook.core.catalog import load_catalog
from runbook.core.question import analyze
from runbook.core.recall import Recall, ScanCandidates
from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.policies.offline.planner import OfflinePlanner
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import shared_runs
from tests.policies.test_offline import run_program

RUNS = [f"wa-shopping_admin-{n}" for n in (0, 1, 3, 4, 6, 11, 12, 13, 14, 15, 42, 43)]
RUNS += ["wa-gitlab-44", "wa-gitlab-104", "wa-gitlab-105", "wa-gitlab-132"]
QUESTION = "What is the top-1 best-selling product in 2022?"


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Store:
    folder = tmp_path_factory.mktemp("large")
    source = folder / "runs.jsonl"
    runs = shared_runs(*RUNS)
    source.write_text("".join(json.dumps(runs[tid]) + "\n" for tid in RUNS))
    store = Store(folder / "store", create=True)
    insert_paths(store, [source], listeners=[insert_listener(store)])  # as `runbook insert`: pools too
    return store


@pytest.fixture
def small_threshold(monkeypatch):
    """16 real runs count as a large store; at most 4 candidate runs."""
    monkeypatch.setattr(recall_module, "SCAN_ALL_STATES", 20)
    monkeypatch.setattr(recall_module, "CANDIDATE_RUNS", 4)


def test_a_store_below_the_threshold_is_scanned_whole(real_store):
    assert Recall(real_store.root).scan_candidates(analyze(QUESTION)) is None


def test_candidates_are_rs_evidence_runs_then_the_best_by_bm25_and_their_pages_are_found_by_number(
    real_store, small_threshold
):
    recall = Recall(real_store.root)
    candidates = recall.scan_candidates(analyze(QUESTION), first=["wa-gitlab-44"])
    assert candidates is not None
    assert candidates.runs[0] == "wa-gitlab-44" and len(candidates.runs) == 4
    assert "wa-shopping_admin-0" in candidates.runs  # the run that answered the question
    snapshot = recall.snapshot
    assert snapshot is not None and candidates.stamp == snapshot.stamp
    # where each state's slice document really is (one generation of each run in this store)
    every = {(doc["t"], doc["i"]): n for n, doc in enumerate(snapshot.docs("slices"))}
    assert candidates.first_docs  # real runs are inserted state after state
    for tid, (first, count) in candidates.first_docs.items():
        assert [every[(tid, i)] for i in range(count)] == list(range(first, first + count))


def test_a_catalog_read_for_some_runs_holds_exactly_their_rows_and_states(real_store):
    whole = load_catalog(str(real_store.root))
    some = load_catalog(str(real_store.root), only=["wa-gitlab-104", "wa-shopping_admin-3", "no-such-run"])
    assert list(some.rows) == [d for d in whole.rows if whole.rows[d].id in {"wa-gitlab-104", "wa-shopping_admin-3"}]
    assert some.states == {key: meta for key, meta in whole.states.items() if key[0] in some.rows}


def plan_request(store: Store, question: str) -> tuple[dict, ScanCandidates | None]:
    """rbplan's request as the host makes it: R's hits, and the candidates with the runs of R's evidence first."""
    recall = Recall(store.root)
    analysis = analyze(question)
    found = recall.find(analysis)
    hits = found.notes + found.events + found.slices
    candidates = recall.scan_candidates(analysis, first=[hit.trajectory_id for hit in hits])
    shares = recall.term_shares(sorted(set(analysis.terms)))
    policy = OfflinePlanner()
    policy.begin(Task(question, recall=hits, analysis=analysis, term_shares=shares, scan_candidates=candidates))
    return policy.plan_request().to_json(), candidates


def test_the_plan_scans_only_the_candidates_and_calls_missing_only_what_the_store_lacks(real_store, small_threshold):
    question = "Which merge request on gitlab names the best-selling product zorblax?"
    request, candidates = plan_request(real_store, question)
    assert candidates is not None
    assert request["scan"]["candidates"] == candidates.runs and request["slice_docs"]
    out = run_program(real_store, "plan", request)
    terms = next(r for r in out if r["type"] == "terms")
    read = set(candidates.runs)  # the runs of R's evidence among them
    assert {t for t, _ in request["recall_states"]} | set(request["recall_runs"]) <= read
    assert terms["n_trajectories"] == len(read) < len(RUNS)
    assert {r["t"] for r in out if r["type"] in ("state", "traj", "latest", "extra")} <= read
    assert "zorblax" in terms["missing"]  # written nowhere in the store
    words_elsewhere = [w for w in ("merge", "gitlab") if terms["df"].get(w, [0])[0] == 0]
    assert not set(words_elsewhere) & set(terms["missing"])  # in the store, not in the candidates: not missing


def test_findings_found_by_document_number_are_the_ones_read_from_every_document(real_store, small_threshold):
    question = "How many records are found in the orders grid?"  # counts read from the pages' structure
    request, candidates = plan_request(real_store, question)
    assert candidates is not None
    by_number = run_program(real_store, "plan", request)
    read_all = run_program(real_store, "plan", {**request, "slice_docs": {}, "pools_stamp": None})
    assert by_number == read_all
    assert any(r["type"] == "finding" and "records found" in r["text"] for r in by_number)
    stale = run_program(real_store, "plan", {**request, "pools_stamp": candidates.stamp + 1})
    assert stale == read_all  # another stamp's numbers are not used


def test_c_over_a_large_store_answers_from_its_candidates(real_store, small_threshold, clean_env, monkeypatch):
    sent: list[dict] = []
    plan_request_of = OfflinePlanner.plan_request
    monkeypatch.setattr(OfflinePlanner, "plan_request", lambda self: sent.append(plan_request_of(self)) or sent[-1])
    context = get_memory("c", real_store, sandbox="local").query(QUESTION, budget=4000)
    assert len(sent) == 1 and sent[0].scan.candidates and sent[0].slice_docs
    cited = {item.trajectory_id for item in context.items}
    assert "wa-shopping_admin-0" in cited and cited <= set(sent[0].scan.candidates)


def test_a_request_too_long_for_one_argument_drops_the_page_numbers(real_store, small_threshold, monkeypatch):
    import runbook.policies.offline.planner as planner

    monkeypatch.setattr(planner, "REQUEST_CHARS", 100)
    request, candidates = plan_request(real_store, QUESTION)
    assert candidates is not None
    assert request["scan"]["candidates"] == candidates.runs
    assert request["slice_docs"] == {} and request["pools_stamp"] is None


def test_a_search_for_several_runs_reads_only_them(real_store):
    """A tool call gives the trajectory filter as one string: names separated by commas."""
    from runbook.core.reader import StoreReader

    reader = StoreReader(str(real_store.root))
    everywhere = {hit.trajectory for hit in reader.grep("Dashboard", limit=None)}
    assert {"wa-gitlab-44", "wa-shopping_admin-0"} <= everywhere
    some = reader.grep("Dashboard", trajectory="wa-gitlab-44, wa-shopping_admin-0,wa-nope-1", limit=None)
    assert {hit.trajectory for hit in some} == {"wa-gitlab-44", "wa-shopping_admin-0"}
    globbed = reader.grep("Dashboard", trajectory="wa-gitlab-*,wa-shopping_admin-0", limit=None)
    assert {hit.trajectory for hit in globbed} == {t for t in everywhere if t.startswith("wa-gitlab-")} | {
        "wa-shopping_admin-0"
    }


def test_a_gotchas_probe_in_a_large_store_searches_the_candidate_runs(real_store, small_threshold):
    from runbook.core.choice import Choice
    from runbook.core.scanout import Run, Step

    question = "Why did the agent's search for the product fail?"
    candidates = Recall(real_store.root).scan_candidates(analyze(question))
    assert candidates is not None
    policy = OfflinePlanner()
    policy.begin(Task(question, scan_candidates=candidates))
    plan = policy.plan
    assert plan is not None and plan.kind == "gotcha"
    run = candidates.runs[0]
    plan.choice = Choice(runs=[Run(trajectory_id=run, n_states=2)])
    plan.steps = [Step(run, 0, action="fill textbox 'Search' with 'zorblax blender'")]
    probe = policy.probe_arguments()
    assert probe is not None and probe["trajectory"].split(",") == candidates.runs
