"""bwrap run by an unprivileged user (the usual host without an engine): a user namespace instead of uid 65534, no
cgroup. Every limit it claims must hold, and the whole-sandbox ones it cannot have are reported NOT ENFORCED."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys, types
sys.modules["runbook"] = types.ModuleType("runbook")  # the sandbox package alone: no third-party imports
sys.modules["runbook"].__path__ = [sys.argv[1] + "/runbook"]
from runbook.sandbox.bwrap import BwrapSandbox
from runbook.sandbox.probes import run_probes
with BwrapSandbox(sys.argv[2]) as box:
    print(json.dumps([r.to_dict() for r in run_probes(box)]))
"""


@pytest.mark.bwrap
def test_bwrap_as_an_unprivileged_user_holds_what_it_claims(bwrap_ready):
    """As root, drop to nobody first; as any other user, this is already the unprivileged path."""
    work = Path(tempfile.mkdtemp(prefix="runbook-unprivileged-"))
    try:
        shutil.copytree(
            REPO / "runbook" / "sandbox", work / "runbook" / "sandbox", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copytree(
            REPO / "runbook" / "core", work / "runbook" / "core", ignore=shutil.ignore_patterns("__pycache__")
        )
        for module in ("errors.py",):  # what the sandbox package imports of runbook's base
            shutil.copy(REPO / "runbook" / module, work / "runbook" / module)
        store = work / "store"
        (store / "trajectories").mkdir(parents=True)
        (store / "runbook.json").write_text("{}\n")
        for path in [work, *work.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*drop, "/usr/bin/python3", "-I", "-c", SCRIPT, str(work), str(store)],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=work,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)},
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    limits = json.loads(done.stdout.splitlines()[-1])
    failed = [limit for limit in limits if limit["status"] == "FAILED"]
    assert not failed, json.dumps(failed, indent=1)
    status = {limit["key"]: limit["status"] for limit in limits}
    assert status["namespaces"] == status["timeout_tree"] == status["output_host"] == "enforced"
    assert status["user"] == status["scratch"] == status["network"] == "enforced"
    if os.geteuid() == 0:  # nobody may not make a cgroup: the whole-sandbox limits are said to be missing
        missing = {limit["key"]: limit["detail"] for limit in limits if limit["status"] == "NOT ENFORCED"}
        assert set(missing) == {"memory_total", "pids_total"} and "no cgroup" in missing["memory_total"]
    assert status["ipc"] == "enforced"
    if os.geteuid() == 0:  # as nobody without a cgroup: the case the README's third column describes
        from runbook.checks.sandbox import tools_with_commands
        from tests.sandbox.test_cli_sandbox import readme_check_counts

        enforced = sum(limit["status"] == "enforced" for limit in limits) + len(tools_with_commands())
        assert [enforced, len(missing)] == readme_check_counts()[2]  # the agent tools' runs are checks too
