"""The debugger driving a real openai client against its embedded server: cursors, the step
gate, breakpoints, cancel, reset, assert-consumed and the quit verdict."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
import pytest
from dsh_replay_tui.screens.dialect_choice import DialectChoiceScreen
from dsh_replay_tui.screens.verdict import VerdictScreen
from dsh_replay_tui.widgets.chunk_list import ChunkList

from tests.app.apptools import BASIC_PROMPT, BASIC_TOOL_TURN, client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
ANSWER = "The workspace has README.md and src. Hello!"


def rows(app: object) -> list[str]:
    view = app.scripts_view  # type: ignore[attr-defined]
    return [view.row_text(i).plain for i in range(view.row_count)]


def header(app: object) -> str:
    return str(app.header.render())  # type: ignore[attr-defined]


async def test_cursor_moves_on_each_served_call_and_the_header_says_consumed() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert "waiting for the agent" in header(app) and "bound 0/1" in header(app)
        sdk = client(app, "agent-1")
        await stream_text(sdk, BASIC_PROMPT)  # the recorded conversation: no ≠ anywhere
        await until(app, lambda: "bound 1/1" in header(app), "the binding")
        await until(app, lambda: rows(app)[1].startswith("  ✓ #0"), "call 0 served")
        assert rows(app)[2].startswith(" ›  #1"), rows(app)
        assert "← agent-1 1/2 idle" in rows(app)[0]
        assert app.live_pane.sessions[0].split() == ["agent-1", "1/2", "idle", "[0]",
                                                     "sample-basic-chat", "by", "order"]
        assert await stream_text(sdk, BASIC_TOOL_TURN) == ANSWER
        await until(app, lambda: "consumed ✓" in header(app), "consumed")
        assert rows(app)[2].startswith("  ✓ #1") and "diverged" not in header(app)
        assert any("agent-1 call #1 finished" in line for line in app.live_pane.lines)
        await sdk.close()
        await pilot.press("q")
    assert app.return_code == 0
    assert app.return_value == "replay consumed (run default)"


async def test_break_at_every_call_holds_the_client_until_a_key_is_pressed() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("2")
        assert app.engine.mode == "call"
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the call to pause")
        assert "PAUSED 1" in header(app)
        assert not reader.done()
        assert app.engine.state().bindings[0].chunks_served == 0
        await pilot.press("n")  # one chunk, then held again
        await until(app, lambda: any("paused before chunk 1" in x for x in app.live_pane.lines))
        assert not reader.done()
        await pilot.press("e")  # run to the end of the call
        assert await asyncio.wait_for(reader, 10) == ""  # call 0 is a tool call: no text
        assert app.engine.journal()[0].outcome == "finished"
        # The next call pauses too (mode call); continue releases it and the mode goes back to run.
        second = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the second pause")
        await pilot.press("c")
        assert await asyncio.wait_for(second, 10) == ANSWER
        assert app.engine.mode == "run"
        await sdk.close()


async def test_break_at_every_chunk_steps_one_chunk_per_key() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("3")
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk))
        for served in range(3):
            await until(app, lambda s=served: app.engine.state().bindings
                        and app.engine.state().bindings[0].status == "paused"
                        and app.engine.state().bindings[0].chunks_served == s,
                        f"pause after {served}")
            await pilot.press("n")
        await until(app, lambda: app.engine.state().bindings[0].chunks_served == 3
                    and app.engine.state().bindings[0].status == "paused", "the third pause")
        assert not reader.done()
        # Stepping shows the stepped call's chunks, the chunk served last highlighted.
        assert app.scripts_view.selected() == (0, 0) and app.call_pane.active == "chunks"
        chunks = app.call_pane.query_one(ChunkList)
        assert chunks.row_count == 10 and chunks.highlight == 2
        await pilot.press("n")
        await until(app, lambda: chunks.highlight == 3, "the highlight to follow")
        await pilot.press("1")  # run mode releases everything
        await asyncio.wait_for(reader, 10)
        assert app.engine.journal()[0].chunks_served == 10
        await sdk.close()


async def test_breakpoint_on_a_call_pauses_only_that_call() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("down", "down", "b")  # header, #0, #1: breakpoint on call 1
        assert app.engine.breakpoints == frozenset({(0, 1)})
        await until(app, lambda: rows(app)[2].startswith("●"), "the breakpoint marker")
        sdk = client(app, "s")
        await stream_text(sdk)  # call 0 runs through
        second = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the breakpoint")
        assert not second.done()
        await pilot.press("c")
        assert await asyncio.wait_for(second, 10) == ANSWER
        await pilot.press("b")
        assert app.engine.breakpoints == frozenset()
        await sdk.close()


async def test_cancel_of_a_hang_ends_the_clients_stream_with_aborted(tmp_path: Path) -> None:
    app = make_app(SAMPLES / "hang-ready-file", ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "h")
        assert await stream_text(sdk) == "Ready."
        hanging = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "HANGING 1" in header(app), "the hang")
        assert (tmp_path / "hang-ready.marker").exists()
        assert any("HANGING until cancelled, readyFile" in x for x in app.live_pane.lines)
        assert "HANGING #1" in app.live_pane.sessions[0]
        assert "readyFile" in app.live_pane.sessions[0]
        await pilot.press("x")
        with pytest.raises(openai.APIError) as caught:
            await asyncio.wait_for(hanging, 10)
        assert caught.value.body == {"message": "aborted", "code": "ABORTED"}
        await until(app, lambda: any("call #1 cancelled (ABORTED)" in x for x in app.live_pane.lines))
        await sdk.close()


async def test_cancel_of_a_paused_stream_aborts_it() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("2")
        sdk = client(app, "s")
        held = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the pause")
        await pilot.press("x")
        with pytest.raises(openai.APIError) as caught:
            await asyncio.wait_for(held, 10)
        assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "ABORTED"
        assert app.engine.journal()[0].outcome == "cancelled"
        await sdk.close()


async def test_cancel_all_hanging(tmp_path: Path) -> None:
    app = make_app(SAMPLES / "hang-ready-file", ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "h")
        await stream_text(sdk)
        hanging = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "HANGING 1" in header(app), "the hang")
        await pilot.press("X")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(hanging, 10)
        await sdk.close()


async def test_reset_forgets_bindings_so_the_agent_can_start_again() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        first = client(app, "before")
        await stream_text(first)
        await until(app, lambda: "bound 1/1" in header(app))
        await pilot.press("R")
        await until(app, lambda: "bound 0/1" in header(app), "the reset")
        assert app.live_pane.sessions == []
        assert any("reset" in line for line in app.live_pane.lines)
        again = client(app, "after")
        await stream_text(again)
        await until(app, lambda: "← after 1/2" in rows(app)[0], "the new binding")
        await first.close()
        await again.close()


async def test_assert_consumed_lists_every_problem_then_passes() -> None:
    app = make_app(SAMPLES / "nested-subagents")
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "parent")
        await stream_text(sdk)
        await until(app, lambda: "bound 1/3" in header(app))
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen)
        assert screen.problems == app.engine.consumed_problems()
        assert "2 recorded script(s) never bound to a live session" in screen.problems
        assert any("session parent consumed 1/" in p for p in screen.problems)
        await pilot.press("escape")
        assert not isinstance(app.screen, VerdictScreen)
        await sdk.close()
        await pilot.press("q")
    assert app.return_code == 3
    assert app.return_value is not None and app.return_value.startswith("replay NOT consumed")


async def test_pace_keys_change_the_engine_pace() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("minus", "minus")
        assert app.engine.pace.ms == 20
        await until(app, lambda: "pace 20ms" in header(app))
        await pilot.press("plus")
        assert app.engine.pace.ms == 5
        await pilot.press("t")
        assert app.engine.pace.mode == "recorded"
        await until(app, lambda: "pace recorded gaps x1" in header(app))


async def test_demo_agent_drives_every_call() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the dialect chooser")
        await pilot.press("enter")  # the highlighted default: openai chat completions
        await until(app, lambda: any(x.startswith("demo agent (openai) done")
                                     for x in app.live_pane.lines), "the demo agent")
        assert "demo agent (openai) done (consumed: True)" in app.live_pane.lines
        # The demo's own lines and the engine's events share one log, in the order they happened.
        lines = app.live_pane.lines
        last_finished = max(i for i, x in enumerate(lines) if " call #1 finished" in x)
        assert last_finished < lines.index("demo agent (openai) done (consumed: True)")
        assert lines.index("demo agent (openai) started against " + app.url_label) < min(
            i for i, x in enumerate(lines) if x.startswith("bound "))
        await until(app, lambda: "consumed ✓" in header(app))


async def test_recorded_pace_of_a_projected_log_says_it_has_no_gaps(tmp_path: Path) -> None:
    """A projected log leaves chunk times out: the pace label must not pretend to replay gaps."""
    import json

    scenario = tmp_path / "projected"
    scenario.mkdir()
    text = (BASIC / "session.jsonl").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    out = [lines[0]]
    for line in lines[1:]:
        event = json.loads(line)
        for key in ("seq", "time", "seq0", "time0"):
            event.pop(key, None)
        out.append(json.dumps(event))
    (scenario / "session.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    app = make_app(scenario, serve=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await app.ready.wait()
        assert app.scenario is not None and app.scenario.scripts[0].untimed > 0
        await pilot.press("t")
        await until(app, lambda: "session.jsonl: no recorded times, so no gaps" in header(app))
        await pilot.press("t")
        await until(app, lambda: "no recorded times" not in header(app))
    plain = make_app(BASIC, serve=False)
    async with plain.run_test(size=(200, 40)) as pilot:
        await plain.ready.wait()
        await pilot.press("t")
        await until(plain, lambda: "pace recorded gaps x1" in header(plain))
        assert "no recorded times" not in header(plain)


def test_a_long_state_is_cut_so_the_script_column_stays_in_line() -> None:
    # "streaming #1 2ch aborted #0" pushed the script one column per extra character right of
    # the header's "script" (seen at 80x24 after x on a paused call, as the agent went on).
    from dsh_replay_tui.widgets.live_pane import SessionList, session_detail, session_row

    from replay_engine import BindingState

    long = BindingState("demo-0", 0, 2, 2, "streaming", 1, 2, None, aborted=(0,))
    short = BindingState("demo-1", 0, 2, 2, "idle", None, 0, None)
    sessions = SessionList()
    sessions.rows = [(short, "")]
    header = sessions.row_text(0).plain
    for b in (long, short):
        row = session_row(b, ["sample-basic-chat"])
        assert row.index("[0] sample-basic-chat") == header.index("script")
    assert "streaming #1 2ch abor…" in session_row(long, ["sample-basic-chat"])
    assert "aborted    #0" in session_detail(long)  # Enter still shows it whole


async def test_enter_in_the_sessions_opens_the_first_session_not_the_column_header() -> None:
    # ← from the event log landed on the column header: Enter there opened nothing.
    from dsh_replay_tui.screens.detail import DetailScreen

    app = make_app(SAMPLES / "basic-chat")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s1")
        await stream_text(sdk, BASIC_PROMPT)
        await until(app, lambda: bool(app.live_pane.sessions), "the session")
        await pilot.press("f4", "left")
        sessions = app.live_pane.session_list
        assert app.focused is sessions and sessions.cursor == 1
        await pilot.press("home", "enter")
        assert isinstance(app.screen, DetailScreen) and app.screen.title_text == "Session s1"
        await sdk.close()
