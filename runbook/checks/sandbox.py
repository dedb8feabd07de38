"""`check`: which backend would run, whether the engine and image are there, every limit the backend claims with
its probe's verdict, every limit it cannot enforce here and why, and every agent tool run once."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import SandboxError
from ..sandbox.probes import ENFORCED, FAILED, NOT_ENFORCED, LimitResult, Probe, run_probes

SAMPLE_ID = "runbook-check"
"""The one trajectory of the store the agent tools are tried on."""
SAMPLE_ARGUMENTS = {
    "recall": {"query": "Which item does the page link to?"},
    "search": {"pattern": "Item"},
    "show": {"trajectory_id": SAMPLE_ID, "states": "1"},
    "read": {"path": "summaries/trajectories.tsv"},
    "python": {"code": "import rbk\nprint([t.id for t in rbk.trajectories()])"},
}
"""Arguments for each tool; a tool not named here gets arguments made from its schema's required fields."""


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
    limits: list[LimitResult] = field(default_factory=list)

    @property
    def failed(self) -> list[LimitResult]:
        return [limit for limit in self.limits if limit.status == FAILED]

    @property
    def not_enforced(self) -> list[LimitResult]:
        return [limit for limit in self.limits if limit.status == NOT_ENFORCED]

    @property
    def passed(self) -> bool:
        """Every limit the backend claims holds (some may still be NOT ENFORCED: see not_enforced)."""
        return not self.error and bool(self.limits) and not self.failed

    def verdict(self) -> str:
        if self.error:
            return f"error: {self.error}"
        enforced = sum(limit.status == ENFORCED for limit in self.limits)
        missing = sorted({limit.key for limit in self.not_enforced})
        head = (
            f"FAILED: {len(self.failed)} claimed limit(s) do not hold"
            if self.failed
            else f"every claimed limit holds ({enforced} checks)"
        )
        return head + (f"; NOT ENFORCED here: {', '.join(missing)}" if missing else "; nothing left unenforced")

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "passed": self.passed,
            "not_enforced": [limit.name for limit in self.not_enforced],
            "verdict": self.verdict(),
        }


def check_sandbox(
    name: str, store_path: str | Path, *, probes: list[Probe] | None = None, tools: bool = True
) -> CheckReport:
    """Describe the host's sandbox set-up, then probe a sandbox of `name` (or the one auto picks) and run every
    agent tool once. `probes` replaces the full list (tests)."""
    from ..sandbox import get_sandbox
    from ..sandbox.engine import connect
    from ..sandbox.image import image_exists, image_tag
    from ..sandbox.select import bwrap_works, pick_backend

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
    with tempfile.TemporaryDirectory(prefix="runbook-check-") as scratch:
        if not store.is_dir():  # a check should work before anything is inserted
            report.store = f"{store} (missing; probes use an empty folder)"
            store = Path(scratch) / "empty"
            store.mkdir(mode=0o755)
            Path(scratch).chmod(0o755)
        else:
            report.store = str(store)
        try:
            with get_sandbox(name, store, **options) as box:
                report.limits = run_probes(box, probes)
            if tools:
                report.limits += agent_tool_results(name, options, Path(scratch))
        except SandboxError as exc:
            report.error = str(exc)
    return report


def sample_store(folder: Path) -> Path:
    """A store of one small trajectory, inserted as `runbook insert` does (with method R's pools), readable by the
    sandbox user."""
    import json

    from ..ingest import insert_paths
    from ..pools import insert_listener
    from ..store import Store
    from ..trajectory import State, Trajectory

    states = [
        State(
            index=i,
            url=f"http://shop.example/page/{i}",
            title=f"Page {i}",
            text=f"RootWebArea 'Page {i}'\n\t[1{i}] link 'Item {i}'",
            action=f"click('1{i}')",
            timestamp=f"2025-01-01T00:0{i}:00.000Z",
        )
        for i in range(3)
    ]
    source = folder / "sample.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    source.write_text(
        json.dumps(
            Trajectory(
                id=SAMPLE_ID,
                states=states,
                goal="Find the item",
                site="shop",
                start_url=states[0].url,
                outcome="success",
            ).to_dict()
        )
        + "\n"
    )
    store = Store(folder / "store", create=True)
    insert_paths(store, [source], workers=1, listeners=[insert_listener(store)])
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store.root


def arguments_for(spec) -> dict:
    if spec.name in SAMPLE_ARGUMENTS:
        return SAMPLE_ARGUMENTS[spec.name]
    samples = {"string": SAMPLE_ID, "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}
    properties = spec.parameters.get("properties", {})
    args = {}
    for key in spec.parameters.get("required", []):
        kind = properties.get(key, {}).get("type", "string")
        args[key] = samples.get(kind if isinstance(kind, str) else kind[0], SAMPLE_ID)
    return args


def tools_with_commands() -> list:
    """The agent's tools that run a command in the sandbox (finish runs none), with the arguments to try."""
    from ..agent.tools import TOOL_SPECS, ToolError, command_for

    tools = []
    for spec in TOOL_SPECS:
        args = arguments_for(spec)
        try:
            command_for(spec.name, args)
        except ToolError:
            continue
        tools.append((spec.name, args))
    return tools


def agent_tool_results(name: str, options: dict, folder: Path) -> list[LimitResult]:
    """Run every agent tool that runs a sandbox command once, through the ToolBox, as a query would."""
    from ..agent.tools import ToolBox
    from ..models.messages import ToolCall
    from ..sandbox import get_sandbox

    results = []
    store = sample_store(folder / "tools")
    with get_sandbox(name, store, **options) as box:
        toolbox = ToolBox(box)
        for tool, args in tools_with_commands():
            result = toolbox.run(ToolCall(f"check-{tool}", tool, args))
            held = result.error is None and result.exit_code == 0
            seen = " ".join(result.output.split())[:200]
            results.append(
                LimitResult(
                    "tools",
                    f"agent tool {tool} runs",
                    ENFORCED if held else FAILED,
                    f"{tool}({', '.join(args)}): exit {result.exit_code}: {seen}",
                )
            )
    return results
