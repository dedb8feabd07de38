"""Token counting works offline and matches tiktoken; budgets parse; cuts keep the head and say what was elided."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runbook.budget import count_tokens, head_and_tail, parse_budget, truncate_to_tokens
from runbook.errors import BudgetError


@pytest.mark.parametrize(
    "text,expected",
    [("8k", 8000), ("8000", 8000), ("1.5k", 1500), ("32K", 32000), (" 2k ", 2000), ("1m", 1_000_000), (500, 500)],
)
def test_parse_budget(text, expected):
    assert parse_budget(text) == expected


@pytest.mark.parametrize("bad", ["", "k", "8kb", "-1", "0", "eight"])
def test_bad_budget_is_a_clear_error(bad):
    with pytest.raises(BudgetError, match="budget"):
        parse_budget(bad)


@pytest.mark.parametrize("too_much", ["999999999999999999999k", "9" * 400, 10**30, "1000001", "2m"])
def test_a_budget_over_the_ceiling_is_a_clear_error(too_much):
    """Item 5 of issue 33: '999999999999999999999k' with method full returned the whole store (17.9 MB)."""
    with pytest.raises(BudgetError, match="over the maximum of 1,000,000 tokens"):
        parse_budget(too_much)


def test_a_budget_is_a_whole_number_of_tokens():
    assert parse_budget(8000.0) == 8000 and parse_budget("1m") == 1_000_000
    for bad in (2.5, True, None, float("nan"), float("inf")):
        with pytest.raises(BudgetError, match="whole number of tokens"):
            parse_budget(bad)


def test_counts_are_real_cl100k_counts():
    # known cl100k_base counts: "hello world" is 2 tokens, "tiktoken is great!" is 6
    assert count_tokens("hello world") == 2
    assert count_tokens("tiktoken is great!") == 6
    assert count_tokens("") == 0


def test_encoding_loads_without_network(tmp_path):
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from runbook.budget import count_tokens\nprint(count_tokens('hello world'))"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_truncate_keeps_head_within_limit_and_states_elision():
    text = " ".join(f"word{i}" for i in range(2000))
    cut, elided = truncate_to_tokens(text, 100)
    assert count_tokens(cut) <= 100 and elided > 0
    assert cut.startswith("word0 word1") and f"{elided} tokens elided" in cut
    assert truncate_to_tokens("short", 100) == ("short", 0)


def test_head_and_tail_keeps_both_ends():
    text = "\n".join(f"line {i}" for i in range(3000))
    cut, elided = head_and_tail(text, 200)
    assert count_tokens(cut) <= 200 and "line 0" in cut and "line 2999" in cut and f"{elided} tokens elided" in cut


_PIECES = st.sampled_from(
    [
        "\n",
        "\n\n",
        "\t",
        "\t\t",
        " ",
        "  ",
        "\r\n",
        "'",
        "[12]",
        "link",
        "Item",
        " 's",
        "3.5",
        "é",
        "\u2028",
        "\x1c",
        "!!",
        "StaticText",
        "\n\t\t[149] image 'X'",
        "$24.00",
        "you're",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=0, max_size=400))
def test_piecewise_counts_equal_whole_text_counts(parts):
    from runbook.budget import encoding

    text = "".join(parts) * 3
    assert count_tokens(text) == len(encoding().encode_ordinary(text))


def test_piecewise_counts_on_real_pages():
    import gzip

    import orjson

    from runbook.budget import encoding
    from tests.conftest import require_shared

    data = require_shared()
    with gzip.open(data / "webarena/trajectories.jsonl.gz") as fh:
        for _, line in zip(range(40), fh):
            for state in orjson.loads(line)["states"]:
                text = state["accessibility_tree"] or ""
                assert count_tokens(text) == len(encoding().encode_ordinary(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=40), min_size=0, max_size=200))
def test_stored_counts_are_tiktoken_counts(parts):
    """The counts an insert stores (quicktok's BPE) are tiktoken's, special tokens and odd text included."""
    from runbook.budget import encoding, stored_token_counts

    texts = ["".join(parts), "".join(parts) * 2, "<|endoftext|>" + "".join(parts), ""]
    assert stored_token_counts(texts) == [len(encoding().encode_ordinary(text)) for text in texts]


def _first_runs(n: int) -> list[dict]:
    """The first `n` trajectories of each real set in ../shared/data, as JSON objects."""
    import gzip

    import orjson

    from tests.conftest import require_shared

    runs = []
    for name in ("webarena", "infinity"):
        with gzip.open(require_shared() / name / "trajectories.jsonl.gz") as fh:
            runs += [orjson.loads(line) for _, line in zip(range(n), fh)]
    return runs


def test_stored_counts_on_real_state_files():
    from runbook.budget import encoding, stored_token_counts

    texts = [
        state.get("accessibility_tree") or state.get("text") or "" for run in _first_runs(25) for state in run["states"]
    ]
    assert stored_token_counts(texts) == [len(encoding().encode_ordinary(text)) for text in texts]


def test_stored_counts_fall_back_to_tiktoken_without_quicktok(monkeypatch):
    from runbook import budget

    monkeypatch.setattr(budget, "_fast_encoding", lambda: None)
    assert budget.stored_token_counts(["hello world", ""]) == [2, 0]


def test_a_refused_budget_is_shown_short():
    """A server echoed a 300-level nested object sent as the budget into its 400, whole."""
    with pytest.raises(BudgetError) as refused:
        parse_budget("x" * 10_000)
    assert len(str(refused.value)) < 200


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=40), min_size=0, max_size=60), st.sampled_from(["", "x", "a\n", "---\n"]))
def test_stored_counts_of_a_head_and_a_body_are_the_counts_of_their_concatenation(parts, head):
    """A body counted once and added to each head's count gives tiktoken's count of the whole state file."""
    from runbook.budget import encoding, stored_token_counts_of_parts

    body = "".join(parts)
    pairs = [(head, body), ("time: 1\n---\n", body), ("time: 2\n---\n", body), (head, "\t" + body), (head, "")]
    expected = [len(encoding().encode_ordinary(h + b)) for h, b in pairs]
    assert stored_token_counts_of_parts(pairs) == expected


def test_stored_counts_of_real_state_files_from_their_parts():
    from runbook.budget import encoding, stored_token_counts_of_parts
    from runbook.store.statefile import state_file_parts
    from runbook.trajectory.model import trajectory_from_dict

    pairs = []
    for run in _first_runs(15):
        trajectory = trajectory_from_dict(run, check_screenshots=False)
        pairs += [state_file_parts(trajectory, state, None) for state in trajectory.states] * 2
    assert stored_token_counts_of_parts(pairs) == [len(encoding().encode_ordinary(h + b)) for h, b in pairs]
