"""The override editor inside the real debugger: it decides the unfinished call of a scenario that
does not load, unsaved edits survive a quit or a reload until the user says otherwise, and a save
reloads the scenario exactly once (the watcher recognises the editor's own write)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.screens.override_confirm import ConfirmDiscardScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from textual.pilot import Pilot

from replay_engine import events as ev
from tests.app.apptools import LIMIT_S, client, copy_sample, make_app, stream_text, until
from tests.app.test_reload import write_atomic
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
SIDE = "replay.override.json"


async def settle(pilot: Pilot[Any], check: Callable[[], bool], what: str) -> None:
    """Let the app process messages until ``check()`` holds (bounded; screens change without an
    engine event, so there may be no repaint to wait for)."""
    try:
        with anyio.fail_after(LIMIT_S):
            while not check():
                await pilot.pause()
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def logged(app: ReplayApp, needle: str) -> list[str]:
    return [line for line in app.live_pane.lines if needle in line]


async def open_editor(pilot: Pilot[Any], app: ReplayApp) -> OverrideEditorScreen:
    await pilot.press("o")
    await settle(pilot, lambda: isinstance(app.screen, OverrideEditorScreen)
                 and app.screen.ready.is_set(), "the override editor")
    editor = app.screen
    assert isinstance(editor, OverrideEditorScreen)
    await pilot.pause()
    return editor


async def throw_here(pilot: Pilot[Any], editor: OverrideEditorScreen, message: str,
                     code: str) -> None:
    """Make the call throw in the form (the draft serves it; not saved)."""
    from tests.app.test_override_editor import throw

    await throw(pilot, message, code)
    assert editor.has_unsaved_changes


async def test_o_decides_the_unfinished_call_of_a_scenario_that_does_not_load(
        tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "broken-unfinished-call", tmp_path)
    app = make_app(root)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        assert app.scenario is None and app.banner.showing
        banner = app.banner.whole.plain
        assert "Cannot load the scenario" in banner and "press o to decide the call" in banner
        assert "UNFINISHED_CALL" in banner
        editor = await open_editor(pilot, app)
        assert editor.scenario is None and editor.index == 1
        await throw_here(pilot, editor, "connection reset", "SERVER")
        await pilot.press("ctrl+s")
        await until(app, lambda: app.scenario is not None and not app.banner.showing,
                    "the reload into a working scenario")
        assert not isinstance(app.screen, OverrideEditorScreen)
        assert (root / SIDE).is_file()
        assert [e.entry.kind for e in app.engine.scripts[0].entries] == ["chunks", "throw"]
        async with client(app, "agent") as sdk:
            assert await stream_text(sdk) == "Hi."
            stream = await sdk.chat.completions.create(
                model="replay", messages=[{"role": "user", "content": "And again?"}], stream=True)
            got: list[str] = []
            with pytest.raises(openai.APIError) as caught:
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        got.append(chunk.choices[0].delta.content)
            await stream.close()
        assert "".join(got) == "Aga"  # the two recorded chunks kept as the prefix
        assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "SERVER"
        assert "connection reset" in str(caught.value)
        await until(app, lambda: "consumed ✓" in str(app.header.render()), "consumed")


async def test_quit_with_unsaved_edits_asks_first(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        assert app.scripts_view.select(0, 1)
        editor = await open_editor(pilot, app)
        await throw_here(pilot, editor, "boom", "SERVER")
        await pilot.press("ctrl+q")
        await settle(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen), "the question")
        confirm = app.screen
        assert isinstance(confirm, ConfirmDiscardScreen)
        assert confirm.question == f"Quit and discard unsaved changes to {SIDE}?"
        await pilot.press("ctrl+q")  # asked already: not a second question
        await pilot.pause()
        assert sum(isinstance(s, ConfirmDiscardScreen) for s in app.screen_stack) == 1
        await pilot.press("n")
        await settle(pilot, lambda: app.screen is editor, "back to the editor")
        assert app.return_code is None and editor.has_unsaved_changes
        await pilot.press("ctrl+q")
        await settle(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen), "the question")
        await pilot.press("y")
        await settle(pilot, lambda: app.return_code is not None, "the exit")
    assert app.return_code == 3  # quit with the verdict: nothing was consumed
    assert app.return_value is not None and app.return_value.startswith("replay NOT consumed")
    assert not (root / SIDE).exists()


async def test_quit_with_an_unchanged_editor_does_not_ask(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        assert app.scripts_view.select(0, 0)
        editor = await open_editor(pilot, app)
        assert not editor.has_unsaved_changes
        await pilot.press("ctrl+q")
    assert app.return_code == 3


async def test_a_reload_waits_for_the_editor_with_unsaved_edits(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        await app.watching.wait()
        assert app.scripts_view.select(0, 1)
        editor = await open_editor(pilot, app)
        await throw_here(pilot, editor, "boom", "SERVER")
        log = root / "session.jsonl"
        write_atomic(log, log.read_text(encoding="utf-8").replace("Hello!", "Howdy!"))
        await until(app, lambda: logged(app, "reload deferred"), "the deferral")
        assert logged(app, "reload deferred") == [
            "reload deferred (files changed): the override editor has unsaved changes; "
            "reloading when it closes"]
        assert not logged(app, "reloaded:")
        assert editor.has_unsaved_changes and app.screen is editor
        async with httpx.AsyncClient(base_url=app.url or "") as http:
            answer = await http.post("/replay/v1/reload")
        assert answer.status_code == 409 and answer.json()["code"] == "RELOAD_DEFERRED"
        assert "Howdy!" not in str(app.engine.scripts[0].entries[1].entry)
        # Closing the editor (discarding) runs the reload that waited.
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen), "the question")
        await pilot.press("y")
        await until(app, lambda: logged(app, "reloaded:"), "the deferred reload")
        assert logged(app, "reloaded:") == [
            "reloaded: [0] sample-basic-chat: +0 added, -0 removed, ~1 changed"]
        assert logged(app, "running the deferred reload")
        assert "Howdy!" in str(app.engine.scripts[0].entries[1].entry)
        assert not (root / SIDE).exists()


async def test_a_save_reloads_exactly_once(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        await app.watching.wait()
        reloads: list[ev.ScriptsReloaded] = []
        unsubscribe = app.engine.subscribe(
            lambda e: reloads.append(e) if isinstance(e, ev.ScriptsReloaded) else None)
        assert app.scripts_view.select(0, 1)
        editor = await open_editor(pilot, app)
        await throw_here(pilot, editor, "slow down", "RATE_LIMIT")
        await pilot.press("ctrl+s")
        # Both the editor's close and the watcher see the save; the second one skips.
        await until(app, lambda: reloads and logged(app, "content already loaded"),
                    "the save's reload and the skipped second one")
        assert len(reloads) == 1
        assert reloads[0].changes == [{"script": 0, "added": 0, "removed": 0, "changed": 1}]
        assert app.engine.scripts[0].entries[1].entry.kind == "throw"
        # No loop: the next reload is the one a later change of the log causes.
        log = root / "session.jsonl"
        write_atomic(log, log.read_text(encoding="utf-8").replace("README.md", "NOTES.md"))
        await until(app, lambda: len(reloads) > 1, "the log's reload")
        assert len(reloads) == 2
        assert logged(app, "content already loaded") == [
            f"{SIDE}: content already loaded, no reload"]
        unsubscribe()


async def test_url_file_is_written_once_the_server_is_up(tmp_path: Path) -> None:
    from dsh_replay_tui.app import AppOptions

    url_file = tmp_path / "url.txt"
    url_file.write_text("stale\n", encoding="utf-8")
    app = ReplayApp(AppOptions(scenario=SAMPLES / "basic-chat", port=0, watch=False,
                               url_file=url_file))
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        assert app.url is not None
        assert url_file.read_text(encoding="utf-8") == app.url + "\n"
        assert [p.name for p in tmp_path.iterdir()] == ["url.txt"]  # no temp file left
        async with client(app, "s") as sdk:
            await stream_text(sdk)  # the URL in the file is the live server
        assert len(app.engine.journal()) == 1


async def test_an_unwritable_url_file_shows_in_the_banner(tmp_path: Path) -> None:
    from dsh_replay_tui.app import AppOptions

    url_file = tmp_path / "missing-dir" / "url.txt"
    app = ReplayApp(AppOptions(scenario=SAMPLES / "basic-chat", port=0, watch=False,
                               url_file=url_file))
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        assert app.url is not None and app.banner.showing
        banner = app.banner.whole.plain
        assert f"Cannot write the URL file {url_file}" in banner and app.url in banner
        assert not url_file.exists()


async def test_a_save_after_a_deferred_reload_loads_both_changes_once(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        await app.watching.wait()
        reloads: list[ev.ScriptsReloaded] = []
        unsubscribe = app.engine.subscribe(
            lambda e: reloads.append(e) if isinstance(e, ev.ScriptsReloaded) else None)
        assert app.scripts_view.select(0, 1)
        editor = await open_editor(pilot, app)
        await throw_here(pilot, editor, "boom", "SERVER")
        log = root / "session.jsonl"
        write_atomic(log, log.read_text(encoding="utf-8").replace("Hello!", "Howdy!"))
        await until(app, lambda: logged(app, "reload deferred"), "the deferral")
        assert reloads == []
        await pilot.press("ctrl+s")
        await until(app, lambda: reloads and logged(app, "content already loaded"),
                    "the reload and the watcher's skip of the save")
        assert len(reloads) == 1
        entries = app.engine.scripts[0].entries
        assert entries[1].entry.kind == "throw"
        assert app.scenario is not None and app.scenario.derived_primary is not None
        assert "Howdy!" in str(app.scenario.derived_primary[1].entry)  # the log change is in
        assert logged(app, "running the deferred reload")
        unsubscribe()
