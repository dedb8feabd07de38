"""`check`: which backend would run, whether the engine and image are there, and every isolation probe's result."""
from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import SandboxError
from .probes import ProbeResult, run_probes


@dataclass
class CheckReport:
    """Everything `runbook sandbox check` prints."""

    requested: str
    backend: str | None = None
    reason: str = ""
    store: str = ""
    engine: str = ""
    image: str = ""
    bwrap: str = ""
    error: str = ""
    probes: list[ProbeResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.error and bool(self.probes) and all(p.passed for p in self.probes)

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}


def check_sandbox(name: str, store_path: str | Path) -> CheckReport:
    """Describe the host's sandbox set-up and run the probes in a sandbox of `name` (or the one auto picks)."""
    from . import get_sandbox
    from .engine import connect
    from .image import image_exists, image_tag
    from .select import bwrap_works, pick_backend

    report = CheckReport(requested=name)
    report.bwrap = bwrap_works()[1]
    options: dict = {}
    try:
        if name == "auto":
            name, options, report.reason = pick_backend()
        report.backend = name
    except SandboxError as exc:
        report.error = str(exc)
    try:  # after pick_backend, which may have just built the image
        engine = connect()
        report.engine = f"{engine.url}, Docker {engine.version()}"
        tag = image_tag()
        report.image = f"{tag} ({'present' if image_exists(engine, tag) else 'not built yet: runbook sandbox build'})"
    except SandboxError as exc:
        report.engine = f"not reachable: {exc}"
    if report.error:
        return report
    store = Path(store_path)
    with tempfile.TemporaryDirectory(prefix="runbook-check-store-") as empty:
        if not store.is_dir():  # a check should work before anything is inserted
            report.store = f"{store} (missing; probes use an empty folder)"
            store = Path(empty)
            store.chmod(0o755)
        else:
            report.store = str(store)
        try:
            with get_sandbox(name, store, **options) as box:
                report.probes = run_probes(box)
        except SandboxError as exc:
            report.error = str(exc)
    return report
