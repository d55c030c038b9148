"""SVG snapshots of the debugger at 80x24 and 160x45: the main screen, help, palette, search, each
call-pane tab, the override editor, the reload-error banner, stepping chunk by chunk, a zoomed
pane, a scenario that does not load and record mode.

Deterministic: relative scenario paths, a fixed URL label instead of the real port, no clock,
no animation, no blinking cursor. Update with ``pytest tests/app/test_snapshots.py --snapshot-update``
and look at the results (``docs/`` holds copies of the first screens for the documentation).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.app import AppOptions, ReplayApp
from dsh_replay_tui.screens.help import HelpScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from replay_engine import ReplayError
from tests.app.apptools import BASIC_PROMPT, FIXED_URL, client, make_app, until
from tests.conftest import ROOT, SAMPLES

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
QUESTION = "What files are in the workspace? Then say hello."
Snap = Callable[..., bool]
Step = Callable[[Pilot[Any]], Awaitable[None]]

sized = pytest.mark.parametrize("size", list(SIZES))


def basic_app() -> ReplayApp:
    return make_app(Path("sample_scenarios/basic-chat"), url_label=FIXED_URL)


def still(pilot: Pilot[Any]) -> None:
    """No blinking cursor in any input on screen."""
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    for area in pilot.app.screen.query(TextArea):
        area.cursor_blink = False


async def serve_first_call(pilot: Pilot[Any]) -> None:
    """The agent made call #0; call #0 is selected."""
    app = pilot.app
    assert isinstance(app, ReplayApp)
    await app.ready.wait()
    sdk = client(app, "agent-1")
    stream = await sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}], stream=True)
    async for _ in stream:
        pass
    await sdk.close()
    await until(app, lambda: any("call #0 finished" in x for x in app.live_pane.lines))
    await pilot.press("down")
    await pilot.pause()


def then(*steps: Step) -> Step:
    async def run(pilot: Pilot[Any]) -> None:
        for step in steps:
            await step(pilot)
        still(pilot)
        await pilot.pause()
    return run


def on_tab(presses: int) -> Step:
    async def run(pilot: Pilot[Any]) -> None:
        for _ in range(presses):
            await pilot.press("right_square_bracket")
        app = pilot.app
        assert isinstance(app, ReplayApp)
        if presses == 2:
            await app.call_pane.context_loaded.wait()
        await pilot.pause()
    return run


async def open_help(pilot: Pilot[Any]) -> None:
    await pilot.press("question_mark")
    assert isinstance(pilot.app.screen, HelpScreen)


async def open_palette(pilot: Pilot[Any]) -> None:
    await pilot.press("ctrl+p")
    assert isinstance(pilot.app.screen, CommandPalette)
    await pilot.press(*"pace")
    palette = pilot.app.screen
    for _ in range(50):  # results arrive from a worker; wait for them, bounded
        await pilot.pause(0.05)
        if palette.query("CommandList") and palette.query_one("CommandList").option_count >= 5:
            break


async def search(pilot: Pilot[Any]) -> None:
    await pilot.press("slash", *"tool:bash", "enter")


async def open_editor(pilot: Pilot[Any]) -> None:
    await pilot.press("o")
    editor = pilot.app.screen
    assert isinstance(editor, OverrideEditorScreen)
    await editor.ready.wait()
    await pilot.pause()


async def author_throw(pilot: Pilot[Any]) -> None:
    """In the open editor: throw picked on the kind switch, its message and code typed."""
    await pilot.press("t", "tab", "tab", "tab", "tab", *"slow down", "tab", *"RATE_LIMIT")
    await pilot.pause()


class TestMainScreen:
    @sized
    def test_main_screen_after_one_served_call(self, size: str, snap_compare: Snap,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size], run_before=then(serve_first_call))

    def test_main_screen_of_nested_subagents_before_any_call(self, snap_compare: Snap,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            await pilot.pause()

        app = make_app(Path("sample_scenarios/nested-subagents"), url_label=FIXED_URL)
        assert snap_compare(app, terminal_size=SIZES["160x45"], run_before=then(ready))


class TestOverlays:
    @sized
    def test_help(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, open_help))

    @sized
    def test_palette(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, open_palette))

    @sized
    def test_search(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, search))

    @sized
    def test_editor(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, open_editor, author_throw))

    @sized
    def test_editor_on_a_broken_sidecar(self, size: str, snap_compare: Snap,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()

        app = make_app(Path("sample_scenarios/broken-sidecar"), url_label=FIXED_URL)
        assert snap_compare(app, terminal_size=SIZES[size], run_before=then(ready, open_editor))


class TestCallPaneTabs:
    @sized
    @pytest.mark.parametrize("presses", [0, 1, 2, 3], ids=["output", "chunks", "request", "raw"])
    def test_tab(self, presses: int, size: str, snap_compare: Snap,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, on_tab(presses)))


class TestReloadErrorBanner:
    @sized
    def test_broken_sidecar_banner(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
        shutil.copytree(SAMPLES / "basic-chat", tmp_path / "basic-chat")
        monkeypatch.chdir(tmp_path)

        async def break_sidecar(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            Path("basic-chat/replay.override.json").write_text(
                json.dumps({"patches": [{"at": 0, "entry": {"kind": "hang", "readyFile": ""}}]}),
                encoding="utf-8")
            await pilot.press("l")
            await until(app, lambda: app.banner.showing, "the banner")
            await pilot.pause()

        app = make_app(Path("basic-chat"), url_label=FIXED_URL)
        assert snap_compare(app, terminal_size=SIZES[size], run_before=then(break_sidecar))


class TestStepping:
    @sized
    def test_stepping_chunk_by_chunk(self, size: str, snap_compare: Snap,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """Break at chunks, four chunks released with n: the call pane shows the call's chunks,
        the one released last highlighted and the next on screen; the footer offers n e c x."""
        monkeypatch.chdir(ROOT)
        held: list[Any] = []

        async def hold(app: ReplayApp) -> None:
            """A call served in process (no socket left open when the app quits paused)."""
            try:
                async for _ in app.engine.stream("agent-1", BASIC_PROMPT):
                    pass
            except ReplayError:
                pass  # the app quits with the call still paused: it is aborted

        async def step(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            await pilot.press("3")
            held.append(asyncio.ensure_future(hold(app)))
            for released in range(4):
                await until(app, lambda r=released: bool(app.engine.state().bindings)
                            and app.engine.state().bindings[0].chunks_served == r
                            and app.engine.state().bindings[0].status == "paused", "a pause")
                await pilot.press("n")
            await until(app, lambda: app.engine.state().bindings[0].chunks_served == 4
                        and app.engine.state().bindings[0].status == "paused", "the fourth")
            app.main.flush()
            await pilot.pause()

        assert snap_compare(basic_app(), terminal_size=SIZES[size], run_before=then(step))

    @sized
    def test_zoomed_call_pane(self, size: str, snap_compare: Snap,
                              monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)

        async def zoom(pilot: Pilot[Any]) -> None:
            await pilot.press("f3", "z")
            await pilot.pause()

        assert snap_compare(basic_app(), terminal_size=SIZES[size],
                            run_before=then(serve_first_call, zoom))


class TestStartScreens:
    @sized
    def test_before_any_call(self, size: str, snap_compare: Snap,
                             monkeypatch: pytest.MonkeyPatch) -> None:
        """Nothing bound yet: Live says how to connect, the footer offers the demo agent."""
        monkeypatch.chdir(ROOT)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            app.main.flush()
            await pilot.pause()

        assert snap_compare(basic_app(), terminal_size=SIZES[size], run_before=then(ready))

    @sized
    def test_a_scenario_that_does_not_load(self, size: str, snap_compare: Snap,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """The two-line banner has focus; Enter opens it whole."""
        monkeypatch.chdir(ROOT)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            app.main.flush()
            await pilot.pause()

        app = make_app(Path("sample_scenarios/broken-sidecar"), url_label=FIXED_URL)
        assert snap_compare(app, terminal_size=SIZES[size], run_before=then(ready))

    @sized
    def test_recording(self, size: str, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch,
                       tmp_path: Path) -> None:
        """Record mode before the first call (the upstream is never called)."""
        monkeypatch.chdir(tmp_path)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            app.main.flush()
            await pilot.pause()

        app = ReplayApp(AppOptions(scenario=Path("recording"), port=0, watch=False,
                                   upstream="https://api.example.com", url_label=FIXED_URL))
        assert snap_compare(app, terminal_size=SIZES[size], run_before=then(ready))


DOCS = {
    "main-160x45.svg": "TestMainScreen.test_main_screen_after_one_served_call[160x45].svg",
    "main-80x24.svg": "TestMainScreen.test_main_screen_after_one_served_call[80x24].svg",
    "help-80x24.svg": "TestOverlays.test_help[80x24].svg",
    "editor-160x45.svg": "TestOverlays.test_editor[160x45].svg",
    "editor-80x24.svg": "TestOverlays.test_editor[80x24].svg",
    "editor-raw-80x24.svg": "TestOverlays.test_editor_on_a_broken_sidecar[80x24].svg",
    "step-80x24.svg": "TestStepping.test_stepping_chunk_by_chunk[80x24].svg",
    "step-160x45.svg": "TestStepping.test_stepping_chunk_by_chunk[160x45].svg",
    "zoom-80x24.svg": "TestStepping.test_zoomed_call_pane[80x24].svg",
    "banner-80x24.svg": "TestStartScreens.test_a_scenario_that_does_not_load[80x24].svg",
    "record-80x24.svg": "TestStartScreens.test_recording[80x24].svg",
    "record-160x45.svg": "TestStartScreens.test_recording[160x45].svg",
}


@pytest.mark.parametrize("name", list(DOCS))
def test_docs_screenshots_are_the_current_snapshots(name: str) -> None:
    """The docs show the screens as they are: docs/*.svg are copies of the snapshots, and a
    page of the docs (or the README) shows each one."""
    snapshot = Path(__file__).parent / "__snapshots__" / "test_snapshots" / DOCS[name]
    assert (ROOT / "docs" / name).read_bytes() == snapshot.read_bytes(), (
        f"docs/{name} is stale: copy {snapshot.relative_to(ROOT)} over it")
    pages = [page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md")]
    assert any(f"({name})" in text for text in pages) or (
        f"(docs/{name})" in (ROOT / "README.md").read_text(encoding="utf-8")), f"no page shows docs/{name}"
