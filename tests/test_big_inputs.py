"""Inputs that once cost the host far more than their size (issue 22, item 6): an image of many pixels in a small
file, and a page of 50 MB. The image is refused from its header, before a pixel is decoded; a page is cut to a
stated number of characters, so that the work per state stays bounded."""

from __future__ import annotations

import logging
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from runbook.errors import QueryError
from runbook.images import MAX_IMAGE_PIXELS, NotAnImage, verify_image
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.query_input import check_query
from runbook.trajectory.model import MAX_PAGE_CHARS, cut_page
from tests.conftest import make_trajectory, write_jsonl


def big_png(path: Path, width: int, height: int) -> Path:
    """A valid grey PNG of width x height pixels, all black: a few hundred KB, written row by row."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    row = b"\0" * (width + 1)  # filter byte, then the row's pixels
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


def test_an_image_over_the_pixel_cap_is_refused_saying_the_cap(tmp_path):
    image = big_png(tmp_path / "huge.png", 6000, 5000)  # 30 million pixels; Pillow only refuses over 179 million
    assert image.stat().st_size < 1_000_000
    with pytest.raises(NotAnImage, match=f"6000 x 5000 = 30,000,000 pixels, more than the {MAX_IMAGE_PIXELS:,}"):
        verify_image(image.read_bytes())
    with pytest.raises(QueryError, match=r"huge\.png has 6000 x 5000"):
        check_query("Where is this page?", image)
    assert verify_image(big_png(tmp_path / "fine.png", 1280, 4000).read_bytes()) == "PNG"


def test_the_cap_holds_before_decoding(tmp_path):
    """In a child process: refusing the 12000 x 12000 PNG of the issue leaves the process far below what decoding
    it costs (about 800 MB)."""
    image = big_png(tmp_path / "bomb.png", 12000, 12000)
    code = (
        "import sys\n"
        "from runbook.query_input import check_query\n"
        "from runbook.errors import QueryError\n"
        "try:\n"
        "    check_query('Where?', sys.argv[1])\n"
        "except QueryError as exc:\n"
        "    print(exc)\n"
        # VmHWM: this process's own peak (ru_maxrss would carry the forking test process's over the exec)
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(image)], capture_output=True, text=True, cwd=Path(__file__).parents[1]
    )
    message, peak_mb = done.stdout.strip().splitlines()
    assert "144,000,000 pixels" in message
    assert int(peak_mb) < 300, peak_mb


def test_a_screenshot_over_the_pixel_cap_is_refused_at_insert(store, tmp_path):
    image = big_png(tmp_path / "shot.png", 6000, 5000)
    run = make_trajectory("shot-1", 2)
    run.states[0].screenshot = str(image)
    report = insert_paths(store, [write_jsonl(tmp_path / "t.jsonl", [run])], workers=1, screenshot_root=tmp_path)
    assert len(store) == 0
    assert "6000 x 5000" in str(report.invalid[0]) and "states[0].screenshot" in str(report.invalid[0])


def test_a_page_over_the_cap_is_cut_and_says_so(store, tmp_path, caplog):
    line = "\tStaticText 'Quest Lumaflex Band SKU 24-UG01 price $24.00 in stock'\n"
    page = "RootWebArea 'Catalog'\n" + line * (3 * MAX_PAGE_CHARS // len(line))
    run = make_trajectory("big-1", 2, texts=[page, "RootWebArea 'Done'"])
    assert run.states[0].text == cut_page(page)  # cut as the trajectory is made, whatever reader made it
    with caplog.at_level(logging.WARNING):
        insert_paths(store, [write_jsonl(tmp_path / "t.jsonl", [run])], listeners=[insert_listener(store)], workers=1)
    stored = store.load("big-1").states[0].text
    assert len(stored) <= MAX_PAGE_CHARS and stored == cut_page(page) == cut_page(stored)  # not cut twice
    assert stored.splitlines()[-1].startswith(f"[runbook: the page is cut here; it had {len(page):,} characters")
    assert any("big-1, state 0" in r.getMessage() and "cut" in r.getMessage() for r in caplog.records)
    _, text = store.read_state("big-1", 0)
    assert len(text) <= MAX_PAGE_CHARS


def test_a_page_under_the_cap_is_kept_whole():
    run = make_trajectory("t", 1, texts=["x" * (MAX_PAGE_CHARS - 1)])
    assert len(run.states[0].text) == MAX_PAGE_CHARS - 1
