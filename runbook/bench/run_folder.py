"""One run's folder: `config.json`, `per_question.jsonl` (appended as questions finish, so a killed run resumes
where it stopped; a later record of a question replaces an earlier one) and `aggregated_metrics.json` (written when
the run's questions are done).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import threading
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..version import __version__
from .config import RunPoint
from .metrics import aggregate

CONFIG = "config.json"
RECORDS = "per_question.jsonl"
METRICS = "aggregated_metrics.json"
IDENTITY = ("method", "options", "budget", "reader", "judge", "store")
"""The config fields a resumed run must share with the records already written."""


def point_config(point: RunPoint, *, reader: dict | None, judge: dict | None) -> dict[str, Any]:
    """What config.json says about one run."""
    return {
        "name": f"{point.config.name}/{point.slug}",
        "label": point.label,
        "method": point.spec.method,
        "method_label": point.spec.label,
        "options": point.spec.options,
        "budget": point.budget,
        "reader": reader,
        "judge": judge,
        "question_sets": [str(q.path) for q in point.config.questions],
        "store": str(point.config.store) if point.config.store else None,
        "config_file": str(point.config.source) if point.config.source else None,
        "runbook_version": __version__,
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine()},
    }


def spec_json(spec) -> dict | None:
    """A reader or judge spec as JSON (None stays None)."""
    return None if spec is None else {k: v for k, v in asdict(spec).items()}


class RunFolder:
    """The files of one run, safe to append to from several worker threads."""

    def __init__(self, folder: Path, config: dict[str, Any], *, fresh: bool = False):
        self.folder = folder
        self.config = config
        self._lock = threading.Lock()
        if fresh and folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._check_identity()
        (folder / CONFIG).write_text(json.dumps(config, indent=2, default=str) + "\n")
        self.records: dict[str, dict] = {r["question_id"]: r for r in read_records(folder)}
        records = folder / RECORDS
        if records.exists() and records.stat().st_size and not records.read_bytes().endswith(b"\n"):
            with open(records, "ab") as fh:  # a line cut short by a kill: the next record starts on its own line
                fh.write(b"\n")

    def _check_identity(self) -> None:
        path = self.folder / CONFIG
        if not path.exists() or not (self.folder / RECORDS).exists():
            return
        before = json.loads(path.read_text())
        changed = [
            k
            for k in IDENTITY
            if json.loads(json.dumps(before.get(k), default=str))
            != json.loads(json.dumps(self.config.get(k), default=str))
        ]
        if changed:
            raise ConfigError(
                f"{self.folder} holds a run with another {', '.join(changed)}; pass --fresh to start "
                f"it over, or give the method another label"
            )

    def done(self, question_id: str) -> bool:
        """Answered without an error: a question whose query failed runs again when the run resumes."""
        record = self.records.get(question_id)
        return record is not None and not record.get("error")

    def append(self, record: dict) -> None:
        with self._lock:
            with open(self.folder / RECORDS, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self.records[record["question_id"]] = record

    def finish(self, question_ids: Iterable[str], *, store_write_failures: int = 0) -> dict:
        """Aggregate the records of `question_ids` (in that order) into aggregated_metrics.json."""
        records = [self.records[q] for q in question_ids if q in self.records]
        metrics = aggregate(records, store_write_failures=store_write_failures) if records else {}
        metrics.update(
            name=self.config["name"],
            label=self.config["label"],
            budget=self.config["budget"],
            method=self.config["method"],
            count=len(records),
        )
        (self.folder / METRICS).write_text(json.dumps(metrics, indent=2, default=str) + "\n")
        return metrics


def read_records(folder: Path) -> list[dict]:
    """The records of a run; a line cut short by a kill is skipped (that question runs again)."""
    path = folder / RECORDS
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
