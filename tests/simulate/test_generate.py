"""runbook.simulate: determinism, schema, and that every gold answer is grounded in the states it cites."""

from __future__ import annotations

import re
import time

import orjson
import pytest
from PIL import Image

from runbook.simulate import generate_world, state_text, write_dataset
from runbook.trajectory import trajectory_from_dict

TYPES = {
    "static-environment",
    "dynamic-environment",
    "procedure",
    "errors-gotchas",
    "static-environment-abs",
    "dynamic-environment-abs",
    "procedure-abs",
}


# Same normalisation as ../shared/tools/score_contexts.py (LongMemEval-V2's phrase match).
def norm(s):
    s = s.lower().replace("-", " ").replace("_", " ")
    s = re.sub(r"[^\w\s]", " ", s)
    return re.sub(r"\s+", " ", s).strip()


def contains(hay, phrase):
    p = norm(phrase)
    return bool(p) and re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", hay) is not None


@pytest.fixture(scope="module")
def world():
    trajs, qs = generate_world(7, 160)
    states = {(t["id"], s["state_index"]): s for t in trajs for s in t["states"]}
    return trajs, qs, states


def test_deterministic_for_a_seed():
    a = generate_world(3, 40, screenshots=False)
    b = generate_world(3, 40, screenshots=False)
    assert orjson.dumps(a) == orjson.dumps(b)
    assert orjson.dumps(generate_world(4, 40, screenshots=False)) != orjson.dumps(a)


def test_trajectories_follow_the_schema(world):
    trajs, _, _ = world
    assert [t["id"] for t in trajs] == [f"gen-acme-{i}" for i in range(1, len(trajs) + 1)]
    last = ""
    for t in trajs:
        copy = orjson.loads(orjson.dumps(t))
        for s in copy["states"]:
            s["screenshot"] = None  # not written here; test_write_dataset_layout validates the files
        tr = trajectory_from_dict(copy)
        assert tr.site == "acme_admin" and tr.domain == "web" and tr.goal
        assert t["outcome"] in ("success (reward 1.0)", "failure (reward 0.0)")
        assert t["states"][-1]["action"].startswith("send_msg_to_user(")
        for s in t["states"]:
            assert s["timestamp"] > last, "timestamps must increase across trajectories in recording order"
            last = s["timestamp"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s["timestamp"])
            assert s["screenshot"] == f"screenshots/{t['id']}/{s['state_index']:04d}.png"
            assert s["accessibility_tree"].startswith("RootWebArea '")
            assert re.fullmatch(r"(click|fill|select_option|send_msg_to_user)\(.*\)", s["action"], re.DOTALL)
    assert any(t["outcome"].startswith("failure") for t in trajs)
    assert any("intercepts pointer events" in s["action_error"] for t in trajs for s in t["states"])


def test_questions_schema_and_coverage(world):
    _, qs, _ = world
    assert {q["question_type"] for q in qs} == TYPES
    assert len({q["id"] for q in qs}) == len(qs) and len({q["question"] for q in qs}) == len(qs)
    for q in qs:
        assert q["set"] == "generated" and q["site"] == "acme_admin" and q["evidence"]
        abs_ = q["question_type"].endswith("-abs")
        if abs_:
            assert q["eval_function"] == "llm_abstention_checker" and q["answer"].startswith("False premise")
        elif q["question_type"] == "errors-gotchas":
            assert q["eval_function"] == "llm_gotchas_checker"
        else:
            assert q["eval_function"] == "norm_phrase_set_match|separators=,;"
            assert q["answer"] == "; ".join(q["answer_phrases"])
        assert isinstance(q["visual_only"], bool)


def test_answer_phrases_occur_in_an_evidence_state(world):
    _, qs, states = world
    for q in qs:
        for ev in q["evidence"] + q["stale_evidence"]:
            assert (ev["trajectory_id"], ev["state_index"]) in states, (q["id"], ev)
        if q["visual_only"]:
            continue
        assert q["answer_phrases"] or q["question_type"].endswith("-abs"), q["id"]
        texts = [norm(state_text(states[(e["trajectory_id"], e["state_index"])])) for e in q["evidence"]]
        for ph in q["answer_phrases"]:
            assert any(contains(t, ph) for t in texts), (q["id"], q["question"], ph)


def test_dynamic_questions_have_older_values_earlier(world):
    _, qs, states = world
    dyn = [q for q in qs if q["question_type"] == "dynamic-environment"]
    assert len(dyn) >= 5
    for q in dyn:
        older = re.search(r"\(earlier: (.*)\)$", q["answer_detail"]).group(1).split(", then ")
        assert q["stale_evidence"] and q["answer_phrases"][0] not in older
        first_current = min(states[(e["trajectory_id"], e["state_index"])]["timestamp"] for e in q["evidence"])
        for e in q["stale_evidence"]:
            s = states[(e["trajectory_id"], e["state_index"])]
            assert s["timestamp"] < first_current, q["id"]
            assert any(contains(norm(state_text(s)), v) for v in older), (q["id"], older)


def test_write_dataset_layout(tmp_path):
    counts = write_dataset(tmp_path, seed=5, n=10)
    assert counts["trajectories"] == 10 and counts["screenshots"] == counts["states"]
    rows = [orjson.loads(line) for line in (tmp_path / "trajectories.jsonl").read_bytes().splitlines()]
    for t in rows:
        trajectory_from_dict(t, base_dir=str(tmp_path))  # checks every screenshot file exists
    with Image.open(tmp_path / rows[0]["states"][0]["screenshot"]) as im:
        assert im.size == (800, 500) and im.format == "PNG"
    qs = [orjson.loads(line) for line in (tmp_path / "questions.jsonl").read_bytes().splitlines()]
    assert len(qs) == counts["questions"]
    for q in qs:
        if q["image"]:
            assert (tmp_path / q["image"]).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["questions.jsonl", "screenshots", "trajectories.jsonl"]


def test_without_screenshots_is_fast_and_has_no_images(tmp_path):
    t = time.time()
    counts = write_dataset(tmp_path, seed=11, n=200, screenshots=False)
    assert time.time() - t < 10
    assert counts["trajectories"] == 200 and not (tmp_path / "screenshots").exists()
    qs = [orjson.loads(line) for line in (tmp_path / "questions.jsonl").read_bytes().splitlines()]
    assert not any(q["image"] or q["visual_only"] for q in qs)


def test_cli(tmp_path):
    from click.testing import CliRunner

    from runbook.cli.generate import generate

    res = CliRunner().invoke(generate, ["--help"])
    assert res.exit_code == 0 and "Example" in res.output
    res = CliRunner().invoke(
        generate, [str(tmp_path / "out"), "--seed", "2", "--trajectories", "5", "--no-screenshots"]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "questions.jsonl").is_file() and "5 trajectories" in res.output
