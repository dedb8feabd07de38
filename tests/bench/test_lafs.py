"""LAFS on LongMemEval-V2's published operating points, computed the long way in each test."""

from __future__ import annotations

import math

import pytest

from runbook.bench.lafs import PUBLISHED, OperatingPoint, best_within, frontier, lafs, lafs_gain

LN200 = math.log(200)


def test_the_published_small_frontier_drops_the_dominated_codex_point():
    names = [p.name for p in frontier(PUBLISHED["small"])]
    assert names == ["RAG (slice + notes)", "AgentRunbook-R", "AgentRunbook-C"]


def test_lafs_of_the_published_small_points():
    # RAG (51.0) holds from 1 s (it is faster than 1 s), R (58.6) from 26.9 s, C (74.9) from 108.3 s to 200 s
    expected = (51.0 * math.log(26.9) + 58.6 * math.log(108.3 / 26.9) + 74.9 * math.log(200 / 108.3)) / LN200
    assert lafs(PUBLISHED["small"]) == pytest.approx(expected)


def test_lafs_of_the_published_medium_points():
    expected = (45.9 * math.log(25.8) + 57.0 * math.log(139.9 / 25.8) + 70.1 * math.log(200 / 139.9)) / LN200
    assert lafs(PUBLISHED["medium"]) == pytest.approx(expected)


def test_a_dominated_point_gains_nothing_and_a_faster_better_one_does():
    assert lafs_gain([OperatingPoint("slow", 70.0, 150.0)]) == pytest.approx(0.0)
    fast = OperatingPoint("fast", 62.0, 15.0)
    # between 15 s and 26.9 s the best accuracy rises from 51.0 to 62.0, and from 26.9 s to 108.3 s from 58.6
    expected = ((62.0 - 51.0) * math.log(26.9 / 15.0) + (62.0 - 58.6) * math.log(108.3 / 26.9)) / LN200
    assert lafs_gain([fast]) == pytest.approx(expected)


def test_points_outside_the_range():
    # slower than 200 s never counts; faster than 1 s counts over the whole range
    assert lafs([OperatingPoint("too slow", 90.0, 250.0)]) == 0.0
    assert lafs([OperatingPoint("instant", 40.0, 0.01)]) == pytest.approx(40.0)


def test_best_within_a_budget():
    assert best_within(PUBLISHED["small"], 100.0) == 58.6
    assert best_within(PUBLISHED["small"], 0.1) == 0.0


def test_range_must_be_sane():
    with pytest.raises(ValueError):
        lafs(PUBLISHED["small"], t_min=10, t_max=1)
