"""Store files are read without following links: a symlink planted in the store cannot put a host file into a
context, and the store root itself may still be a link the user chose."""

from __future__ import annotations

import os

import pytest

from runbook.errors import UnsafeStoreFile
from runbook.store import Store
from tests.conftest import make_trajectory

SECRET = "HOST-SECRET-4f1c: root password is hunter2"


@pytest.fixture
def filled(store, tmp_path):
    with store.writer() as writer:
        writer.insert(make_trajectory("t-1", 3))
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret.md").write_text(f"trajectory: t-1\n---\n{SECRET}\n")
    return store


def _plant_state_link(store, tmp_path):
    state = store.state_path("t-1", 1)
    state.unlink()
    os.symlink(tmp_path / "host" / "secret.md", state)


def test_a_state_file_replaced_by_a_symlink_is_refused(filled, tmp_path):
    _plant_state_link(filled, tmp_path)
    with pytest.raises(UnsafeStoreFile, match="symbolic link"):
        filled.read_state("t-1", 1)
    assert filled.read_state("t-1", 0)[0]["trajectory"] == "t-1"


def test_a_states_folder_replaced_by_a_symlink_is_refused(filled, tmp_path):
    states = filled.state_path("t-1", 0).parent
    os.rename(states, tmp_path / "host" / "states")
    os.symlink(tmp_path / "host" / "states", states)
    with pytest.raises(UnsafeStoreFile, match="symbolic link"):
        filled.read_state("t-1", 0)


def test_a_trajectory_folder_replaced_by_a_symlink_is_refused(filled, tmp_path):
    folder = filled.trajectory_dir("t-1")
    os.rename(folder, tmp_path / "host" / "t-1")
    os.symlink(tmp_path / "host" / "t-1", folder)
    with pytest.raises(UnsafeStoreFile, match="symbolic link"):
        filled.read_state("t-1", 0)
    with pytest.raises(UnsafeStoreFile):
        filled.load("t-1")


def test_dot_dot_and_non_regular_files_are_refused(filled, tmp_path):
    with pytest.raises(UnsafeStoreFile, match=r"'\.\.'"):
        filled.layout.read_bytes(filled.layout.trajectories / ".." / ".." / "host" / "secret.md")
    with pytest.raises(UnsafeStoreFile, match="outside the store"):
        filled.layout.read_bytes(tmp_path / "host" / "secret.md")
    fifo = filled.state_path("t-1", 2)
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(UnsafeStoreFile, match="not a regular file"):
        filled.read_state("t-1", 2)  # refused at once, not blocked on the FIFO


def test_a_missing_file_is_still_file_not_found(filled):
    with pytest.raises(FileNotFoundError):
        filled.layout.read_bytes(filled.layout.trajectories / "t-1" / "states" / "0099.md")


def test_a_store_root_that_is_a_symlink_is_followed_once(filled, tmp_path):
    os.symlink(filled.root, tmp_path / "link-to-store")
    via_link = Store(tmp_path / "link-to-store")
    assert via_link.read_state("t-1", 1)[0]["url"] == "http://localhost:7770/page/1"
    assert via_link.load("t-1").id == "t-1"
