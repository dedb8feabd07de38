"""Counting a context as a reader's harness counts it (runbook.reader_tokens)."""

from __future__ import annotations

import pytest

from runbook.context import EvidenceItem, pack
from runbook.errors import ConfigError
from runbook.reader_tokens import CL100K_MARGIN, ReaderCounter, fit_context, resolve_tokenizer
from tests.bench.integrations.harness_driver import ReaderProcessor, write_reader_tokenizer


def test_a_name_is_found_in_the_local_hugging_face_cache_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--Org--Reader"
    write_reader_tokenizer(repo / "snapshots" / "abc")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    assert resolve_tokenizer("Org/Reader") == (repo / "snapshots" / "abc" / "tokenizer.json").resolve()
    with pytest.raises(ConfigError, match="'Org/Other' is neither .* nor a model in the local Hugging Face cache"):
        ReaderCounter("Org/Other")


def test_a_folder_without_a_tokenizer_is_named(tmp_path):
    with pytest.raises(ConfigError, match=f"tokenizer folder {tmp_path} has no tokenizer.json"):
        ReaderCounter(str(tmp_path))


def test_without_a_tokenizer_the_stated_margin_is_kept_free():
    assert ReaderCounter().cap(8000) == int(8000 * (1 - CL100K_MARGIN)) == 6400


def test_a_fitted_context_is_within_the_readers_count_and_keeps_its_order(tmp_path):
    folder = write_reader_tokenizer(tmp_path / "reader")
    page = "gridcell 'row'\n" * 30
    items = [EvidenceItem(f"t-{n}", f"RootWebArea 'Page {n}'\n" + page, state_index=0) for n in range(8)]
    context = pack("which page?", 1500, items, analysis="Eight pages.")
    counter = ReaderCounter(str(folder))
    fitted = fit_context(context, 1500, counter)
    lme = fitted.to_lme_items()
    assert ReaderProcessor(folder).count(lme) <= 1500 < ReaderProcessor(folder).count(context.to_lme_items())
    assert [i.trajectory_id for i in fitted.items] == [i.trajectory_id for i in context.items][: len(fitted.items)]
    assert fitted.analysis == "Eight pages." and len(fitted.items) >= 2
