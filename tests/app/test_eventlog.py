"""Event-log lines: an SDK's retry is marked where the call starts or is refused."""

from __future__ import annotations

from dsh_replay_tui.headless.eventlog import format_event

from replay_engine import events as ev


def test_retried_requests_are_marked_in_the_event_log() -> None:
    first = format_event(ev.CallStarted("default", "a", 0, 1, 7, "chunks"), ["main"])
    again = format_event(ev.CallStarted("default", "a", 0, 2, 8, "chunks", retry=True), ["main"])
    refused = format_event(ev.BindingFailed("default", "a", "SCRIPT_EXHAUSTED", "script exhausted",
                                            retry=True), ["main"])
    assert first is not None and again is not None and refused is not None
    assert "retry" not in first.plain
    assert again.plain == "a call #2 started (chunks) — SDK retry"
    assert refused.plain.endswith("script exhausted — SDK retry")


def test_a_started_call_names_the_wire_it_arrived_on() -> None:
    over = format_event(ev.CallStarted("default", "a", 0, 1, 7, "chunks", dialect="anthropic"),
                        ["main"])
    in_process = format_event(ev.CallStarted("default", "a", 0, 1, 7, "hang"), ["main"])
    assert over is not None and in_process is not None
    assert over.plain == "a call #1 started (chunks, anthropic)"
    assert in_process.plain == "a call #1 started (hang)"


def test_a_full_journal_and_a_deleted_run_are_told_in_the_event_log() -> None:
    full = format_event(ev.JournalTrimmed("t1", 3), ["main"])
    gone = format_event(ev.RunForgotten("t1"), ["main"])
    assert full is not None and "journal full (3 calls)" in full.plain
    assert "oldest calls are dropped" in full.plain
    assert gone is not None and gone.plain.startswith("run t1 deleted")
