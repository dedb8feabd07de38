"""`runbook query` and `runbook answer` refuse an empty question and an --image that is not an image, with a clear
error and a non-zero exit, before any work (no sandbox, no transcript, no reader call)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from PIL import Image

from runbook.cli import main
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import make_trajectory, write_jsonl


@pytest.fixture
def store_path(tmp_path, clean_env):
    store = Store(tmp_path / "store", create=True)
    insert_paths(
        store,
        [write_jsonl(tmp_path / "a.jsonl", [make_trajectory("wa-1", 2)])],
        listeners=[insert_listener(store)],
        workers=1,
    )
    return str(store.root)


def run(store_path, *args):
    return CliRunner().invoke(main, ["--store", store_path, *args])


@pytest.mark.parametrize("command", ["query", "answer"])
@pytest.mark.parametrize("question", ["", "   ", "\n\t "])
@pytest.mark.parametrize("method", ["c", "r", "bm25"])
def test_an_empty_question_is_a_clear_error(store_path, tmp_path, command, question, method):
    result = run(store_path, command, question, "--method", method, "--sandbox", "local")
    assert result.exit_code == 1, result.output
    assert "the question is empty" in result.output and "runbook query" in result.output
    assert not (tmp_path / "transcripts").exists()  # no agent ran


def _image_case(tmp_path, case: str) -> str:
    if case == "missing":
        return str(tmp_path / "nope.png")
    if case == "folder":
        (tmp_path / "shots").mkdir()
        return str(tmp_path / "shots")
    (tmp_path / "notes.png").write_text("this is text, not a picture")
    return str(tmp_path / "notes.png")


@pytest.mark.parametrize("command", ["query", "answer"])
@pytest.mark.parametrize(
    "case,says", [("missing", "does not exist"), ("folder", "is a folder"), ("not an image", "not an image")]
)
def test_a_bad_image_is_a_clear_error_naming_the_file(store_path, tmp_path, command, case, says):
    image = _image_case(tmp_path, case)
    result = run(store_path, command, "Which page is this?", "--image", image, "--sandbox", "local")
    assert result.exit_code != 0, result.output
    assert image in result.output and says in result.output
    assert not (tmp_path / "transcripts").exists()


def test_a_real_image_is_accepted(store_path, tmp_path):
    Image.new("RGB", (8, 8), "white").save(tmp_path / "q.png")
    result = run(store_path, "query", "Which page is this?", "--image", str(tmp_path / "q.png"), "--method", "r")
    assert result.exit_code == 0, result.output


def test_method_names_are_read_in_any_case_and_the_defaults_are_the_librarys(store_path):
    """Item 7 of issue 24: `--method R` was refused though every table says "R"; the CLI's defaults (c, 8k) differed
    from the servers' (r, 8k and r, 4k): all three take runbook.memory.DEFAULT_METHOD and budget.DEFAULT_BUDGET."""
    from runbook.budget import DEFAULT_BUDGET
    from runbook.cli.query import query
    from runbook.memory import DEFAULT_METHOD

    result = run(store_path, "query", "Where is the Bestsellers report?", "--method", "R", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["method"] == "r"
    defaults = {p.name: p.default for p in query.params}
    assert (defaults["method"], defaults["budget"]) == (DEFAULT_METHOD, DEFAULT_BUDGET) == ("auto", "8k")
