"""Verdicts that never mislead: nothing loaded or not serving is never a success; calls in
flight, paused or aborted are said in the header, the ``a`` verdict and the quit verdict; every
run that bound a session is covered, followed on request and judged on its own line."""

from __future__ import annotations

import asyncio
import shutil
import socket
from pathlib import Path

import openai
import pytest
from dsh_replay_tui.app import AppOptions, ReplayApp
from dsh_replay_tui.screens.verdict import VerdictScreen

from tests.app.apptools import client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
HANG = SAMPLES / "hang-ready-file"


def header(app: ReplayApp) -> str:
    return str(app.header.render())


def rows(app: ReplayApp) -> list[str]:
    view = app.scripts_view
    return [view.row_text(i).plain for i in range(view.row_count)]


def run_client(app: ReplayApp, run: str, session: str) -> openai.AsyncOpenAI:
    """The openai SDK on the ``/runs/RUN/`` routes of the app's server."""
    assert app.url is not None
    return openai.AsyncOpenAI(base_url=f"{app.url}/runs/{run}/v1", api_key="replay",
                              default_headers={"X-Session-Id": session}, max_retries=0)


# -- nothing served ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["bad-json-line", "missing", "a-file"])
async def test_a_scenario_that_never_loaded_is_never_a_success(where: str, tmp_path: Path) -> None:
    scenario = {"bad-json-line": SAMPLES / "broken-json-line", "missing": tmp_path / "nope",
                "a-file": BASIC / "session.jsonl"}[where]
    app = make_app(scenario)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await until(app, lambda: "nothing loaded" in header(app), "the header")
        assert "consumed ✓" not in header(app)
        if where == "a-file":  # reloading cannot help: the banner says what to run instead
            assert "press l" not in app.banner.whole.plain
            assert f"dsh-replay-tui {BASIC}" in app.banner.whole.plain
        else:
            assert "press l" in app.banner.whole.plain
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen) and not screen.ok
        assert "nothing served — the scenario never loaded" in screen.text
        await pilot.press("escape", "q")
    assert app.return_code == 1
    assert app.return_value is not None
    assert app.return_value.startswith("replay NOT served: the scenario never loaded [")
    assert "replay consumed" not in app.return_value


async def test_a_busy_port_and_a_bad_path_both_show_and_exit_4(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = ReplayApp(AppOptions(scenario=tmp_path / "nope", port=port, watch=False))
        async with app.run_test(size=(160, 40)) as pilot:
            await app.ready.wait()
            banner = app.banner.whole.plain
            assert f"Cannot serve on 127.0.0.1:{port}" in banner and "exits 4" in banner
            assert "Cannot load the scenario" in banner and "no such scenario directory" in banner
            await pilot.press("q")
    assert app.return_code == 4
    assert app.return_value is not None
    lines = app.return_value.splitlines()
    assert lines[0].startswith(f"replay NOT served: cannot listen on 127.0.0.1:{port}")
    assert lines[1].startswith("replay NOT served: the scenario never loaded")


async def test_a_busy_port_alone_exits_4_not_3() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = ReplayApp(AppOptions(scenario=BASIC, port=port, watch=False))
        async with app.run_test(size=(160, 40)) as pilot:
            await app.ready.wait()
            assert app.scenario is not None and app.url is None
            # The header's state says so (it read "waiting for the agent": no agent can come).
            await until(app, lambda: header(app).startswith("not serving"), "the header")
            assert "waiting for the agent" not in header(app)
            await pilot.press("q")
    assert app.return_code == 4
    assert app.return_value is not None and len(app.return_value.splitlines()) == 1
    assert app.return_value.startswith(f"replay NOT served: cannot listen on 127.0.0.1:{port} (")


async def test_a_good_load_clears_only_its_own_banner_section(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        root = tmp_path / "later"
        app = ReplayApp(AppOptions(scenario=root, port=port, watch=False))
        async with app.run_test(size=(160, 40)) as pilot:
            await app.ready.wait()
            shutil.copytree(BASIC, root)
            await pilot.press("l")
            await until(app, lambda: app.scenario is not None, "the load")
            banner = app.banner.whole.plain
            assert app.banner.showing and "Cannot serve" in banner
            assert "Cannot load" not in banner


# -- in flight, paused, aborted ------------------------------------------------------------


async def test_a_last_call_paused_before_its_first_chunk_is_not_consumed_check_mark() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        await stream_text(sdk)
        await pilot.press("2")
        held = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "PAUSED 1" in header(app), "the pause")
        # docs/format.md#binding: the cursor advanced at call time, so the run is consumed ...
        assert app.engine.consumed_problems() == []
        # ... but the header does not call it done.
        assert "consumed ✓" not in header(app)
        assert "not consumed (1 paused)" in header(app)
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen) and not screen.ok
        assert "session s: call #1 of script 0 (turn/step 1/2) is paused before chunk 0 (still " \
            "in flight)" in screen.text
        await pilot.press("escape")
        await pilot.press("q")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(held, 10)
        await sdk.close()
    assert app.return_code == 3  # a call still in flight is not a replay that finished
    assert app.return_value.splitlines()[:2] == [
        "replay NOT consumed (run default):",
        "  - session s: call #1 of script 0 (turn/step 1/2) is paused before chunk 0 (still in "
        "flight)"]


async def test_an_aborted_chunks_call_is_marked_and_said() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        await stream_text(sdk)
        await pilot.press("3")  # hold every chunk
        held = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "PAUSED 1" in header(app), "the pause")
        await pilot.press("n")
        await until(app, lambda: app.engine.state().bindings[0].chunks_served == 1
                    and app.engine.state().bindings[0].status == "paused", "one chunk out")
        await pilot.press("x")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(held, 10)
        await until(app, lambda: "aborted" in header(app), "the header")
        assert "not consumed (1 aborted)" in header(app) and "consumed ✓" not in header(app)
        # The aborted call's row is not marked served; the first call's is.
        assert rows(app)[1].startswith("  ✓≠#0")
        assert rows(app)[2].startswith("  ✗≠#1"), rows(app)
        assert "aborted #1" in app.live_pane.sessions[0]
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen)
        assert "session s: call #1 of script 0 (turn/step 1/2) ended after 1 of its 6 chunk(s): " \
            "cancelled by the user" in screen.text
        await pilot.press("escape", "q")
        await sdk.close()
    assert app.return_code == 3
    assert app.return_value.splitlines()[:2] == [
        "replay NOT consumed (run default):",
        "  - session s: call #1 of script 0 (turn/step 1/2) ended after 1 of its 6 chunk(s): "
        "cancelled by the user"]


async def test_a_cancelled_hang_is_its_normal_end(tmp_path: Path) -> None:
    app = make_app(HANG, ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "h")
        await stream_text(sdk)
        hanging = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "HANGING 1" in header(app), "the hang")
        assert "not consumed (1 hanging)" in header(app)
        await pilot.press("x")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(hanging, 10)
        await until(app, lambda: "consumed ✓" in header(app), "consumed")
        await pilot.press("q")
        await sdk.close()
    assert app.return_code == 0
    assert app.return_value.splitlines()[0] == "replay consumed (run default)"


# -- runs ----------------------------------------------------------------------------------


async def test_every_run_is_listed_followed_on_request_and_judged(tmp_path: Path) -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        t1 = run_client(app, "t1", "agent-t1")
        await stream_text(t1)
        # Only run t1 bound a session: the screen follows it until the user picks a run.
        await until(app, lambda: app.run_name == "t1", "following t1")
        await until(app, lambda: "run t1 (2 of 2 runs, r: next)" in header(app), "the header")
        assert any("following run t1" in line for line in app.live_pane.lines)
        default = client(app, "agent-d")
        await stream_text(default)
        await stream_text(default)
        await until(app, lambda: len(app.live_pane.sessions) == 2, "both sessions in Live")
        # The followed run's sessions first; a run column once another run is listed.
        assert app.live_pane.sessions[0].split()[:2] == ["t1", "agent-t1"]
        assert app.live_pane.sessions[1].split()[:2] == ["default", "agent-d"]
        assert "not consumed  bound 1/1" in header(app)
        await pilot.press("r")
        await until(app, lambda: "run default (1 of 2 runs, r: next)" in header(app), "switch")
        assert app.run_name == "default" and "consumed ✓" in header(app)
        # The palette offers every run.
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Next run (r)" in titles and "Follow run t1" in titles
        [follow_t1] = [c for c in app.get_system_commands(app.screen) if c.title == "Follow run t1"]
        follow_t1.callback()
        await until(app, lambda: app.run_name == "t1", "the palette switch")
        await pilot.press("q")
        await t1.close()
        await default.close()
    assert app.return_code == 3
    lines = app.return_value.splitlines()
    assert [line for line in lines if not line.startswith("  first divergence")] == [
        "replay consumed (run default)", "replay NOT consumed (run t1):",
        "  - session agent-t1 consumed 1/2 recorded call(s)"]


async def test_cancel_hangs_covers_every_run(tmp_path: Path) -> None:
    app = make_app(HANG, ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdks = [client(app, "h"), run_client(app, "t2", "h")]
        for sdk in sdks:
            await stream_text(sdk)
        hangs = [asyncio.create_task(stream_text(sdk)) for sdk in sdks]
        await until(app, lambda: sum(b.status == "hanging" for r in app.engine.bound_runs()
                                     for b in app.engine.state(r).bindings) == 2, "both hangs")
        await pilot.press("X")
        for hang in hangs:
            with pytest.raises(openai.APIError):
                await asyncio.wait_for(hang, 10)
        for sdk in sdks:
            await sdk.close()
        await pilot.press("q")
    assert app.return_code == 0
    assert [line for line in app.return_value.splitlines() if not line.startswith("  first")] \
        == ["replay consumed (run default)", "replay consumed (run t2)"]


async def test_next_run_with_a_single_run_says_how_to_get_another() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("r")
        assert app.run_name == "default"
        await pilot.pause()
        assert any("/runs/NAME/" in n.message for n in app._notifications)


# -- ready files and a scenario that appears later -----------------------------------------


async def test_ready_files_go_to_a_session_temp_dir_removed_on_quit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(HANG)  # no --ready-dir
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        own = app.state.own_ready_dir
        assert own is not None and own.is_dir() and app.engine.ready_dir == own
        await until(app, lambda: any(f"hang readyFiles are created in {own}" in line
                                     for line in app.live_pane.lines), "the note in Live")
        sdk = client(app, "h")
        await stream_text(sdk)
        hanging = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "HANGING 1" in header(app), "the hang")
        marker = own / "hang-ready.marker"
        assert marker.is_file()
        assert str(marker) in app.live_pane.sessions[0]
        await pilot.press("q")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(hanging, 10)
        await sdk.close()
    assert not marker.exists() and not own.exists()
    assert list(tmp_path.iterdir()) == []  # nothing left where the debugger was started


async def test_only_markers_it_created_are_removed(tmp_path: Path) -> None:
    keep = tmp_path / "hang-ready.marker"
    keep.touch()  # a marker that was there before: not the debugger's to delete
    app = make_app(HANG, ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.state.own_ready_dir is None
        sdk = client(app, "h")
        await stream_text(sdk)
        hanging = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: "HANGING 1" in header(app), "the hang")
        await pilot.press("q")
        with pytest.raises(openai.APIError):
            await asyncio.wait_for(hanging, 10)
        await sdk.close()
    assert keep.exists()


async def test_a_scenario_directory_created_after_start_is_loaded(tmp_path: Path) -> None:
    root = tmp_path / "later" / "scenario"
    app = make_app(root, watch=True)
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        await app.awaiting_directory.wait()
        assert "press l" in app.banner.whole.plain
        shutil.copytree(BASIC, root)  # creates the parent too: the watch moves down to it
        await until(app, lambda: app.scenario is not None, "the load")
        assert not app.banner.showing
        assert any(line == f"{root} appeared" for line in app.live_pane.lines)
        await app.watching.wait()
        assert app.scripts_view.row_count == 3
