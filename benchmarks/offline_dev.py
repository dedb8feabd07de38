"""Method C with the offline planner at 8k tokens over both dev question sets, scored by score_contexts.py.

Runs ../shared/tools/score_contexts.py as it is (it calls `runbook query --json` once per question) and prints its
figures: per question type, then the summary line with the share of answerable questions whose answer phrases
all appear in the context, the share whose evidence states are all cited, and latency p50/p95.

usage: python benchmarks/offline_dev.py [STORE] [--budget 8k] [--sandbox auto|docker|bwrap|local]
                                        [--questions F.jsonl ...] [--out FILE]
STORE defaults to $RUNBOOK_STORE or .runbook. The store must hold both shared sets (webarena and infinity).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RUNBOOK_SHARED", ROOT.parent / "shared"))
DEV_SETS = [SHARED / "data" / "questions_dev_webarena.jsonl", SHARED / "data" / "questions_dev_infinity.jsonl"]
SCORER = SHARED / "tools" / "score_contexts.py"


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", nargs="?", default=os.environ.get("RUNBOOK_STORE", ".runbook"))
    ap.add_argument("--budget", default="8k")
    ap.add_argument("--sandbox", default=None, help="sandbox backend for the queries (default: the configured one)")
    ap.add_argument("--questions", nargs="+", type=Path, default=DEV_SETS)
    ap.add_argument("--out", default=None, help="per-question rows as JSON lines")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    missing = [str(p) for p in [SCORER, *args.questions] if not p.exists()]
    if missing:
        print(
            f"offline_dev: not found: {', '.join(missing)} (set RUNBOOK_SHARED to the shared folder)", file=sys.stderr
        )
        return 2
    env = dict(os.environ, RUNBOOK_POLICY="offline")
    if args.sandbox:
        env["RUNBOOK_SANDBOX"] = args.sandbox
    command = [
        sys.executable,
        str(SCORER),
        str(args.store),
        "c",
        args.budget,
        *map(str, args.questions),
        "--policy",
        "offline",
    ]
    if args.out:
        command += ["--out", args.out]
    print(f"# method c, offline planner, budget {args.budget}, store {args.store}", flush=True)
    return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
