"""The sandbox programs (search, show, rbk.py in runbook/sandbox/programs) run as subprocesses over a small store."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from runbook.sandbox.sources import core_dir, library_root, programs_dir
from runbook.store import Store
from runbook.trajectory import State, Trajectory

TOOLS = programs_dir()
NOBODY = 65534


def _state(i, text, *, time, action="click('5')", error="", thought=None, url=None):
    return State(
        index=i,
        url=url or f"http://localhost:7780/admin/page/{i}",
        title=f"Admin page {i}",
        text=text,
        action=action,
        action_error=error,
        thought=thought,
        timestamp=time,
    )


def _price_page(price: str) -> str:
    return (
        "RootWebArea 'Edit Product', focused\n"
        "\t[10] heading 'Desiree Fitness Tee'\n"
        "\t\tStaticText 'Price'\n"
        f"\t[12] textbox 'Price' value='{price}'\n"
        "\t[13] link 'Grand Total'\n"
        f"\t\tStaticText '{price}'\n"
    )


def sample_trajectories() -> list[Trajectory]:
    """Three trajectories, inserted out of time order: a price that changes, an error, a multi-line thought."""
    later = Trajectory(
        id="sa-late",
        site="shop_admin",
        goal="Raise the tee price to $12.50",
        outcome="success (reward 1.0)",
        start_url="http://localhost:7780/admin",
        states=[
            _state(0, _price_page("$10.00"), time="2025-12-18T09:00:00.000Z", action="fill('12', '$12.50')"),
            _state(
                1,
                _price_page("$12.50"),
                time="2025-12-18T09:01:00.000Z",
                action="send_msg_to_user('Price is now $12.50')",
            ),
        ],
    )
    earlier = Trajectory(
        id="sa-early",
        site="shop_admin",
        goal="What does the tee cost?",
        outcome="failure (reward 0.0)",
        start_url="http://localhost:7780/admin",
        states=[
            _state(
                0,
                "RootWebArea 'Dashboard'\n\t[5] link 'Catalog'\n\tError: This is a required field.\n",
                time="2025-12-16T08:00:00.000Z",
                error="TimeoutError: Locator.click: Timeout 500ms exceeded.\nCall log:\n  waiting",
                thought="The catalog link is covered.\nI will retry with the menu.",
            ),
            _state(1, _price_page("$10.00"), time="2025-12-16T08:01:00.000Z", action="send_msg_to_user('$10.00')"),
        ],
    )
    busy = "\n".join(f"\t[{100 + k}] row 'Tee Price row {k}'" for k in range(10))
    forum = Trajectory(
        id="fo-mid",
        site="forum",
        goal="Find posts about tee prices",
        outcome="success (reward 1.0)",
        start_url="http://localhost:9999/",
        states=[
            _state(
                0,
                "RootWebArea 'Forum'\n" + busy + "\n",
                time="2025-12-17T12:00:00.000Z",
                url="http://localhost:9999/f/tees",
                action="send_msg_to_user('found 10')",
            )
        ],
    )
    return [later, earlier, forum]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tools") / "store"
    store = Store(root, create=True)
    with store.writer() as writer:
        for traj in sample_trajectories():
            assert writer.insert(traj).status == "inserted"
    return root


def run_tool(name: str, *args: str, store: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, RUNBOOK_STORE_DIR=str(store))
    proc = subprocess.run(
        [sys.executable, str(TOOLS / name), *args], env=env, capture_output=True, text=True, timeout=60
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_python(code: str, *, store: Path, python: str = sys.executable, **kwargs) -> subprocess.CompletedProcess:
    path = [str(kwargs.pop("tools", TOOLS)), str(kwargs.pop("library", library_root()))]
    env = dict(os.environ, RUNBOOK_STORE_DIR=str(store), PYTHONPATH=os.pathsep.join(path))
    env.update(kwargs.pop("env", {}))
    return subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=60, **kwargs)


# -- search ----------------------------------------------------------------------------------------------------------
def test_search_names_trajectory_state_field_time_and_url_oldest_first(store_dir):
    out = run_tool("search", "12.50", store=store_dir).stdout.splitlines()
    assert out[0] == "# '12.50': 4 matching lines in 2 states of 1 trajectories; showing 4, oldest first"
    assert out[1] == "sa-late state 0 @ 2025-12-18T09:00:00.000Z http://localhost:7780/admin/page/0"
    assert out[2] == "  action: fill('12', '$12.50')"
    assert out[3] == "sa-late state 1 @ 2025-12-18T09:01:00.000Z http://localhost:7780/admin/page/1"
    assert out[4] == "  action: send_msg_to_user('Price is now $12.50')"
    assert out[5] == "  L14: [12] textbox 'Price' value='$12.50'"
    assert out[6] == "  L16: StaticText '$12.50'"


def test_search_sorts_by_state_time_not_insertion_order(store_dir):
    hits = json.loads(run_tool("search", r"\$10\.00", "--json", store=store_dir).stdout)["hits"]
    assert [(h["trajectory"], h["state"]) for h in hits][:3] == [("sa-early", 1)] * 3
    assert hits[-1]["trajectory"] == "sa-late"
    newest = json.loads(run_tool("search", r"\$10\.00", "--json", "--sort", "newest", store=store_dir).stdout)
    assert newest["hits"][0]["trajectory"] == "sa-late" and newest["hits"][0]["state"] == 0


def test_search_caps_per_state_and_in_all_and_says_so(store_dir):
    out = run_tool("search", "Tee Price", "--site", "forum", store=store_dir).stdout.splitlines()
    assert out[0].startswith("# 'Tee Price' in site forum: 10 matching lines in 1 states of 1 trajectories")
    assert out[2:5] == [f"  L{12 + k}: [{100 + k}] row 'Tee Price row {k}'" for k in range(3)]
    assert out[5] == "  (+7 more lines in this state)"
    assert out[6].startswith("# truncated: 7 more matching lines not shown (caps: 3 per state, 40 in all)")
    capped = json.loads(run_tool("search", "Price", "-n", "2", "--json", store=store_dir).stdout)
    assert len(capped["hits"]) == 2 and capped["truncated"] is True and capped["total_lines"] > 2
    whole = json.loads(run_tool("search", "Catalog", "--json", store=store_dir).stdout)
    assert whole["truncated"] is False and whole["total_lines"] == len(whole["hits"]) == 1


def test_search_output_byte_cap(store_dir):
    proc = run_tool("search", "Price", "--per-state", "20", "--max-bytes", "400", store=store_dir)
    assert len(proc.stdout.encode()) < 700
    assert "(output byte cap)" in proc.stdout.splitlines()[-1]
    capped = json.loads(
        run_tool("search", "Price", "--per-state", "20", "--max-bytes", "1500", "--json", store=store_dir).stdout
    )
    assert capped["truncated"] is True and 0 < len(capped["hits"]) < capped["total_lines"]


def test_search_fields(store_dir):
    errors = json.loads(run_tool("search", "Timeout", "--field", "error", "--json", store=store_dir).stdout)["hits"]
    assert [(h["trajectory"], h["state"], h["field"]) for h in errors] == [("sa-early", 0, "error")]
    assert errors[0]["line"] == "error: TimeoutError: Locator.click: Timeout 500ms exceeded. ⏎ Call log: ⏎   waiting"
    thought = json.loads(run_tool("search", "retry", "--field", "thought", "--json", store=store_dir).stdout)["hits"]
    assert thought[0]["line"] == "thought: The catalog link is covered. ⏎ I will retry with the menu."
    # "12.50" occurs in actions and page text: --field text keeps only the page
    text_only = json.loads(run_tool("search", "12.50", "--field", "text", "--json", store=store_dir).stdout)
    assert {h["field"] for h in text_only["hits"]} == {"text"} and text_only["total_lines"] == 2
    both = json.loads(run_tool("search", "12.50", "--field", "text,action", "--json", store=store_dir).stdout)
    assert both["total_lines"] == 4
    assert run_tool("search", "x", "--field", "nope", store=store_dir, check=False).returncode != 0


def test_search_field_names_stay_case_sensitive_under_ignore_case(store_dir):
    # the page line "Error: This is a required field." is page text, not the error header field
    assert run_tool("search", "-i", "required", "--field", "error", store=store_dir, check=False).returncode == 1
    hits = json.loads(run_tool("search", "-i", "required", "--json", store=store_dir).stdout)["hits"]
    assert [(h["trajectory"], h["state"], h["field"], h["line_number"]) for h in hits] == [("sa-early", 0, "text", 13)]


def test_search_fixed_word_ignore_case_and_filters(store_dir):
    fixed = json.loads(run_tool("search", "-F", "fill('12', '$12.50')", "--json", store=store_dir).stdout)
    assert [h["field"] for h in fixed["hits"]] == ["action"]
    assert run_tool("search", "-F", "-i", "GRAND TOTAL", "--json", store=store_dir).stdout.count('"field"') == 3
    assert run_tool("search", "-w", "Pric", store=store_dir, check=False).returncode == 1
    scoped = json.loads(
        run_tool("search", "Price", "--trajectory", "sa-*", "--json", "-n", "100", store=store_dir).stdout
    )
    assert {h["trajectory"] for h in scoped["hits"]} == {"sa-early", "sa-late"}
    failed = json.loads(run_tool("search", "Price", "--outcome", "failure", "--json", store=store_dir).stdout)
    assert {h["trajectory"] for h in failed["hits"]} == {"sa-early"}
    since = json.loads(run_tool("search", "Price", "--since", "2025-12-18", "--json", store=store_dir).stdout)
    assert {h["trajectory"] for h in since["hits"]} == {"sa-late"}


def test_search_count_shows_where_hits_concentrate(store_dir):
    out = run_tool("search", "Price", "--count", store=store_dir).stdout.splitlines()
    assert out[0] == "# 'Price': 17 matching lines in 4 states of 3 trajectories, most lines first"
    assert out[2].startswith("fo-mid | forum | success | 2025-12-17T12:00:00.000Z | 10 | 0:10 | Find posts")
    data = json.loads(run_tool("search", "Price", "--count", "--json", store=store_dir).stdout)
    assert [c["trajectory"] for c in data["counts"]] == ["fo-mid", "sa-late", "sa-early"]
    assert data["counts"][1]["states"] == {"0": 2, "1": 3} and data["truncated"] is False


def test_search_context_and_summaries(store_dir):
    out = run_tool("search", "textbox 'Price'", "-C", "1", "--trajectory", "sa-early", store=store_dir).stdout
    assert (
        "  L13- StaticText 'Price'\n  L14: [12] textbox 'Price' value='$10.00'\n  L15- [13] link 'Grand Total'"
    ) in out
    data = json.loads(run_tool("search", "Raise the tee", "--summaries", "--json", store=store_dir).stdout)
    owners = {(h["path"], h["trajectory"]) for h in data["summary_hits"]}
    assert ("summaries/actions.txt", "sa-late") in owners and ("summaries/trajectories.tsv", "sa-late") in owners


def test_search_no_match_and_bad_pattern(store_dir):
    none = run_tool("search", "zebra-crossing", store=store_dir, check=False)
    assert none.returncode == 1 and none.stdout.strip() == "# 'zebra-crossing': no matches"
    bad = run_tool("search", "(unclosed", store=store_dir, check=False)
    assert bad.returncode == 2 and "ripgrep failed" in bad.stderr and "unclosed" in bad.stderr
    escaped = run_tool("search", "Edit Product&#39;", store=store_dir)
    assert escaped.stdout.startswith(
        "# no matches for 'Edit Product&#39;'; it looks HTML-escaped, so its unescaped "
        'form "Edit Product\'" was searched\n# "Edit Product\'": 3 matching lines'
    )
    missing = run_tool("search", "x", "--store", str(store_dir / "nope"), store=store_dir, check=False)
    assert missing.returncode == 2 and "no runbook store" in missing.stderr


# -- show ------------------------------------------------------------------------------------------------------------
def test_show_overview(store_dir):
    out = run_tool("show", "sa-early", store=store_dir).stdout.splitlines()
    assert out[0] == (
        "sa-early | site shop_admin | failure (reward 0.0) | 2 states | "
        "2025-12-16T08:00:00.000Z -> 2025-12-16T08:01:00.000Z"
    )
    assert out[1] == "goal: What does the tee cost?"
    assert out[4] == (
        "  0 08:00:00 click('5')  @ http://localhost:7780/admin/page/0  !! TimeoutError: "
        "Locator.click: Timeout 500ms exceeded. Call log: waiting"
    )
    assert out[5] == "  1 08:01:00 send_msg_to_user('$10.00')  @ http://localhost:7780/admin/page/1"
    assert (
        "thought: The catalog link is covered. I will retry"
        in run_tool("show", "sa-ea", "--thoughts", store=store_dir).stdout
    )


def test_show_state_span_and_cuts(store_dir):
    one = run_tool("show", "sa-late", "1", store=store_dir).stdout
    assert one.startswith("== sa-late state 1 of 2\ntime: 2025-12-18T09:01:00.000Z\n")
    assert "action: send_msg_to_user('Price is now $12.50')" in one
    assert "--- page text" in one and "[12] textbox 'Price' value='$12.50'" in one
    span = run_tool("show", "sa-late", "0-1", store=store_dir).stdout
    assert "== sa-late state 0 of 2" in span and "== sa-late state 1 of 2" in span
    assert run_tool("show", "sa-late", "last", store=store_dir).stdout == one
    cut = run_tool("show", "fo-mid", "0", "--max-chars", "60", store=store_dir).stdout
    assert "Tee Price row 0" in cut and "Tee Price row 9" not in cut and "more chars" in cut
    lines = run_tool("show", "sa-late", "1", "--lines", "14-15", store=store_dir).stdout.splitlines()
    assert lines[1:] == [
        "L14: \t[12] textbox 'Price' value='$12.50'",
        "L15: \t[13] link 'Grand Total'",
        "[lines 14-15 of 16]",
    ]
    data = json.loads(run_tool("show", "sa-late", "0-1", "--json", store=store_dir).stdout)
    assert [s["index"] for s in data["states"]] == [0, 1] and data["states"][1]["time"].startswith("2025-12-18")


def test_show_grep_lists_matching_states_with_lines(store_dir):
    out = run_tool("show", "sa-late", "--grep", r"12\.50", store=store_dir).stdout.splitlines()
    assert out[0] == r"# sa-late: '12\\.50' matches 4 lines in 2 of 2 states"
    assert out[1] == "== state 0 @ 2025-12-18T09:00:00.000Z http://localhost:7780/admin/page/0"
    assert out[2] == "  action: fill('12', '$12.50')"
    assert out[4:7] == [
        "  action: send_msg_to_user('Price is now $12.50')",
        "  L14: [12] textbox 'Price' value='$12.50'",
        "  L16: StaticText '$12.50'",
    ]
    none = run_tool("show", "sa-late", "--grep", "zebra", store=store_dir, check=False)
    assert none.returncode == 1


def test_show_errors_name_the_fix(store_dir):
    unknown = run_tool("show", "sa-lat", "5", store=store_dir, check=False)
    assert unknown.returncode == 2 and "states 0-1" in unknown.stderr
    typo = run_tool("show", "sa-erly", store=store_dir, check=False)
    assert typo.returncode == 2 and "did you mean: sa-early" in typo.stderr


# -- rbk -------------------------------------------------------------------------------------------------------------
RBK_CHECKS = r"""
import json, rbk
out = {}
out["trajectories"] = [t.id for t in rbk.trajectories()]
out["shop"] = [t.id for t in rbk.trajectories(site="shop_admin", outcome="success")]
s = rbk.state("sa-early", 0)
out["state"] = [s.time, s.error, s.thought, s.text.splitlines()[0]]
out["states"] = [x.index for x in rbk.states("sa-late")]
out["grep"] = [(h.trajectory, h.state, h.field) for h in rbk.grep("textbox 'Price'")]
h = rbk.latest("textbox 'Price'")
out["latest"] = [h.trajectory, h.state, h.value]
out["timeline"] = [(h.trajectory, h.state, h.value, h.seen) for h in rbk.timeline("textbox 'Price'", changes=True)]
out["groups"] = [h.value for h in rbk.timeline(r"value='\$(\d+)")]
out["find_value"] = [h.value for h in rbk.find_value("Grand Total")]
out["values"] = rbk.values(rbk.state("sa-late", 1).text, "Price")
out["errors"] = [(e.trajectory, e.state, e.error.splitlines()[0]) for e in rbk.errors()]
out["count"] = {f"{k[0]}/{k[1]}": n for k, n in rbk.count("Price").items()}
out["repr_short"] = len(repr(rbk.state("fo-mid", 0))) < 2000
out["help"] = "latest" in rbk.__doc__ and "find_value" in rbk.__doc__
print(json.dumps(out))
"""


def check_rbk_output(stdout: str) -> None:
    out = json.loads(stdout)
    assert out["trajectories"] == ["sa-early", "fo-mid", "sa-late"]  # recording order, not insertion order
    assert out["shop"] == ["sa-late"]
    assert out["state"] == [
        "2025-12-16T08:00:00.000Z",
        "TimeoutError: Locator.click: Timeout 500ms exceeded.\nCall log:\n  waiting",
        "The catalog link is covered.\nI will retry with the menu.",
        "RootWebArea 'Dashboard'",
    ]
    assert out["states"] == [0, 1]
    assert out["grep"] == [["sa-early", 1, "text"], ["sa-late", 0, "text"], ["sa-late", 1, "text"]]
    assert out["latest"] == ["sa-late", 1, "$12.50"]
    assert out["timeline"] == [["sa-early", 1, "$10.00", 2], ["sa-late", 1, "$12.50", 1]]
    assert out["groups"] == ["10", "10", "12"]
    assert out["find_value"] == ["$10.00", "$10.00", "$12.50"]
    assert out["values"] == ["$12.50"]  # the label line and the textbox under it that repeats the label: one value
    assert out["errors"] == [["sa-early", 0, "TimeoutError: Locator.click: Timeout 500ms exceeded."]]
    assert out["count"] == {"sa-early/1": 2, "fo-mid/0": 10, "sa-late/0": 2, "sa-late/1": 3}
    assert out["repr_short"] and out["help"]


def test_rbk_helpers(store_dir):
    proc = run_python(RBK_CHECKS, store=store_dir)
    assert proc.returncode == 0, proc.stderr
    check_rbk_output(proc.stdout)


def test_values_reads_inputs_label_value_pairs_and_next_lines():
    sys.path.insert(0, str(TOOLS))
    try:
        import rbk
    finally:
        sys.path.remove(str(TOOLS))
    assert rbk.values("\t[556] textbox 'Website url'\n\t\tStaticText 'Location'", "Website url") == [""]
    dom = (
        "Full name\n|SHADOW(open)|*[451]<input type=text id=profileName value=Jordan R. Rivera "
        "placeholder=Enter your full name />\nDisplay full names\nShow full names instead of usernames"
    )
    assert rbk.values(dom, "Full name") == ["Jordan R. Rivera"]
    assert rbk.values("[10738] StaticText 'Default Stock: 100'", "Default Stock") == ["100"]
    assert rbk.values("[171] link 'To-Do List'\n\t[172] image ''\n\tStaticText '5'", "To-Do List") == ["5"]
    assert rbk.values("[4770] checkbox 'Busy', checked='false'", "Busy") == ["false"]


def _read_only_copy(store_dir: Path, *, stale_wal: bool) -> Path:
    """A world-readable copy with every folder 0555 and file 0444; stale_wal leaves a WAL that needs its -shm."""
    base = Path(tempfile.mkdtemp(prefix="rbk-ro-"))
    base.chmod(0o755)
    copy = base / "store"
    if stale_wal:
        staging = base / "staging"
        shutil.copytree(store_dir, staging)
        conn = sqlite3.connect(staging / "catalog.sqlite")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("UPDATE trajectories SET inserted_at = inserted_at || ' '")  # a no-op update writes nothing
        conn.commit()
        shutil.copytree(staging, copy)  # while the connection is open: the -wal file is not empty
        conn.close()
        shutil.rmtree(staging)
        (copy / "catalog.sqlite-shm").unlink(missing_ok=True)
        assert (copy / "catalog.sqlite-wal").stat().st_size > 0
    else:
        shutil.copytree(store_dir, copy)
    rg = shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")
    shutil.copy(os.path.realpath(rg), base / "rg")
    (base / "rg").chmod(0o755)
    shutil.copytree(TOOLS, base / "tools")
    # the core library as the sandbox has it: a namespace package `runbook` holding only `core`
    shutil.copytree(core_dir(), base / "lib" / "runbook" / "core", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [base / "tools", *(base / "tools").rglob("*"), base / "lib", *(base / "lib").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return copy


def _python_for(uid: int) -> str | None:
    """A Python interpreter that user `uid` can run (version managers often keep theirs in a private home)."""
    for python in (sys.executable, os.path.realpath(sys.executable), "/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(python):
            try:
                ok = subprocess.run([python, "-c", "import sqlite3"], user=uid, capture_output=True, timeout=30)
            except (OSError, subprocess.SubprocessError):
                continue
            if ok.returncode == 0:
                return python
    return None


@pytest.mark.parametrize("stale_wal", [False, True], ids=["checkpointed", "stale-wal"])
def test_rbk_on_a_read_only_store(store_dir, stale_wal):
    copy = _read_only_copy(store_dir, stale_wal=stale_wal)
    try:
        env = {"RUNBOOK_RG": str(copy.parent / "rg"), "PYTHONDONTWRITEBYTECODE": "1"}
        if os.geteuid() == 0:  # root ignores file modes: read as `nobody`, who can write nothing in the copy
            python = _python_for(NOBODY)
            if python is None:
                pytest.skip("no Python interpreter that user nobody can run")
            proc = run_python(
                RBK_CHECKS,
                store=copy,
                python=python,
                tools=copy.parent / "tools",
                library=copy.parent / "lib",
                env=env,
                user=NOBODY,
                group=NOBODY,
                cwd="/",
            )
        else:
            proc = run_python(RBK_CHECKS, store=copy, tools=copy.parent / "tools", library=copy.parent / "lib", env=env)
        assert proc.returncode == 0, proc.stderr
        check_rbk_output(proc.stdout)
        assert not (copy / "catalog.sqlite-shm").exists() or not stale_wal  # nothing was written
    finally:
        for path in [copy, *copy.rglob("*")]:
            path.chmod(stat.S_IRWXU | (path.stat().st_mode & 0o777))
        shutil.rmtree(copy.parent, ignore_errors=True)
