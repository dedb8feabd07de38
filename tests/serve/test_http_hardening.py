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
