"""The recorded context of a call and its one-line diff against a live request."""

from __future__ import annotations

from replay_engine import (
    ContextItem,
    context_range,
    diff_context,
    diff_line,
    live_new_messages,
    load_scenario,
    recorded_context,
)
from tests.conftest import SAMPLES


def test_each_call_and_the_slot_after_the_last_have_their_recorded_messages() -> None:
    script = load_scenario(SAMPLES / "basic-chat").scripts[0]
    assert recorded_context(script, 0) == [
        ContextItem("user", "What files are in the workspace? Then say hello.")]
    assert recorded_context(script, 1) == [ContextItem("tool", "README.md\nsrc\n")]
    first, last = context_range(script, 2) or (0, 0)
    assert first == 21 and last > 21  # after the last call's events: only turn/end remains
    assert recorded_context(script, 2) == []


def test_sidecar_entries_have_no_recorded_context() -> None:
    scripts = load_scenario(SAMPLES / "hang-ready-file").scripts
    assert recorded_context(scripts[0], 0) is None


def test_the_diff_line_names_the_first_difference() -> None:
    recorded = [ContextItem("tool", "README.md\nsrc\n")]
    same = live_new_messages([{"role": "assistant", "content": "x"},
                              {"role": "tool", "content": "README.md src"}])
    assert diff_line(diff_context(same, recorded)) is None  # whitespace does not count
    changed = [ContextItem("tool", "README.md\nsetup.py")]
    assert diff_line(diff_context(changed, recorded)) == \
        'live tool "README.md setup.py" ≠ recorded tool "README.md src"'
    extra = [*same, ContextItem("user", "And now?")]
    assert diff_line(diff_context(extra, recorded)) == \
        'live user "And now?", which the recording does not have here'
    assert diff_line(diff_context([], recorded)) == \
        'recorded tool "README.md src", missing from the live request'
    long = [ContextItem("user", "word " * 40)]
    line = diff_line(diff_context(long, []), width=20)
    assert line == 'live user "word word word word…", which the recording does not have here'
