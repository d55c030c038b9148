"""The debugger runs the cyclic collector's full passes itself, between keys (``idle_gc``)."""

from __future__ import annotations

import gc

from dsh_replay_tui.idle_gc import FORCED_AFTER, FULL_AFTER, IdleCollector


def _second_generation_passes(n: int) -> None:
    for _ in range(n):
        gc.collect(1)  # each one counts towards the next full pass


def test_full_passes_wait_for_a_gap_between_keys_and_thresholds_come_back() -> None:
    before = gc.get_threshold()
    collector = IdleCollector()
    collector.start()
    try:
        assert gc.get_threshold()[:2] == before[:2]
        assert gc.get_threshold()[2] > 10**6  # CPython no longer starts full passes
        gc.collect()
        assert not collector.tick()  # nothing due
        _second_generation_passes(FULL_AFTER)
        collector.input_seen()
        assert not collector.tick()  # due, but a key is being answered
        _second_generation_passes(FORCED_AFTER - FULL_AFTER)
        collector.input_seen()
        assert collector.tick()  # overdue: runs even under keys
        assert gc.get_count()[2] == 0
    finally:
        collector.stop()
    assert gc.get_threshold() == before


def test_a_due_full_pass_runs_when_no_key_came() -> None:
    collector = IdleCollector()
    collector.start()
    try:
        gc.collect()
        _second_generation_passes(FULL_AFTER)
        assert collector.tick()
        assert gc.get_count()[2] == 0
    finally:
        collector.stop()
    assert not collector.tick()  # stopped: CPython's own thresholds again
