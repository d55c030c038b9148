"""docs/format.md#binding: binding live session keys to scripts, cursors, and assert_consumed."""

from __future__ import annotations

import pytest

from replay_engine import (
    BindingError,
    NotConsumedError,
    ReplayEngine,
    ScriptExhaustedError,
    UnrecordedSessionError,
)
from replay_engine import events as ev
from tests.unit.enginetools import Recorder, collect, scripts, text_entry

pytestmark = pytest.mark.anyio


async def test_first_calls_claim_scripts_in_order() -> None:
    engine = ReplayEngine(scripts([text_entry("p")], [text_entry("c1")], [text_entry("c2")]))
    rec = Recorder(engine)
    assert (await collect(engine, "parent"))[0]["text"] == "p"
    assert (await collect(engine, None))[0]["text"] == "c1"
    assert (await collect(engine, "x"))[0]["text"] == "c2"
    bound = [(e.session, e.script_index) for e in rec.events if isinstance(e, ev.SessionBound)]
    assert bound == [("parent", 0), (None, 1), ("x", 2)]
    # The event says how each session was bound, as the journal's boundBy does.
    rules = [e.rule for e in rec.events if isinstance(e, ev.SessionBound)]
    assert rules == [r.bound_by for r in engine.journal()] == ["order", "order", "order"]


async def test_each_key_advances_its_own_cursor() -> None:
    engine = ReplayEngine(scripts([text_entry("a0"), text_entry("a1")], [text_entry("b0"), text_entry("b1")]))
    order = [("a", "a0"), ("b", "b0"), ("b", "b1"), ("a", "a1")]
    for key, expected in order:
        assert (await collect(engine, key))[0]["text"] == expected
    engine.assert_consumed()
    assert engine.consumed_problems() == []


async def test_cursor_advances_at_call_time() -> None:
    engine = ReplayEngine(scripts([text_entry("one"), text_entry("two")]))
    first = engine.open_call("k")
    second = engine.open_call("k")
    assert (first.call_index, second.call_index) == (0, 1)
    assert (await _drain(second))[0]["text"] == "two"
    assert (await _drain(first))[0]["text"] == "one"


async def _drain(handle: object) -> list[dict]:
    return [c async for c in handle.chunks()]  # type: ignore[attr-defined]


async def test_unrecorded_session_error_claims_nothing() -> None:
    engine = ReplayEngine(scripts([text_entry("a")], [text_entry("b")]))
    rec = Recorder(engine)
    await collect(engine, "one")
    await collect(engine, "two")
    with pytest.raises(UnrecordedSessionError) as caught:
        engine.open_call("three")
    err = caught.value
    assert err.code == "UNRECORDED_SESSION"
    assert isinstance(err, BindingError)
    assert err.message.startswith(
        "a model call arrived from an unrecorded session (#3); the scenario recorded only 2 session(s)")
    # the 0-based index beside the count of docs/format.md#binding, as the debugger numbers sessions
    assert "counting from 0 as the debugger does: session #2, past scripts #0 to #1]" in err.message
    assert "session three" in err.message
    assert [b.session for b in engine.state().bindings] == ["one", "two"]
    failed = [e for e in rec.events if isinstance(e, ev.BindingFailed)]
    assert [(e.session, e.code) for e in failed] == [("three", "UNRECORDED_SESSION")]
    with pytest.raises(UnrecordedSessionError) as again:
        engine.open_call("four")
    assert "(#3)" in again.value.message


async def test_unrecorded_anonymous_session() -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))
    await collect(engine, "named")
    with pytest.raises(UnrecordedSessionError) as caught:
        engine.open_call(None)
    assert "the anonymous session" in caught.value.message
    assert "recorded only 1 session(s)" in caught.value.message


async def test_no_scripts_at_all() -> None:
    engine = ReplayEngine([])
    with pytest.raises(UnrecordedSessionError) as caught:
        engine.open_call(None)
    assert "(#1); the scenario recorded only 0 session(s) [" in caught.value.message
    assert "session #0, past no script]" in caught.value.message
    # the binding check alone (docs/format.md#binding) knows nothing of refusals
    assert engine.consumed_problems() == []
    with pytest.raises(NotConsumedError, match="refused with UNRECORDED_SESSION"):
        engine.assert_consumed()
    [refused] = engine.journal()
    assert (refused.outcome, refused.code, refused.script_index) == \
        ("refused", "UNRECORDED_SESSION", None)


@pytest.mark.parametrize(("length", "calls"), [(0, 1), (1, 2), (2, 3)])
async def test_script_exhausted(length: int, calls: int) -> None:
    engine = ReplayEngine(scripts([text_entry(str(i)) for i in range(length)]))
    for _ in range(calls - 1):
        await collect(engine, "k")
    with pytest.raises(ScriptExhaustedError) as caught:
        engine.open_call("k")
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    assert caught.value.message.startswith(
        f"script exhausted — session requested model call #{calls} but its script has only {length}")
    # the 0-based index beside the count of docs/format.md#binding, as the debugger numbers calls
    assert f"counting from 0 as the debugger does: call #{calls - 1}, past " in caught.value.message
    with pytest.raises(ScriptExhaustedError) as again:
        engine.open_call("k")
    assert f"model call #{calls} " in again.value.message


@pytest.mark.parametrize(
    ("calls", "problems"),
    [
        ([], ["3 recorded script(s) never bound to a live session"]),
        (["x"], ["2 recorded script(s) never bound to a live session",
                 "session x consumed 1/2 recorded call(s)"]),
        ([None, "y"], ["1 recorded script(s) never bound to a live session",
                       "the anonymous session consumed 1/2 recorded call(s)"]),
        (["x", "y", "z"], ["session x consumed 1/2 recorded call(s)"]),
        (["x", "x", "y", "z"], []),
    ],
    ids=["nothing", "partial", "anonymous", "one-call-left", "all"],
)
async def test_assert_consumed_lists_every_problem(calls: list[str | None], problems: list[str]) -> None:
    engine = ReplayEngine(scripts([text_entry("a"), text_entry("b")], [text_entry("c")], [text_entry("d")]))
    for key in calls:
        await collect(engine, key)
    assert engine.consumed_problems() == problems
    assert engine.state().consumed is (not problems)
    if not problems:
        engine.assert_consumed()
        return
    with pytest.raises(NotConsumedError) as caught:
        engine.assert_consumed()
    assert caught.value.problems == problems
    assert caught.value.code == "NOT_CONSUMED"
    assert caught.value.message == "replay not consumed: " + "; ".join(problems)


async def test_consumed_counts_calls_at_bind_time_even_if_failed() -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))
    handle = engine.open_call(None)
    assert engine.consumed_problems() == []
    handle.cancel()
    assert [c async for c in _safe(handle)] == []


async def _safe(handle: object):  # type: ignore[no-untyped-def]
    try:
        async for chunk in handle.chunks():  # type: ignore[attr-defined]
            yield chunk
    except Exception:  # noqa: BLE001 - the aborted call is the point
        return
