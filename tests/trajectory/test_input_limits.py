"""Input that must be bounded or refused before it is stored: decompression bombs (per file, per line), a gigabyte
of blank lines, values nested hundreds deep, misspelled fields, and states without a time (issue 33 items 3 and 4,
issue 34 items 3 and 6)."""

from __future__ import annotations

import gzip
import json
import sqlite3

from click.testing import CliRunner

from runbook.cli import main
from runbook.errors import InputError
from runbook.trajectory.limits import ReadLimits, bounded_lines, parse_size
from runbook.trajectory.readers import jsonl
from tests.conftest import make_trajectory

CLEAN = make_trajectory("clean", 2).to_dict()


def insert(store, *args):
    return CliRunner().invoke(main, ["--store", str(store), "insert", *map(str, args)])


def gz(path, *parts: bytes):
    with gzip.open(path, "wb", compresslevel=6) as fh:
        for part in parts:
            fh.write(part)
    return path


def test_a_line_that_decompresses_past_the_line_limit_is_refused_as_it_is_read(tmp_path):
    # 70 MB of page text in one trajectory line: 70 KB compressed
    bomb = dict(CLEAN, id="bomb")
    bomb["states"] = [dict(CLEAN["states"][0], accessibility_tree="x" * (70 << 20))]
    source = gz(tmp_path / "bomb.jsonl.gz", json.dumps(CLEAN).encode() + b"\n", json.dumps(bomb).encode() + b"\n")
    assert source.stat().st_size < 200_000
    result = insert(tmp_path / "store", source)
    assert result.exit_code == 1
    assert "bomb.jsonl.gz:2: the line has more than 67,108,864 bytes once decompressed" in result.output
    assert "--max-line-bytes" in result.output
    ok = insert(tmp_path / "store2", source, "--max-line-bytes", "80M")  # the option raises the bound
    assert ok.exit_code == 0, ok.output


def test_a_file_that_decompresses_past_the_file_limit_is_refused(tmp_path):
    line = json.dumps(CLEAN).encode() + b"\n"
    source = gz(tmp_path / "many.jsonl.gz", *[line.replace(b'"clean"', f'"c{n}"'.encode()) for n in range(400)])
    result = insert(tmp_path / "store", source, "--max-file-bytes", "100K")
    assert result.exit_code == 1
    assert "many.jsonl.gz: the file holds more than 102,400 bytes once decompressed" in result.output
    assert not (tmp_path / "store" / "trajectories").exists() or not list(
        (tmp_path / "store" / "trajectories").iterdir()
    )


def test_blank_lines_are_skipped_in_bulk(tmp_path, monkeypatch):
    """30 MB of line breaks before one trajectory: read in 1 MB chunks, never a call per byte (972 KB of blank
    lines, a gigabyte of them decompressed, was still being read after 300 s)."""
    source = gz(tmp_path / "blank.jsonl.gz", b"\n" * (30 << 20), json.dumps(CLEAN).encode() + b"\n")
    reads = []
    opened = gzip.open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def read(self, size=-1):
            reads.append(size)
            return self.fh.read(size)

        def peek(self, size=1):
            reads.append(size)
            return self.fh.peek(size)

    monkeypatch.setattr(jsonl.gzip, "open", lambda *a, **k: Counting(opened(*a, **k)))
    found = list(jsonl.read(source))
    assert [t.id for t in found] == ["clean"]
    assert len(reads) <= 40 and all(size >= 1 << 20 for size in reads)


def test_line_numbers_count_every_blank_line_and_a_last_line_without_a_break():
    import io

    data = b'\n\n  {"a": 1}\n\r\n\t\n{"b": 2}'
    assert list(bounded_lines(io.BytesIO(data), "f")) == [(3, b'{"a": 1}'), (6, b'{"b": 2}')]
    assert parse_size("64M") == 64 << 20 and parse_size("4g") == 4 << 30 and parse_size("1500") == 1500


def test_a_json_document_is_bounded_as_one_record(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps([CLEAN] * 50, indent=1))  # a document over many lines
    try:
        list(jsonl.read(path, limits=ReadLimits(line_bytes=10_000)))
    except InputError as exc:
        assert "doc.json: the JSON document has more than 10,000 bytes" in str(exc)
    else:
        raise AssertionError("the document past the bound was read")


def test_a_value_nested_hundreds_deep_is_refused_naming_the_field(tmp_path):
    source: dict = {}
    inner = source
    for _ in range(300):
        inner["a"] = {}
        inner = inner["a"]
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(dict(CLEAN, id="deep", source=source)) + "\n")
    result = insert(tmp_path / "store", path)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "trajectory 'deep', field 'source': nests more than 64 levels deep" in result.output


def test_misspelled_fields_are_refused_naming_the_field_and_the_likely_name(tmp_path):
    top = {"id": "typo", "gaol": "g", "outcom": "success", "states": [{"url": "http://x/", "action": "click('1')"}]}
    path = tmp_path / "typo.jsonl"
    path.write_text(json.dumps(top) + "\n")
    result = insert(tmp_path / "store", path)
    assert result.exit_code == 1
    assert "field 'gaol': is not a field runbook knows (did you mean 'goal'?)" in result.output
    state = {"id": "typo2", "goal": "g", "states": [{"url": "http://x/", "acton": "click('1')"}]}
    path.write_text(json.dumps(state) + "\n")
    result = insert(tmp_path / "store", path)
    assert result.exit_code == 1 and "field 'states[0].acton'" in result.output and "'action'" in result.output


def test_the_formats_own_extra_fields_are_kept(tmp_path):
    obj = dict(CLEAN, id="extras", metadata={"environment": "shop"}, received_times=[1])
    obj["states"] = [dict(s, step=s["state_index"] + 1, thoughts=None, text=None) for s in CLEAN["states"]]
    for state in obj["states"]:
        del state["thought"], state["accessibility_tree"]
        state["text"] = "RootWebArea 'Shop'"
    path = tmp_path / "extras.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    assert insert(tmp_path / "store", path).exit_code == 0
    stored = json.loads((tmp_path / "store" / "trajectories" / "extras" / "trajectory.json").read_text())
    assert stored["metadata"] == {"environment": "shop"} and stored["received_times"] == [1]


def test_a_state_without_a_time_is_stored_as_unknown_never_blank(tmp_path):
    obj = dict(CLEAN, id="untimed")
    obj["states"] = [dict(s, timestamp=None) for s in CLEAN["states"]]
    path = tmp_path / "untimed.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    assert insert(tmp_path / "store", path).exit_code == 0
    state_file = (tmp_path / "store" / "trajectories" / "untimed" / "states" / "0000.md").read_text()
    assert "\ntime: unknown\n" in state_file and "\ntime: \n" not in state_file
    with sqlite3.connect(tmp_path / "store" / "catalog.sqlite") as conn:
        assert conn.execute("SELECT timestamp FROM states WHERE trajectory_id = 'untimed'").fetchall() == [(None,)] * 2
    result = CliRunner().invoke(
        main,
        [
            "--store",
            str(tmp_path / "store"),
            "query",
            "What link is on page 1?",
            "--method",
            "r",
            "--json",
            "--budget",
            "2k",
        ],
    )
    items = json.loads(result.output)["items"]
    assert items and all(item["timestamp"] is None for item in items if item["trajectory_id"] == "untimed")
