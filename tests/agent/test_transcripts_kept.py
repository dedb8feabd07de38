"""Method C writes a transcript per query into one folder; the folder keeps the newest RUNBOOK_TRANSCRIPTS_KEEP
(500 by default) and 0 writes none (issue 34 item 14: ~/.cache/runbook/transcripts grew by 800 KB per 20 queries
and was never pruned)."""

from __future__ import annotations

import os
from pathlib import Path

from runbook.agent.transcript import TranscriptWriter, read_transcript, transcript_path
from runbook.config import load_settings
from tests.memory.test_coding_agent import _no_machine_settings, memory, store  # noqa: F401 - the fixtures


def test_the_folder_keeps_the_newest_transcripts(store, tmp_path, monkeypatch):  # noqa: F811
    folder = tmp_path / "transcripts"
    (folder / "notes.txt").parent.mkdir()
    (folder / "notes.txt").write_text("not a transcript: left alone")
    monkeypatch.setenv("RUNBOOK_TRANSCRIPTS_KEEP", "2")
    agent = memory(store, transcripts=folder)
    paths = [
        agent.query(f"What is the price of Quest Lumaflex Band, take {n}?", budget=2000).meta["transcript"]
        for n in range(3)
    ]
    kept = sorted(p.name for p in folder.glob("*.jsonl"))
    assert kept == sorted(Path(p).name for p in paths[1:])
    assert (folder / "notes.txt").exists()
    assert read_transcript(paths[-1])[0]["type"] == "start"


def test_keep_0_writes_none(store, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("RUNBOOK_TRANSCRIPTS_KEEP", "0")
    context = memory(store, transcripts=tmp_path / "t").query("What is the current price?", budget=2000)
    assert context.items and context.meta["transcript"] is None
    assert not (tmp_path / "t").exists() or not os.listdir(tmp_path / "t")


def test_the_default_bound_and_the_pruning_of_the_oldest(tmp_path, clean_env):
    assert load_settings().transcripts_keep == 500
    folder = tmp_path / "t"
    for n in range(5):
        with TranscriptWriter(transcript_path(f"question {n}", folder), keep=3) as writer:
            writer.record("start", question=f"question {n}")
    names = sorted(os.listdir(folder))
    assert len(names) == 3 and [read_transcript(folder / n)[0]["question"] for n in names] == [
        "question 2",
        "question 3",
        "question 4",
    ]
