"""runbook through a driver that follows LongMemEval-V2's harness loop step by step (harness_driver.py): saving
and loading a memory, per-question haystacks and the disk they take, the cut counted with the reader's tokenizer,
and image items (issue #23, defects 1, 2, 3, 5 and 8)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from runbook.bench.integrations.lme_v2 import STORES, memory_class
from runbook.models.reader import lme_items_tokens, whole_items_within
from runbook.reader_tokens import ReaderCounter
from tests.bench.conftest import questions, trajectories
from tests.bench.integrations import harness_driver as harness

harness.MEMORY_TYPES.clear()
memory_class(harness.Memory, harness.register_memory)

SHOT = (480, 270)


@pytest.fixture(autouse=True)
def no_stores_left():
    yield
    STORES.clear()


@pytest.fixture
def data_root(tmp_path) -> Path:
    """A data root as the harness's prepare_data leaves it: screenshots/<trajectory>/<step>.png."""
    root = tmp_path / "lme"
    for tid, n in (("t-cancel", 3), ("t-filters", 2)):
        (root / "screenshots" / tid).mkdir(parents=True)
        for step in range(n):
            Image.new("RGB", SHOT, (200, 30 * step, 40)).save(root / "screenshots" / tid / f"{step}.png")
    return root


@pytest.fixture
def trajectory_map(data_root) -> dict[str, dict]:
    out = {}
    for obj in trajectories():
        if obj["id"] in ("t-cancel", "t-filters"):
            for state in obj["states"]:
                state["screenshot"] = f"{obj['id']}/{state['state_index']}.png"  # under screenshots/, as shipped
        out[obj["id"]] = obj
    return out


@pytest.fixture
def reader(tmp_path) -> Path:
    return harness.write_reader_tokenizer(tmp_path / "reader")


def config(data_root: Path, tmp_path: Path, **params) -> dict:
    base = {"method": "r", "budget": "2k", "screenshot_root": str(data_root), "store_dir": str(tmp_path / "stores")}
    return {"memory_type": "runbook", "memory_params": base | params}


def shared(questions_: list[dict], ids: list[str]) -> dict[str, list[str]]:
    return {q["id"]: ids for q in questions_}


ALL = ["t-cancel", "t-old-price", "t-new-price", "t-filters"]


def one_haystack(qs: list[dict], trajectory_map, reader, max_tokens: int) -> dict:
    """harness.run's arguments when every question shares the whole haystack, counted with the reader's tokenizer."""
    return dict(
        questions=qs,
        haystacks=shared(qs, ALL),
        trajectories=trajectory_map,
        max_tokens=max_tokens,
        processor=harness.ReaderProcessor(reader),
    )


def test_save_memory_then_load_memory_dir_gives_the_same_contexts(
    tmp_path, data_root, trajectory_map, reader, monkeypatch
):
    qs = questions() + [questions()[0] | {"id": "q-look", "question": "What does the cancel dialog look like?"}]
    common = one_haystack(qs, trajectory_map, reader, max_tokens=100_000)
    cfg = config(data_root, tmp_path)
    built = harness.run(memory_config=cfg, output_dir=tmp_path / "build", save_memory=True, **common)
    STORES.clear()  # the building process has exited: its stores are gone
    monkeypatch.chdir(tmp_path)  # --load-memory-dir as a user types it, relative to where the harness runs
    loaded = harness.run(
        memory_config=cfg, output_dir=tmp_path / "load", load_memory_dir=Path("build/memory_state"), **common
    )
    assert [r["memory_context"] for r in loaded] == [r["memory_context"] for r in built]
    images = [i["value"] for i in loaded[-1]["memory_context"] if i["type"] == "image"]
    assert images and all(Path(p).is_relative_to(data_root) for p in images)  # the same files, not the saved copies
    assert "Are you sure you want to cancel this order?" in json.dumps(loaded[0]["memory_context"])
    assert "$32.88" in json.dumps(loaded[1]["memory_context"])


def test_loading_a_save_without_a_store_is_refused_by_name(tmp_path, data_root, trajectory_map, reader):
    saved = tmp_path / "memory_state"
    saved.mkdir()
    (saved / "memory_config.json").write_text(json.dumps(config(data_root, tmp_path)))
    qs = questions()
    with pytest.raises(RuntimeError, match="runbook_store"):
        harness.run(
            memory_config=None,
            output_dir=tmp_path / "out",
            load_memory_dir=saved,
            **one_haystack(qs, trajectory_map, reader, max_tokens=8000),
        )


def test_per_question_haystacks_share_equal_stores_and_keep_disk_bounded(tmp_path, data_root, trajectory_map, reader):
    a, b, c = ALL, ["t-filters", "t-cancel"], ["t-new-price", "t-old-price", "t-cancel"]
    plan = [a, b, a, a, c, b, c, c]
    qs = [questions()[i % 4] | {"id": f"q{i}"} for i in range(len(plan))]
    stores = tmp_path / "stores"
    seen: set[str] = set()
    on_disk = []

    def after_each(_: str) -> None:
        folders = {p.name for p in stores.iterdir()}
        seen.update(folders)
        on_disk.append(len(folders))

    rows = harness.run(
        questions=qs,
        haystacks={q["id"]: ids for q, ids in zip(qs, plan)},
        trajectories=trajectory_map,
        memory_config=config(data_root, tmp_path, keep_stores=1),
        output_dir=tmp_path / "out",
        max_tokens=8000,
        processor=harness.ReaderProcessor(reader),
        after_each=after_each,
    )
    assert max(on_disk) == 1, on_disk  # the store in use is released with its memory; one idle store is kept
    # built: a, b, a, c, b, c; the 4th and 8th questions share the store the question before them built
    assert len(seen) == 6
    STORES.clear()
    assert not any(stores.iterdir())
    images = [i["value"] for r in rows for i in r["memory_context"] if i["type"] == "image"]
    assert all(Path(p).is_file() and Path(p).is_relative_to(data_root) for p in images)


def test_the_harness_cuts_nothing_when_runbook_counts_with_the_readers_tokenizer(
    tmp_path, data_root, trajectory_map, reader
):
    qs = questions()
    common = one_haystack(qs, trajectory_map, reader, max_tokens=600)
    plain = harness.run(memory_config=config(data_root, tmp_path, budget=600), output_dir=tmp_path / "a", **common)
    assert any(r["memory_context_was_truncated"] for r in plain)  # one token per byte: cl100k's 600 are ~2,000
    STORES.clear()
    counted = harness.run(
        memory_config=config(data_root, tmp_path, budget=600, tokenizer=str(reader)),
        output_dir=tmp_path / "b",
        **common,
    )
    assert not any(r["memory_context_was_truncated"] for r in counted)
    assert all(550 <= r["memory_context_token_count"] <= 600 for r in counted[:2]), counted
    assert "Are you sure" in json.dumps(counted[0]["memory_context"])


def test_the_bench_cut_counts_as_the_harness_counts(tmp_path, data_root, reader):
    processor = harness.ReaderProcessor(reader)
    shot = str(data_root / "screenshots" / "t-cancel" / "1.png")
    items = [
        {"type": "text", "value": "Analysis: two views.\n"},
        {"type": "text", "value": "[state] trajectory t-cancel, state 1\nRootWebArea 'Orders'\n"},
        {"type": "image", "value": shot},
        {"type": "text", "value": "[state] trajectory t-filters, state 0\n" + "gridcell 'x'\n" * 40},
    ]
    counter = ReaderCounter(str(reader))
    assert lme_items_tokens(items, counter) == processor.count(items)
    for cap in (50, processor.count(items[:3]), processor.count(items) - 1):
        assert whole_items_within(items, cap, counter) == harness.truncate(items, cap, processor)[0]


def test_a_visual_question_shows_screenshots_right_after_their_text_and_they_survive_the_cut(
    tmp_path, data_root, trajectory_map, reader
):
    question = questions()[0] | {"question": "What does the dialog look like before an order is canceled?"}
    with_image = questions()[3] | {"image": str(data_root / "screenshots" / "t-filters" / "0.png")}
    rows = harness.run(
        memory_config=config(data_root, tmp_path, budget=3000, tokenizer=str(reader)),
        output_dir=tmp_path / "out",
        **one_haystack([question, with_image], trajectory_map, reader, max_tokens=3000),
    )
    for row in rows:
        items = row["memory_context"]
        assert not row["memory_context_was_truncated"]
        first = next(n for n, i in enumerate(items) if i["type"] == "image")
        states = [n for n, i in enumerate(items) if re.match(r"\[(?:state|span)\] ", i["value"])]
        assert first == states[0] + 1  # right after the first state's text (a note's run shows no one state)
        cited = items[first - 1]["value"].split("\n", 1)[0]
        owner = Path(items[first]["value"]).parent.name
        assert f"trajectory {owner}," in cited
        assert Path(items[first]["value"]).is_relative_to(data_root)


def test_a_state_index_that_is_not_the_position_is_read_as_the_harness_reads_it(
    tmp_path, data_root, trajectory_map, reader
):
    """Issue 34 item 10: the harness's loader takes a state's position and ignores its state_index; runbook
    refused `"state_index": 1` on a first state, and the whole run ended in a RuntimeError with no results."""
    for obj in trajectory_map.values():
        for state in obj["states"]:
            state["state_index"] += 1  # numbered from 1, as some recorders do
    trajectory_map["t-old-price"]["states"][0]["unrecorded_field"] = "kept out, as the harness ignores it"
    qs = questions()
    rows = harness.run(
        memory_config=config(data_root, tmp_path),
        output_dir=tmp_path / "out",
        **one_haystack(qs, trajectory_map, reader, max_tokens=8000),
    )
    assert [r["question_id"] for r in rows] == [q["id"] for q in qs]
    assert "Are you sure you want to cancel this order?" in json.dumps(rows[0]["memory_context"])
    cited = re.findall(r"t-cancel, state (\d+)", json.dumps(rows[0]["memory_context"]))
    assert cited and all(int(n) < len(trajectory_map["t-cancel"]["states"]) for n in cited)  # by position


def test_image_items_are_the_leading_states_own_screenshots_each_once(tmp_path, data_root, trajectory_map, reader):
    """Issue 34, items 11 and 12: R's notes span a run and got its first state's screenshot (none of an evidence
    state, the same file twice); and a question asking for what no page text names gets screenshots too."""
    visual = questions()[0] | {"question": "How is an order canceled, and what does the dialog look like?"}
    unnamed = questions()[0] | {
        "id": "q-badge",
        "question": "What number does the badge beside the cancel dialog show?",
    }
    rows = harness.run(
        memory_config=config(data_root, tmp_path, budget=3000, tokenizer=str(reader)),
        output_dir=tmp_path / "out",
        **one_haystack([visual, unnamed], trajectory_map, reader, max_tokens=3000),
    )
    for row in rows:
        items = row["memory_context"]
        images = [n for n, i in enumerate(items) if i["type"] == "image"]
        assert images, row["question_id"]
        assert len({items[n]["value"] for n in images}) == len(images)  # each screenshot once
        for n in images:
            owner_state = re.match(r"\[(?:state|span)\] trajectory ([\w-]+), states? (\d+)", items[n - 1]["value"])
            assert owner_state, items[n - 1]["value"][:80]  # right after a state's own text, not a note's
            tid, index = owner_state.groups()
            assert Path(items[n]["value"]) == data_root / "screenshots" / tid / f"{index}.png"
