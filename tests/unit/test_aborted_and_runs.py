"""What the engine tells beyond the consumed check: calls aborted by ``cancel``, the runs that
bound a session, cancelling hangs of every run, and the ready files it created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from replay_engine import AbortedError, ReplayEngine
from replay_engine import events as ev
from tests.unit.enginetools import Recorder, collect, hang_entry, scripts, text_entry

pytestmark = pytest.mark.anyio
LIMIT = 10  # seconds: a bound on waits for events, never a timing assertion


async def test_a_chunks_call_cancelled_midway_is_aborted_but_still_consumed() -> None:
    engine = ReplayEngine(scripts([text_entry("a", "b", "c")]))
    handle = engine.open_call("k")
    got: list[dict[str, Any]] = []
    with pytest.raises(AbortedError):
        async for chunk in handle.chunks():
            got.append(chunk)
            assert engine.cancel("k") == 1
    assert len(got) == 1
    # docs/format.md#binding: the cursor advanced at call time, so the run is consumed ...
    assert engine.consumed_problems() == []
    # ... but the engine says the call was aborted before its last chunk.
    [binding] = engine.state().bindings
    assert binding.aborted == (0,)
    [record] = engine.journal()
    assert (record.outcome, record.aborted, record.chunks_served) == ("cancelled", True, 1)
    engine.reset()
    assert engine.state().bindings == ()


async def test_a_cancelled_hang_and_a_client_disconnect_are_not_aborted(tmp_path: Path) -> None:
    engine = ReplayEngine(scripts([hang_entry(), text_entry("a", "b")]), ready_dir=tmp_path)
    rec = Recorder(engine)

    async def hang() -> None:
        with pytest.raises(AbortedError):
            await collect(engine, "k")

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await rec.wait_for(ev.HangWaiting)
            assert engine.cancel("k") == 1
    # The second call ends because its client went away (the handle's cancel), not the user.
    handle = engine.open_call("k")
    with pytest.raises(AbortedError):
        async for _ in handle.chunks():
            handle.cancel()
    assert engine.state().bindings[0].aborted == ()
    assert [r.aborted for r in engine.journal()] == [False, False]


async def test_bound_runs_and_cancel_hanging_cover_every_run(tmp_path: Path) -> None:
    engine = ReplayEngine(scripts([hang_entry("ready.marker")]), ready_dir=tmp_path)
    engine.state("idle-run")  # seen but never bound
    rec = Recorder(engine)
    errors: list[str] = []

    async def hang(run: str) -> None:
        with pytest.raises(AbortedError) as caught:
            await collect(engine, "k", run=run)
        errors.append(run)
        assert caught.value.code == "ABORTED"

    marker = tmp_path / "ready.marker"
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hang, "t1")
            await rec.wait_for(ev.HangWaiting, 1)
            tg.start_soon(hang, "t2")
            await rec.wait_for(ev.HangWaiting, 2)
            assert engine.bound_runs() == ["t1", "t2"]
            assert engine.cancel_hanging() == 2
    assert sorted(errors) == ["t1", "t2"]
    # Both hangs touched the same marker; only the first created it.
    assert engine.created_ready_files == [marker]


async def test_a_ready_file_that_already_existed_is_not_listed_as_created(tmp_path: Path) -> None:
    (tmp_path / "ready.marker").touch()
    engine = ReplayEngine(scripts([hang_entry("ready.marker")]), ready_dir=tmp_path)
    rec = Recorder(engine)

    async def hang() -> None:
        with pytest.raises(AbortedError):
            await collect(engine, None)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await rec.wait_for(ev.HangWaiting)
            engine.cancel(all_hanging=True)
    assert engine.created_ready_files == []
