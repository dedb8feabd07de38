"""One store per distinct haystack, built once and reused: the folder is named by a hash of the haystack's content.

The key covers each trajectory's bytes in haystack order (and the size of every screenshot it names), so the same
trajectories in another place share a store, and a changed trajectory gets a new one. A store is built in a
temporary folder (inserted in haystack order, with method R's pools) and renamed into place when complete, so a
killed build is never reused. `bench.json` in the store records what the build inserted: the write-failure count
the report shows comes from there and from checking each question's evidence states in the store.

The key names the store's format, not the pools': a store reused after runbook changed how its pools are written
(or one whose pools cannot be read) has its pools rebuilt from its trajectories (`reindex`) before any method reads
it, rather than letting R fail on every question and C answer without R's evidence.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..errors import ConfigError, StoreError
from ..pools import reindex
from ..pools.storage import read_manifest, safe_opener
from ..store import Store
from ..store.layout import FORMAT_VERSION
from ..version import __version__
from .questions import Haystack, StateRef

MANIFEST = "bench.json"


@dataclass
class HaystackStore:
    """A ready store for one haystack and what building it did."""

    store: Store
    key: str
    manifest: dict

    @property
    def write_failures(self) -> int:
        """Trajectories of the haystack that did not make it into the store (0 by construction)."""
        return int(self.manifest.get("expected", 0)) - int(self.manifest.get("stored", 0))

    def missing_states(self, refs: list[StateRef]) -> list[StateRef]:
        """The evidence states a question needs that the store does not hold."""
        missing = []
        for ref in refs:
            row = self.store.row(ref.trajectory_id)
            if row is None or not 0 <= ref.state_index < row.n_states:
                missing.append(ref)
        return missing


def _records(source: Path) -> Iterator[tuple[str, bytes, dict]]:
    """(trajectory id, its bytes, the parsed object) for each trajectory of a JSONL(.gz) or JSON-list file."""
    opener = gzip.open if source.name.endswith(".gz") else open
    with opener(source, "rb") as fh:
        if source.name.endswith((".json", ".json.gz")):
            for obj in orjson.loads(fh.read()):
                yield str(obj.get("id")), orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), obj
            return
        for line in fh:
            if line.strip():
                obj = orjson.loads(line)
                yield str(obj.get("id")), line.strip(), obj


def _screenshots(obj: dict) -> list[str]:
    states = obj.get("states") or obj.get("content") or []
    shots = [
        s.get("screenshot") or (s.get("observation") or {}).get("screenshot") for s in states if isinstance(s, dict)
    ]
    return [s for s in shots if isinstance(s, str) and s]


def haystack_trajectories(haystack: Haystack) -> list[tuple[str, bytes, dict]]:
    """The haystack's trajectories in insertion order; an id the file lacks is an error naming it."""
    records = list(_records(haystack.source))
    if haystack.trajectory_ids is None:
        return records
    by_id = {r[0]: r for r in records}
    missing = [t for t in haystack.trajectory_ids if t not in by_id]
    if missing:
        raise StoreError(
            f"haystack {haystack.name}: {len(missing)} trajectory id(s) are not in "
            f"{haystack.source}, e.g. {missing[:3]}"
        )
    return [by_id[t] for t in haystack.trajectory_ids]


def haystack_key(records: list[tuple[str, bytes, dict]], base_dir: Path) -> str:
    """The content hash naming the haystack's store."""
    digest = hashlib.sha256(f"runbook-store-format-{FORMAT_VERSION}\n".encode())
    for tid, raw, obj in records:
        digest.update(tid.encode() + b"\0" + hashlib.sha256(raw).digest())
        for shot in _screenshots(obj):
            path = Path(shot) if os.path.isabs(shot) else base_dir / shot
            digest.update(f"{shot}:{path.stat().st_size if path.exists() else -1}\n".encode())
    return digest.hexdigest()[:16]


ProgressFn = Callable[[int, int], None]


def prepare_store(
    haystack: Haystack,
    stores_dir: Path,
    *,
    progress: ProgressFn | None = None,
    rebuild: bool = False,
    workers: int | None = None,
    note: Callable[[str], None] | None = None,
) -> HaystackStore:
    """The store of `haystack` under `stores_dir`, built now if no finished one has its key; a finished one whose
    pools this runbook cannot read is reindexed first (`note` is told why)."""
    records = haystack_trajectories(haystack)
    key = haystack_key(records, haystack.base_dir)
    final = stores_dir / key
    if final.exists() and (final / MANIFEST).exists() and not rebuild:
        ready = HaystackStore(Store(final), key, json.loads((final / MANIFEST).read_text()))
        problem = pools_problem(ready.store)
        if problem is not None:
            if note:
                note(f"store {key}: {problem}; reindexing it")
            _reindex(ready, problem, progress, workers)
        return ready
    if final.exists():
        shutil.rmtree(final)
    stores_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=stores_dir))
    building.chmod(0o755)  # mkdtemp's 0700 would lock out the sandbox's own user (uid 1000) from the store
    try:
        manifest = _build(building, haystack, records, progress, workers)
        (building / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        os.replace(building, final)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return HaystackStore(Store(final), key, manifest)


def given_store(haystack: Haystack, root: Path) -> HaystackStore:
    """An existing store that the config names, used for `haystack` as it is: checked, never written. Its write
    failures are the haystack's trajectories it does not hold."""
    try:
        store = Store(root)
    except StoreError as exc:
        raise ConfigError(f"the bench's `store`: {exc}") from None
    problem = pools_problem(store)
    if problem is not None:
        raise ConfigError(f"the bench's store {root}: {problem} (it is not rebuilt here: run `runbook reindex` on it)")
    records = haystack_trajectories(haystack)
    held = sum(1 for trajectory_id, _, _ in records if store.row(trajectory_id) is not None)
    manifest = {"haystack": haystack.name, "store": str(root), "expected": len(records), "stored": held}
    return HaystackStore(store, "given", manifest)


def pools_problem(store: Store) -> str | None:
    """Why the store's pools cannot serve this runbook's methods, or None when they can."""
    try:
        manifest = read_manifest(store.layout.pools, safe_opener(store.layout))
    except (StoreError, OSError) as exc:
        return str(exc)
    if len(store) and not manifest["trajectories"]:
        return "the store has no retrieval pools"
    return None


def _reindex(ready: HaystackStore, problem: str, progress: ProgressFn | None, workers: int | None) -> None:
    """Rebuild the pools of a reused store and say so in its bench.json (written whole, then renamed)."""
    report = reindex(ready.store, workers=workers, progress=progress)
    ready.manifest.setdefault("reindexed", []).append(
        {
            "why": problem,
            "seconds": round(report.seconds, 2),
            "runbook": __version__,
            "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
    )
    path = ready.store.root / MANIFEST
    partial = path.with_name(f"{MANIFEST}.tmp-{os.getpid()}")
    partial.write_text(json.dumps(ready.manifest, indent=1) + "\n")
    os.replace(partial, path)


def _build(folder: Path, haystack: Haystack, records, progress: ProgressFn | None, workers: int | None) -> dict:
    from ..ingest import insert_paths
    from ..pools import insert_listener

    start = time.perf_counter()
    store = Store(folder, create=True)
    source = haystack.source
    if haystack.trajectory_ids is not None:
        source = _write_subset(folder.parent / f"{folder.name}.jsonl", records, haystack.base_dir)
    try:
        report = insert_paths(
            store, [source], skip_invalid=True, progress=progress, workers=workers, listeners=[insert_listener(store)]
        )
    finally:
        if source != haystack.source:
            source.unlink(missing_ok=True)
    return {
        "haystack": haystack.name,
        "source": str(haystack.source),
        "expected": len(records),
        "stored": len(store),
        "inserted": report.inserted,
        "unchanged": report.unchanged,
        "refused": report.refused,
        "invalid": [str(e) for e in report.invalid],
        "states": report.states,
        "tokens": report.tokens,
        "seconds": round(time.perf_counter() - start, 2),
        "runbook": __version__,
        "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def _write_subset(path: Path, records, base_dir: Path) -> Path:
    """The haystack's trajectories as one JSONL file, screenshot paths made absolute (the file is elsewhere)."""
    with open(path, "wb") as out:
        for _tid, _raw, obj in records:
            for state in obj.get("states") or obj.get("content") or []:
                holder = state.get("observation") if "observation" in state else state
                shot = holder.get("screenshot") if isinstance(holder, dict) else None
                if isinstance(shot, str) and shot and not os.path.isabs(shot):
                    holder["screenshot"] = str(base_dir / shot)
            out.write(orjson.dumps(obj) + b"\n")
    return path
