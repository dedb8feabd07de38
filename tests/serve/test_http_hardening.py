"""The HTTP API refuses what it cannot serve with a clear 4xx (never a 500): a budget that is not a number or a
budget string, a streamed id no URL path can carry, a state whose file is a link planted in the store, a question
with nothing to ask, and a body over the limit however it is sent."""

from __future__ import annotations

import os

import httpx
import pytest

from runbook.serve import create_app
from tests.serve.test_http import Server, service  # noqa: F401  (the fixture)


def refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    assert all(word in response.json()["error"] for word in words), response.json()


def test_json_true_is_not_a_budget(service):  # noqa: F811
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused(client.post("/query", json={"question": "Where?", "budget": True}), 400, "budget")
        refused(client.post("/query", json={"question": "Where?", "budget": 1.5}), 400, "budget")


@pytest.mark.parametrize("question", ["\u0000", "?!"])
def test_a_question_of_a_nul_or_of_no_word_is_refused(service, question):  # noqa: F811
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused(client.post("/query", json={"question": question, "method": "r"}), 400, "question")


@pytest.mark.parametrize("tid", ["../..", "..", ".", "runs/7"])
def test_a_streamed_id_that_no_url_can_carry_is_refused_at_open(service, tid):  # noqa: F811
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused(client.post("/trajectories", json={"id": tid, "stream": True}), 400, "URL path")
        assert client.get("/stats").json()["open_trajectories"] == 0


def test_a_state_or_trajectory_file_planted_as_a_link_is_a_403(service, tmp_path):  # noqa: F811
    service.insert({"id": "run-1", "states": [{"url": "http://shop/a", "accessibility_tree": "'Catalog'"}] * 2})
    secret = tmp_path / "secret.md"
    secret.write_text("trajectory: run-1\n---\nHOST-SECRET\n")
    state = service.store.state_path("run-1", 1)
    state.unlink()
    os.symlink(secret, state)
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused(client.get("/trajectories/run-1/states/1"), 403, "symbolic link")
        assert client.get("/trajectories/run-1/states/0").status_code == 200
        folder = service.store.trajectory_dir("run-1")
        (folder / "trajectory.json").rename(tmp_path / "trajectory.json")
        os.symlink(tmp_path / "trajectory.json", folder / "trajectory.json")
        refused(client.get("/trajectories/run-1"), 403, "symbolic link")


QUERY = (b'{"question": "Where is the Bestsellers report?", "budget": "2k", "pad": "', b'"}')
"""A /query body padded with a field the API refuses (400): only for bodies the limit cuts off (413) first."""
WHOLE = (b'{"id": "big-1", "states": [{"url": "http://shop/a", "accessibility_tree": "', b'"}]}')
"""A whole trajectory whose one state's page is the padding: accepted (201) when it arrives whole."""


def _send_chunked(
    port: int, path: str, total: int, chunk: int = 65536, body: tuple[bytes, bytes] = QUERY
) -> tuple[bytes, int]:
    """POST a JSON body of `total` bytes (`body`'s head, padding, tail) with Transfer-Encoding: chunked (no length
    up front), stopping as soon as the server answers; (the response's first bytes, body bytes sent)."""
    import select
    import socket

    head, tail = body
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        pieces = [head] + [b"a" * chunk] * ((total - len(head) - len(tail)) // chunk) + [tail]
        for piece in pieces:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered: stop sending, as a client reading its response would
            try:
                sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        else:
            sock.sendall(b"0\r\n\r\n")
        response = b""
        while b"\r\n\r\n" not in response or len(response.split(b"\r\n\r\n", 1)[1]) < _length(response):
            more = sock.recv(65536)
            if not more:
                break
            response += more
        return response, sent


def _length(response: bytes) -> int:
    for line in response.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 62


@pytest.mark.parametrize("path", ["/query", "/trajectories"])
def test_a_chunked_body_is_cut_at_the_limit_as_it_arrives(service, path):  # noqa: F811
    """Was: the size check read Content-Length only, so a chunked 50 MB body was read whole (and /query answered
    200 after 25.5 s). Now the server answers 413 once the bytes it received pass the limit, and reads no further."""
    limit = 200_000
    with Server(create_app(service, max_body_bytes=limit)) as url:
        response, sent = _send_chunked(int(url.rsplit(":", 1)[1]), path, total=8_000_000)
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    assert b"over 200,000 bytes" in response
    assert sent < 4_000_000, f"{sent:,} bytes were taken in before the 413"  # socket buffers hold a few MB at most
    assert service.store.rows() == []


def test_a_body_within_the_limit_still_arrives_whole_when_chunked(service):  # noqa: F811
    with Server(create_app(service, max_body_bytes=200_000)) as url:
        response, sent = _send_chunked(int(url.rsplit(":", 1)[1]), "/trajectories", total=150_000, body=WHOLE)
    assert response.startswith(b"HTTP/1.1 201"), response[:300]
    assert sent > 130_000
    _, page = service.store.read_state("big-1", 0)
    assert page.count("a") >= sent - len(WHOLE[0]) - len(WHOLE[1])  # every padding byte sent was stored


def test_method_full_over_http_leaves_out_a_planted_link_and_fifo(service, tmp_path):  # noqa: F811
    service.insert({"id": "run-1", "states": [{"url": "http://shop/a", "accessibility_tree": "'Catalog'"}] * 3})
    secret = tmp_path / "secret.md"
    secret.write_text("trajectory: run-1\n---\nHOST-SECRET\n")
    linked, fifo = service.store.state_path("run-1", 1), service.store.state_path("run-1", 2)
    linked.unlink()
    os.symlink(secret, linked)
    fifo.unlink()
    os.mkfifo(fifo)
    with Server(create_app(service)) as url, httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/query", json={"question": "What is in the catalog?", "budget": "8k", "method": "full"})
    assert answer.status_code == 200, answer.text
    assert "HOST-SECRET" not in answer.text and "Catalog" in answer.text
