"""One store per distinct haystack: keyed by content, built once in haystack order, reused, never half-built."""

from __future__ import annotations

import json
import shutil

import pytest

from runbook.bench.questions import Haystack, StateRef, load_question_set
from runbook.bench.stores import MANIFEST, prepare_store
from runbook.core.pools import FORMAT as POOLS_FORMAT
from runbook.core.pools import MANIFEST as POOLS_MANIFEST
from runbook.errors import StoreError
from runbook.pools import Retriever
from runbook.store import Store


def test_a_haystack_store_is_built_once_and_reused(generated_set, tmp_path):
    haystack = load_question_set(generated_set).haystacks[0]
    first = prepare_store(haystack, tmp_path / "stores", workers=1)
    assert [row.id for row in first.store.rows()] == ["t-cancel", "t-old-price", "t-new-price", "t-filters"]
    assert first.write_failures == 0 and first.manifest["stored"] == 4
    assert (first.store.root / "pools").is_dir()  # method R's pools are built with it
    assert first.store.root.stat().st_mode & 0o777 == 0o755  # the sandbox user (uid 1000) reads it
    built = (first.store.root / MANIFEST).stat().st_mtime_ns
    again = prepare_store(haystack, tmp_path / "stores", workers=1)
    assert again.key == first.key and (again.store.root / MANIFEST).stat().st_mtime_ns == built


def test_the_key_follows_content_not_place(generated_set, tmp_path):
    copy = tmp_path / "elsewhere"
    shutil.copytree(generated_set.parent, copy)
    stores = tmp_path / "stores"
    a = prepare_store(load_question_set(generated_set).haystacks[0], stores, workers=1)
    b = prepare_store(load_question_set(copy).haystacks[0], stores, workers=1)
    assert a.key == b.key
    trajectories = copy / "trajectories.jsonl"
    trajectories.write_text(trajectories.read_text().replace("$32.88", "$35.00"))
    c = prepare_store(load_question_set(copy).haystacks[0], stores, workers=1)
    assert c.key != a.key and sorted(p.name for p in stores.iterdir()) == sorted([a.key, c.key])


def test_a_subset_haystack_is_inserted_in_its_order(lme_root, tmp_path):
    subset = load_question_set(lme_root).haystacks[1]
    ready = prepare_store(subset, tmp_path / "stores", workers=1)
    assert [row.id for row in ready.store.rows()] == ["t-filters", "t-cancel"]
    assert ready.missing_states([StateRef("t-cancel", 2), StateRef("t-cancel", 3), StateRef("t-new-price", 0)]) == [
        StateRef("t-cancel", 3),
        StateRef("t-new-price", 0),
    ]
    assert not list((tmp_path / "stores").glob("*.jsonl"))  # the subset file is gone


def test_an_unknown_trajectory_id_is_named(lme_root, tmp_path):
    haystack = Haystack(lme_root / "trajectories.jsonl", ("t-cancel", "t-missing"), name="small-x")
    with pytest.raises(StoreError, match="t-missing"):
        prepare_store(haystack, tmp_path / "stores", workers=1)


def test_a_build_left_half_done_is_not_reused(generated_set, tmp_path):
    stores = tmp_path / "stores"
    haystack = load_question_set(generated_set).haystacks[0]
    ready = prepare_store(haystack, stores, workers=1)
    (ready.store.root / MANIFEST).unlink()  # as if killed before the build finished
    again = prepare_store(haystack, stores, workers=1)
    assert (again.store.root / MANIFEST).exists() and len(again.store) == 4


def _set_pool_format(store_root, format_):
    manifest_path = store_root / "pools" / POOLS_MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["format"] = format_
    manifest_path.write_text(json.dumps(manifest))


def test_a_reused_store_with_pools_of_an_older_format_is_reindexed(generated_set, tmp_path):
    stores = tmp_path / "stores"
    haystack = load_question_set(generated_set).haystacks[0]
    first = prepare_store(haystack, stores, workers=1)
    _set_pool_format(first.store.root, POOLS_FORMAT - 1)  # as an older runbook wrote them
    with pytest.raises(StoreError, match="runbook reindex"):
        Retriever(Store(first.store.root)).search("What is the current price of the Quest Lumaflex Band?", 2000)
    said = []
    again = prepare_store(haystack, stores, workers=1, note=said.append)
    assert again.key == first.key
    assert len(said) == 1 and f"pool format {POOLS_FORMAT - 1}" in said[0] and "reindexing" in said[0]
    items, _ = Retriever(again.store).search("What is the current price of the Quest Lumaflex Band?", 2000)
    assert items and {item.trajectory_id for item in items} <= {row.id for row in again.store.rows()}
    recorded = json.loads((again.store.root / MANIFEST).read_text())["reindexed"]
    assert len(recorded) == 1 and f"pool format {POOLS_FORMAT - 1}" in recorded[0]["why"]
    said.clear()
    prepare_store(haystack, stores, workers=1, note=said.append)
    assert said == []  # readable pools are left as they are


def test_a_reused_store_without_pools_gets_them(generated_set, tmp_path):
    stores = tmp_path / "stores"
    haystack = load_question_set(generated_set).haystacks[0]
    first = prepare_store(haystack, stores, workers=1)
    shutil.rmtree(first.store.root / "pools")
    said = []
    again = prepare_store(haystack, stores, workers=1, note=said.append)
    assert said and "no retrieval pools" in said[0]
    items, _ = Retriever(again.store).search("What is the current price of the Quest Lumaflex Band?", 2000)
    assert items


def test_a_given_store_is_read_as_it_is_never_rebuilt(generated_set, tmp_path):
    from runbook.bench.stores import given_store
    from runbook.errors import ConfigError

    haystack = load_question_set(generated_set).haystacks[0]
    built = prepare_store(haystack, tmp_path / "stores", workers=1)
    given = given_store(haystack, built.store.root)
    assert given.write_failures == 0 and given.manifest["stored"] == 4
    _set_pool_format(built.store.root, POOLS_FORMAT - 1)
    before = (built.store.root / "pools" / POOLS_MANIFEST).read_bytes()
    with pytest.raises(ConfigError, match="runbook reindex"):
        given_store(haystack, built.store.root)
    assert (built.store.root / "pools" / POOLS_MANIFEST).read_bytes() == before  # someone's store: not touched
