"""Where things live in a store, for every reader and writer on both sides of the sandbox: the names of its files
and folders and the one way to build a path in it. runbook.store.layout adds the host's safe reads on top."""

from __future__ import annotations

import hashlib
import re

FORMAT_VERSION = 1
META_FILE = "runbook.json"
CATALOG_FILE = "catalog.sqlite"
LOCK_FILE = ".lock"
TRAJECTORIES_DIR = "trajectories"
SUMMARIES_DIR = "summaries"
POOLS_DIR = "pools"
TRAJECTORY_FILE = "trajectory.json"
FINGERPRINT_FILE = "fingerprint"
STATES_DIR = "states"
SCREENSHOTS_DIR = "screenshots"
SUMMARY_TABLE = "trajectories.tsv"
SUMMARY_ACTIONS = "actions.txt"
TMP_PREFIX = ".tmp-"
"""A trajectory's staging folder under trajectories/ (hidden: no reader lists or searches it)."""
PENDING_PREFIX = ".pending-"
"""A staged trajectory waiting for its catalog commit; renamed to its own name only once committed."""
TRASH_PREFIX = ".trash-"
"""The version a replace moves aside, removed once the new one is in place."""
DIRTY_FILE = ".dirty"
"""Present while a writer works (from its lock to its clean close): one left behind means a writer stopped midway."""
POOLS_FRESH_PREFIX = "pools.tmp-"
"""Beside pools/: the pools a reindex builds, swapped in whole."""
POOLS_OLD_PREFIX = "pools.old-"
"""Beside pools/: the pools a reindex swapped out, removed after the swap."""
STATE_GLOB = f"**/{STATES_DIR}/*.md"
"""Every state file, as a ripgrep glob under trajectories/."""

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,150}")


def trajectory_dirname(trajectory_id: str) -> str:
    """A folder name for an id: the id itself when it is path-safe, else a cleaned form plus a short hash."""
    if _SAFE_ID.fullmatch(trajectory_id):
        return trajectory_id
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", trajectory_id).strip("._-")[:100] or "trajectory"
    return f"{cleaned}-{hashlib.sha1(trajectory_id.encode()).hexdigest()[:10]}"


def state_filename(index: int) -> str:
    return f"{index:04d}.md"


def screenshot_filename(index: int, suffix: str) -> str:
    return f"{index:04d}{suffix.lower() or '.png'}"


def trajectory_relpath(dirname: str) -> str:
    """A trajectory's folder inside the store."""
    return f"{TRAJECTORIES_DIR}/{dirname}"


def state_relpath(dirname: str, index: int) -> str:
    """A state file's path inside the store."""
    return f"{TRAJECTORIES_DIR}/{dirname}/{STATES_DIR}/{state_filename(index)}"
