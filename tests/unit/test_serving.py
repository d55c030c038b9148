"""docs/format.md#serving-entries: serving chunks, throws and hangs; cancellation and pacing (real engine,
real files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from replay_engine import (
    AbortedError,
    InputError,
    Pace,
    ReplayEngine,
    ScriptedFailure,
    load_scenario,
)
from replay_engine import events as ev
from replay_engine.engine import HANG_PREFIX
from tests.conftest import SAMPLES
from tests.unit.enginetools import (
    FIN,
    Recorder,
    collect,
    hang_entry,
    scripts,
    text_entry,
    throw_entry,
)

pytestmark = pytest.mark.anyio
LIMIT = 10  # seconds: a bound on waits for events, never a timing assertion


async def test_chunks_served_in_order_as_the_same_objects() -> None:
    entry = text_entry("a", "b")
    engine = ReplayEngine(scripts([entry]))
    got = await collect(engine, None)
    assert got == entry.chunks
    assert all(x is y for x, y in zip(got, entry.chunks, strict=True))


async def test_lossless_sample_chunks() -> None:
    scenario = load_scenario(SAMPLES / "basic-chat")
    engine = ReplayEngine(scenario.scripts)
    first = await collect(engine, "s")
    second = await collect(engine, "s")
    assert first == scenario.scripts[0].entries[0].entry.chunks  # type: ignore[union-attr]
    assert second[-1] == {"type": "finish", "reason": {"kind": "stop"},
                          "replayState": {"note": "kept losslessly"}}


async def test_throw_serves_prefix_then_fails_with_code() -> None:
    engine = ReplayEngine(scripts([throw_entry("rate limited", "RATE_LIMIT", ["x", "y"])]))
    rec = Recorder(engine)
    got: list[dict[str, Any]] = []
    with pytest.raises(ScriptedFailure) as caught:
        async for chunk in engine.stream("k"):
            got.append(chunk)
    assert [c["text"] for c in got] == ["x", "y"]
    assert (caught.value.code, caught.value.message) == ("RATE_LIMIT", "rate limited")
    failed = [e for e in rec.events if isinstance(e, ev.CallFailed)]
    assert [(e.code, e.message) for e in failed] == [("RATE_LIMIT", "rate limited")]
    assert engine.journal()[0].outcome == "failed"
    assert engine.journal()[0].chunks_served == 2


async def test_throw_without_prefix() -> None:
    engine = ReplayEngine(scripts([throw_entry("denied", "AUTH")]))
    with pytest.raises(ScriptedFailure) as caught:
        await collect(engine, None)
    assert caught.value.code == "AUTH"


async def test_hang_prefix_ready_file_then_cancel(tmp_path: Path) -> None:
    engine = ReplayEngine(scripts([hang_entry("markers/ready")]), ready_dir=tmp_path)
    rec = Recorder(engine)
    got: list[dict[str, Any]] = []
    outcome: list[BaseException] = []

    async def consume() -> None:
        try:
            async for chunk in engine.stream("h"):
                got.append(chunk)
        except AbortedError as exc:
            outcome.append(exc)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            waiting = await rec.wait_for(ev.HangWaiting)
            marker = tmp_path / "markers" / "ready"
            assert marker.is_file() and marker.stat().st_size == 0
            assert waiting.ready_file == str(marker)  # type: ignore[attr-defined]
            assert got == list(HANG_PREFIX)
            assert engine.state().bindings[0].status == "hanging"
            assert engine.cancel("h") == 1
    assert len(outcome) == 1 and outcome[0].code == "ABORTED"  # type: ignore[attr-defined]
    assert rec.kinds()[-1] == "CallCancelled"
    assert engine.journal()[0].outcome == "cancelled"


async def test_hang_from_sample_and_cancel_all_hanging(tmp_path: Path) -> None:
    scenario = load_scenario(SAMPLES / "hang-ready-file")
    engine = ReplayEngine(scenario.scripts, ready_dir=tmp_path)
    rec = Recorder(engine)
    assert (await collect(engine, "s"))[1]["text"] == "Ready."
    errors: list[str] = []

    async def consume() -> None:
        with pytest.raises(AbortedError) as caught:
            await collect(engine, "s")
        errors.append(caught.value.code)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await rec.wait_for(ev.HangWaiting)
            assert (tmp_path / "hang-ready.marker").exists()
            assert engine.cancel(all_hanging=True) == 1
    assert errors == ["ABORTED"]
    engine.assert_consumed()


async def test_ready_file_that_is_not_empty_fails_the_call(tmp_path: Path) -> None:
    (tmp_path / "ready").write_text("stale")
    engine = ReplayEngine(scripts([hang_entry("ready")]), ready_dir=tmp_path)
    with anyio.fail_after(LIMIT), pytest.raises(InputError) as caught:
        await collect(engine, None)
    assert caught.value.code == "READY_FILE"
    assert str(tmp_path / "ready") in caught.value.message


@pytest.mark.parametrize("make", [lambda: hang_entry("ready"), lambda: text_entry("a"),
                                  lambda: throw_entry(prefix=["p"])], ids=["hang", "chunks", "throw"])
async def test_already_cancelled_call_fails_before_any_chunk(make: Any, tmp_path: Path) -> None:
    engine = ReplayEngine(scripts([make()]), ready_dir=tmp_path)
    handle = engine.open_call(None)
    handle.cancel()
    got: list[dict[str, Any]] = []
    with anyio.fail_after(LIMIT), pytest.raises(AbortedError):
        async for chunk in handle.chunks():
            got.append(chunk)
    assert got == []
    assert not (tmp_path / "ready").exists()


async def test_cancel_between_chunks() -> None:
    engine = ReplayEngine(scripts([text_entry("a", "b", "c")]))
    handle = engine.open_call("k")
    got: list[dict[str, Any]] = []
    with pytest.raises(AbortedError):
        async for chunk in handle.chunks():
            got.append(chunk)
            handle.cancel()
    assert got == [{"type": "text-delta", "index": 0, "text": "a"}]


@pytest.mark.parametrize("value", [-1, 1.5, True, "5"])
def test_invalid_pace_is_config_error(value: Any) -> None:
    with pytest.raises(InputError) as caught:
        ReplayEngine([], value)
    assert caught.value.code == "CONFIG"
    assert "paceMs must be a non-negative integer" in caught.value.message


async def test_pace_keeps_order() -> None:
    entry = text_entry("a", "b", "c")
    engine = ReplayEngine(scripts([entry]), pace_ms=1)
    rec = Recorder(engine)
    assert await collect(engine, None) == entry.chunks
    served = [e.chunk_index for e in rec.events if isinstance(e, ev.ChunkServed)]
    assert served == [0, 1, 2, 3]


@pytest.mark.parametrize("pace", [Pace("fixed", 600_000), Pace("recorded", 600_000, 1.0)])
async def test_cancel_during_pace_wait_is_prompt(pace: Pace) -> None:
    engine = ReplayEngine(scripts([text_entry("a", "b")]), pace=pace)
    rec = Recorder(engine)
    errors: list[str] = []

    async def consume() -> None:
        with pytest.raises(AbortedError) as caught:
            await collect(engine, "k")
        errors.append(caught.value.code)

    # A 10-minute pace: this only finishes inside the bound if cancelling ends the wait.
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await rec.wait_for(ev.CallStarted)
            engine.cancel("k")
    assert errors == ["ABORTED"]
    assert not [e for e in rec.events if isinstance(e, ev.ChunkServed)]


async def test_observer_events_in_order() -> None:
    engine = ReplayEngine(scripts([text_entry("a"), throw_entry()]))
    rec = Recorder(engine)
    await collect(engine, "k")
    with pytest.raises(ScriptedFailure):
        await collect(engine, "k")
    assert rec.kinds() == ["SessionBound", "CallStarted", "ChunkServed", "ChunkServed", "CallFinished",
                           "CallStarted", "CallFailed"]
    started = [e for e in rec.events if isinstance(e, ev.CallStarted)]
    assert [(e.session, e.script_index, e.call_index, e.kind) for e in started] == [
        ("k", 0, 0, "chunks"), ("k", 0, 1, "throw")]
    finished = next(e for e in rec.events if isinstance(e, ev.CallFinished))
    assert finished.chunks == 2
    assert all(e.run == "default" for e in rec.events)


async def test_observer_error_does_not_break_stream(caplog: pytest.LogCaptureFixture) -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))

    def broken(event: ev.EngineEvent) -> None:
        raise RuntimeError("observer bug")

    engine.subscribe(broken)
    assert len(await collect(engine, None)) == 2
    assert "observer" in caplog.text


async def test_unsubscribe() -> None:
    engine = ReplayEngine(scripts([text_entry("a")], [text_entry("b")]))
    rec = Recorder(engine)
    await collect(engine, "one")
    seen = len(rec.events)
    rec.unsubscribe()
    await collect(engine, "two")
    assert len(rec.events) == seen


# --- the step gate --------------------------------------------------------------------------


async def test_chunk_mode_holds_each_chunk_until_step() -> None:
    engine = ReplayEngine(scripts([text_entry("a", "b")]))
    engine.set_mode("chunk")
    rec = Recorder(engine)
    got: list[dict[str, Any]] = []

    async def consume() -> None:
        async for chunk in engine.stream("k"):
            got.append(chunk)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            paused = await rec.wait_for(ev.CallPaused, 1)
            assert (paused.chunk_index, got) == (0, [])  # type: ignore[attr-defined]
            assert engine.paused_sessions() == ["k"]
            assert engine.state().bindings[0].status == "paused"
            for n in range(1, 3):
                assert engine.step("k", how="chunk")
                paused = await rec.wait_for(ev.CallPaused, n + 1)
                assert len(got) == n
                assert paused.chunk_index == n  # type: ignore[attr-defined]
            engine.step("k", how="call")
    assert got == text_entry("a", "b").chunks
    assert rec.kinds().count("CallResumed") == 3


async def test_call_mode_pauses_before_each_call_and_continue_releases() -> None:
    engine = ReplayEngine(scripts([text_entry("a"), text_entry("b")]))
    engine.set_mode("call")
    rec = Recorder(engine)
    got: list[list[dict[str, Any]]] = []

    async def consume() -> None:
        got.append(await collect(engine, "k"))
        got.append(await collect(engine, "k"))

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await rec.wait_for(ev.CallPaused, 1, call_index=0)
            engine.step("k", how="call")
            await rec.wait_for(ev.CallPaused, 1, call_index=1)
            assert len(got) == 1
            engine.step("k", how="continue")
    assert engine.mode == "run"
    assert [len(g) for g in got] == [2, 2]


async def test_breakpoint_holds_only_its_call() -> None:
    engine = ReplayEngine(scripts([text_entry("a"), text_entry("b")], [text_entry("c")]))
    assert engine.toggle_breakpoint(0, 1) is True
    rec = Recorder(engine)
    served: list[str] = []

    async def consume(key: str, calls: int) -> None:
        for _ in range(calls):
            served.extend(c.get("text", "") for c in await collect(engine, key))

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume, "p", 2)
            await rec.wait_for(ev.CallPaused, 1)
            assert served == ["a", ""]
            await consume("child", 1)  # other sessions are not held
            assert engine.breakpoints == frozenset({(0, 1)})
            engine.step("p", how="call")
    assert served == ["a", "", "c", "", "b", ""]
    assert engine.toggle_breakpoint(0, 1) is False


async def test_set_mode_run_releases_paused_calls() -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))
    engine.set_mode("chunk")
    rec = Recorder(engine)
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(collect, engine, None)
            await rec.wait_for(ev.CallPaused)
            engine.set_mode("run")
    assert rec.kinds()[-1] == "CallFinished"


async def test_step_and_pause_without_a_call() -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))
    assert engine.step("nobody") is False
    assert engine.pause("nobody") is False


# --- reload, reset, runs ------------------------------------------------------------------


async def test_reload_keeps_cursors_and_reports_changes() -> None:
    engine = ReplayEngine(scripts([text_entry("a0"), text_entry("a1")]))
    rec = Recorder(engine)
    await collect(engine, "k")
    changes = engine.reload(scripts([text_entry("a0"), text_entry("NEW"), text_entry("a2")]))
    assert changes == [{"script": 0, "added": 1, "removed": 0, "changed": 1}]
    assert isinstance(rec.events[-1], ev.ScriptsReloaded)
    assert (await collect(engine, "k"))[0]["text"] == "NEW"
    assert engine.consumed_problems() == ["session k consumed 2/3 recorded call(s)"]


async def test_reset_forgets_bindings_and_cancels_in_flight(tmp_path: Path) -> None:
    engine = ReplayEngine(scripts([text_entry("a"), hang_entry()]), ready_dir=tmp_path)
    rec = Recorder(engine)
    await collect(engine, "k")
    aborted: list[str] = []

    async def hang() -> None:
        with pytest.raises(AbortedError) as caught:
            await collect(engine, "k")
        aborted.append(caught.value.code)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await rec.wait_for(ev.HangWaiting)
            engine.reset()
    assert aborted == ["ABORTED"]
    assert "RunReset" in rec.kinds()
    assert engine.state().bindings == ()
    assert (await collect(engine, "other"))[0]["text"] == "a"


async def test_runs_are_isolated() -> None:
    engine = ReplayEngine(scripts([text_entry("a")]))
    assert (await collect(engine, "k", run="r1"))[0]["text"] == "a"
    assert (await collect(engine, "k", run="r2"))[0]["text"] == "a"
    engine.assert_consumed("r1")
    engine.assert_consumed("r2")
    assert engine.consumed_problems("r3") == ["1 recorded script(s) never bound to a live session"]
    engine.reset("r1")
    assert engine.state("r1").bindings == ()
    assert len(engine.state("r2").bindings) == 1
    assert {r.run for r in engine.journal("r2")} == {"r2"}
    assert set(engine.runs()) == {"r1", "r2"}  # asking about r3 did not create it


async def test_state_snapshot_json() -> None:
    engine = ReplayEngine(scripts([text_entry("a"), text_entry("b")]))
    await collect(engine, "k")
    state = engine.state().to_json()
    assert state["bindings"] == [{"sessionKey": "k", "scriptIndex": 0, "cursor": 1, "length": 2,
                                  "status": "idle", "callIndex": None, "chunksServed": 0,
                                  "readyFile": None, "diverged": [], "boundBy": "order",
                                  "unfinished": []}]
    assert (state["consumed"], state["mode"], state["scripts"]) == (False, "run", 1)
    record = engine.journal()[0].to_json()
    assert (record["outcome"], record["chunksServed"], record["sessionKey"]) == ("finished", 2, "k")


async def test_finish_chunk_with_fields_is_served_whole() -> None:
    entry = text_entry("a")
    entry.chunks[-1] = {**FIN, "replayState": {"x": 1}}
    engine = ReplayEngine(scripts([entry]))
    assert (await collect(engine, None))[-1]["replayState"] == {"x": 1}


async def test_step_on_a_running_call_does_not_turn_pacing_off() -> None:
    from anyio.lowlevel import checkpoint

    engine = ReplayEngine(scripts([text_entry("a", "b", "c")]), pace=Pace("fixed", 600_000))
    rec = Recorder(engine)
    got: list[dict[str, Any]] = []

    async def consume() -> None:
        with pytest.raises(AbortedError):
            async for chunk in engine.stream("k"):
                got.append(chunk)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await rec.wait_for(ev.CallStarted)
            await checkpoint()
            engine.step("k", how="call")  # ends the current pace wait only
            await rec.wait_for(ev.ChunkServed)
            await anyio.wait_all_tasks_blocked()
            assert len(got) == 1  # the next chunk waits for its own pace again
            engine.cancel("k")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("recorded", Pace("recorded", 0, 1.0)), ("recorded:2", Pace("recorded", 0, 2.0)),
     ("recorded:0.5", Pace("recorded", 0, 0.5))],
)
def test_pace_parse(text: str, expected: Pace) -> None:
    assert Pace.parse(text) == expected


@pytest.mark.parametrize("text", ["fixed", "recorded:0", "recorded:-1", "recorded:fast", ""])
def test_pace_parse_errors(text: str) -> None:
    with pytest.raises(InputError) as caught:
        Pace.parse(text)
    assert caught.value.code == "CONFIG"
    assert repr(text) in caught.value.message
