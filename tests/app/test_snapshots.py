"""SVG snapshots of the debugger: the main screen, each call-pane tab and the reload-error banner.

Deterministic: relative scenario paths, a fixed URL label instead of the real port, no clock,
no animation. Update with ``pytest tests/app/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.app import ReplayApp
from tests.app.apptools import FIXED_URL, client, make_app, until
from tests.conftest import ROOT, SAMPLES

SIZE = (150, 40)
QUESTION = "What files are in the workspace? Then say hello."
Snap = Callable[..., bool]


def basic_app() -> ReplayApp:
    return make_app(Path("sample_scenarios/basic-chat"), url_label=FIXED_URL)


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


def on_tab(presses: int) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run(pilot: Pilot[Any]) -> None:
        await serve_first_call(pilot)
        for _ in range(presses):
            await pilot.press("right_square_bracket")
        app = pilot.app
        assert isinstance(app, ReplayApp)
        if presses == 2:
            await app.call_pane.context_loaded.wait()
        await pilot.pause()
    return run


class TestMainScreen:
    def test_main_screen_after_one_served_call(self, snap_compare: Snap,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZE, run_before=serve_first_call)

    def test_main_screen_of_nested_subagents_before_any_call(self, snap_compare: Snap,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)

        async def ready(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, ReplayApp)
            await app.ready.wait()
            await pilot.pause()

        app = make_app(Path("sample_scenarios/nested-subagents"), url_label=FIXED_URL)
        assert snap_compare(app, terminal_size=SIZE, run_before=ready)


class TestCallPaneTabs:
    @pytest.mark.parametrize("presses", [0, 1, 2, 3], ids=["output", "chunks", "request", "raw"])
    def test_tab(self, presses: int, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert snap_compare(basic_app(), terminal_size=SIZE, run_before=on_tab(presses))


class TestReloadErrorBanner:
    def test_broken_sidecar_banner(self, snap_compare: Snap, monkeypatch: pytest.MonkeyPatch,
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
        assert snap_compare(app, terminal_size=SIZE, run_before=break_sidecar)
