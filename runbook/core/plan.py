"""The offline planner's program in the sandbox: `plan` scans (rbscan), chooses the states a question of its kind
needs (rbcore.choice, the function the planner on the host repeats on this output) and reads them (rbdetail), all
in one call. Each call of the `python` tool costs a docker exec, two interpreters and these imports (~0.2 s
measured); scan and detail as two calls paid it twice, and loaded the catalog twice.

    import json, rbplan
    rbplan.plan({"scan": {...rbscan's params...}, "kind": "static", "wants_latest": False,
                 "detail": {"lines": 2, "after": 6, "max_chars": 3800}})

prints scan's JSON lines, then detail's `step` lines for the chosen states (none when nothing was chosen).
"""
import math

from .catalog import load_catalog
from .choice import choose
from .reader import default_store_dir
from .scanout import read_scan
from .detail import detail_output
from .scan import scan_output


def plan(params):
    """Scan, choose, detail: print the scan's lines and the chosen states' details."""
    catalog = load_catalog(default_store_dir())
    scan_params = params["scan"]
    scanned = scan_output(scan_params, catalog)
    # the choice is made on exactly the lines printed: the planner repeats it on them and gets the same states
    scan = read_scan("\n".join(scanned.lines))
    choice = choose(params["kind"], bool(params.get("wants_latest")), scan)
    scanned.flush()
    if choice.keys:
        detail_output(detail_request(choice, scan, scan_params["patterns"], params.get("detail", {})),
                      catalog).flush()


def detail_request(choice, scan, patterns, settings):
    """rbdetail's params for the chosen states: a walked-through run speaks through its actions; the other states
    through their best lines, quoted with weights by rarity."""
    walked = {run.t for run in choice.runs}
    lines = int(settings.get("lines", 2))
    states = [[t, i, lines if t not in walked else 0] for t, i in choice.keys]
    return {"states": states, "patterns": weighted(patterns, scan), "max_chars": settings.get("max_chars", 6000),
            "after": settings.get("after", 3)}


def weighted(patterns, scan):
    """The patterns with weights by rarity (from the scan's counts), so that quoted lines favour rare terms."""
    total = max(1, scan.n_states)
    out = []
    for p in patterns:
        states = (scan.df.get(p.get("label", p["text"])) or [0])[0]
        rarity = math.log(1 + (total - states + 0.5) / (states + 0.5))
        out.append({**p, "weight": round(p.get("weight", 1.0) * rarity * (2 if p["kind"] == "phrase" else 1), 3)})
    return out
