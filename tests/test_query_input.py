"""check_query, and every Memory raising its QueryError before any work."""

from __future__ import annotations

import pytest
from PIL import Image

from runbook.errors import QueryError
from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from runbook.query_input import check_query
from tests.conftest import make_trajectory, write_jsonl


def test_check_query_accepts_a_question_and_a_real_image(tmp_path):
    Image.new("RGB", (4, 4), "white").save(tmp_path / "q.jpg")
    assert check_query("Where?", tmp_path / "q.jpg") == ("Where?", str(tmp_path / "q.jpg"))
    assert check_query("Where?") == ("Where?", None)


def test_check_query_refuses_a_truncated_image(tmp_path):
    Image.new("RGB", (40, 40), "white").save(tmp_path / "q.png")
    (tmp_path / "q.png").write_bytes((tmp_path / "q.png").read_bytes()[:20])
    with pytest.raises(QueryError, match=r"q\.png .*not an image"):
        check_query("Where?", tmp_path / "q.png")


@pytest.mark.parametrize("method", ["c", "r", "bm25"])
def test_every_memory_raises_a_typed_error(store, tmp_path, clean_env, method):
    insert_paths(
        store,
        [write_jsonl(tmp_path / "a.jsonl", [make_trajectory("wa-1", 2)])],
        listeners=[insert_listener(store)],
        workers=1,
    )
    memory = get_memory(method, store, **({"sandbox": "local"} if method == "c" else {}))
    with pytest.raises(QueryError, match="the question is empty"):
        memory.query("  ", budget=1000)
    (tmp_path / "fake.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(QueryError, match="not an image"):
        memory.query("Which page?", budget=1000, image=str(tmp_path / "fake.jpg"))
    assert not (tmp_path / "transcripts").exists()


def test_a_question_over_the_cap_is_refused_saying_the_cap():
    from runbook.query_input import MAX_QUESTION_CHARS

    assert check_query("x" * MAX_QUESTION_CHARS)[0]
    with pytest.raises(QueryError, match=f"over the limit of {MAX_QUESTION_CHARS:,}"):
        check_query("where " * 5_000)


@pytest.mark.parametrize("question", ["\0", "Where is it?\0", "?? !!", "\x01\x02"])
def test_a_question_without_words_or_with_a_nul_is_refused(question):
    with pytest.raises(QueryError, match="NUL|no letter or digit"):
        check_query(question)


def test_an_image_that_is_a_fifo_is_refused_at_once(tmp_path, clean_env):
    """Item 6 of issue 33: `runbook query --image FIFO` waited for a writer for ever (insert and HTTP refuse it)."""
    import os
    import subprocess
    import sys
    import threading

    from runbook.store import Store

    Store(tmp_path / "store", create=True)
    os.mkfifo(tmp_path / "shot.png")
    run = subprocess.run(
        [sys.executable, "-m", "runbook.cli", "--store", str(tmp_path / "store"), "query", "Which page is this?"]
        + ["--method", "c", "--sandbox", "local", "--image", str(tmp_path / "shot.png")],
        capture_output=True,
        text=True,
        timeout=60,  # it used to hang here
    )
    assert run.returncode == 1 and "is not a regular file (a FIFO" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    refused: list[Exception] = []
    checking = threading.Thread(target=lambda: _refusal(refused, tmp_path / "shot.png"), daemon=True)
    checking.start()
    checking.join(10)
    assert refused and isinstance(refused[0], QueryError) and "not a regular file" in str(refused[0])


def _refusal(out: list, image) -> None:
    try:
        check_query("Which page is this?", image)
    except Exception as exc:  # noqa: BLE001 - the test looks at what it was
        out.append(exc)


def _three_letter_words(rng, n_chars: int, vocabulary: list[str]) -> str:
    words: list[str] = []
    while len(" ".join(words)) < n_chars:
        words.append(rng.choice(vocabulary))
    return " ".join(words)[:n_chars]


def test_a_long_questions_excerpts_scan_each_page_for_a_bounded_number_of_terms(
    store, tmp_path, clean_env, monkeypatch
):
    """Item 8 of issue 33: a 9,987-character question of three-letter words took 6.5 s with R and 13 s with auto,
    because every page excerpted was scanned once per distinct word of the question (2,322 scans of each of 60 pages
    over the 928-trajectory store). The work per page must not grow with the question: a question four times as
    long scans each page about as often (measured over that store: R 2.45 s before, 0.36 s after)."""
    import random

    from runbook.core import excerpt

    rng = random.Random(8)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = sorted({"".join(rng.choice(letters) for _ in range(3)) for _ in range(4000)})
    pages = [
        "RootWebArea 'Orders'\n"
        + "\n".join(f"\t[{i}] gridcell '{_three_letter_words(rng, 60, vocabulary)}'" for i in range(40))
        for _ in range(12)
    ]
    runs = [make_trajectory(f"t-{n}", 3, texts=pages[3 * n % 12 : 3 * n % 12 + 3]) for n in range(4)]
    insert_paths(store, [write_jsonl(tmp_path / "a.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    memory = get_memory("r", store)
    scans = []
    counted = excerpt.term_pattern

    def scan(term: str):
        scans[-1] += 1
        return counted(term)

    monkeypatch.setattr(excerpt, "term_pattern", scan)
    for n_chars in (2_500, 9_987):
        scans.append(0)
        context = memory.query(_three_letter_words(rng, n_chars, vocabulary), budget=8000)
        assert context.items
    short, long = scans
    assert long <= 1.5 * short, f"a question 4x as long scanned the pages {long / short:.1f}x as often"
