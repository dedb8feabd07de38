"""The scan's one ripgrep pass, run by the core inside each real backend with that backend's own ripgrep (Debian 12's
13.0 in the docker image): every pattern of a question is found where the page writes it, ASCII and non-ASCII
patterns together, whatever their order, across the invisible direction marks a title may hold; and a pass that
fails says so instead of finding nothing."""

from __future__ import annotations

import json

import pytest

PAGE = (
    "url: http://localhost:8023/-/profile\ntitle: Edit Profile · User Settings · GitLab\n---\n"
    "RootWebArea 'Edit Profile · User Settings · GitLab'\n"
    "\t[432] checkbox 'Set yourself as busy Displays that you are busy', checked='true'\n"
    "\t[590] checkbox 'Include private contributions on my profile', checked='false'\n"
    "\t[601] link 'Way: \u202aStanford University\u202c (\u202a29268613\u202c) | OpenStreetMap'\n"
)
PATTERNS = [  # longest first, as the scan orders them: ASCII ones before and after the one with a '·'
    {"text": "Include private contributions on my profile", "kind": "phrase"},
    {"text": "Edit Profile · User Settings · GitLab", "kind": "phrase"},
    {"text": "Way: Stanford University (29268613) | OpenStreetMap", "kind": "phrase"},
    {"text": "Set yourself as busy", "kind": "phrase"},
    {"text": "profile", "kind": "term", "stem": "suffix"},
]
SCAN = """
import json, sys
from runbook.core.patterns import pattern_regex
from runbook.core.scan import run_rg
found = run_rg("/store", [pattern_regex(p) for p in json.loads(sys.argv[1])])
print(json.dumps(sorted(text for counts in found.values() for text in counts)))
"""


@pytest.fixture
def profile_store(tiny_store):
    states = tiny_store / "trajectories" / "t-1" / "states"
    (states / "0000.md").write_text(PAGE)
    (states / "0000.md").chmod(0o644)
    return tiny_store


def test_ascii_and_non_ascii_patterns_are_found_together_by_the_backends_ripgrep(make_box, profile_store):
    box = make_box(profile_store)
    result = box.exec(["python3", "-c", SCAN, json.dumps(PATTERNS)], timeout=60)
    assert result.exit_code == 0, result.output
    found = set(json.loads(result.output.strip().splitlines()[-1]))
    assert {"include private contributions on my profile", "set yourself as busy", "profile"} <= found
    assert "edit profile · user settings · gitlab" in found
    assert "way: \u202astanford university\u202c (\u202a29268613\u202c) | openstreetmap" in found  # direction marks


def test_a_failed_ripgrep_pass_is_an_error_not_a_scan_that_found_nothing(make_box, profile_store):
    box = make_box(profile_store)
    broken = [{"text": "x", "kind": "phrase"}]
    code = SCAN.replace("[pattern_regex(p) for p in json.loads(sys.argv[1])]", "['(unclosed']")
    result = box.exec(["python3", "-c", code, json.dumps(broken)], timeout=60)
    assert result.exit_code != 0
    assert "the scan's ripgrep pass failed" in result.output
