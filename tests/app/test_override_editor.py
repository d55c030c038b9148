"""The override editor screen, driven through a real Textual app with Pilot: every flow writes the
exact sidecar file, and a real engine reloaded from it serves the new entry."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from dsh_replay_tui.screens.override_confirm import ConfirmDiscardScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from dsh_replay_tui.widgets.kind_toggle import KindToggle
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from replay_engine import load_scenario
from replay_engine.authoring.draft import fingerprint
from replay_engine.scenario.loading import Scenario
from tests.conftest import SAMPLES
from tests.unit.enginetools import Served, serve_scenario_calls, sidecar_bytes

pytestmark = pytest.mark.anyio
SIDE = "replay.override.json"
LIMIT = 10.0  # seconds: a bound on waiting for the screen, never a timing assertion


class Host(App[None]):
    """A bare app that pushes one editor screen and records what it dismissed with."""

    def __init__(self, make: Callable[[], OverrideEditorScreen]) -> None:
        super().__init__()
        self.make = make
        self.results: list[bool | None] = []
        self.editor: OverrideEditorScreen | None = None

    def on_mount(self) -> None:
        self.editor = self.make()
        self.push_screen(self.editor, self.results.append)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", target)
    return target


async def until(pilot: Pilot[Any], check: Callable[[], bool]) -> None:
    with anyio.fail_after(LIMIT):
        while not check():
            await pilot.pause()


async def opened(app: Host, pilot: Pilot[Any]) -> OverrideEditorScreen:
    await until(pilot, lambda: app.editor is not None and app.editor.ready.is_set())
    assert app.editor is not None
    await pilot.pause()
    return app.editor


def text_of(screen: OverrideEditorScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def type_into(pilot: Pilot[Any], selector: str, text: str, *, keys: bool = False) -> None:
    """Fill an input: key by key when ``keys`` (slow), else by setting its value after a click."""
    await pilot.click(selector)
    widget = pilot.app.screen.query_one(selector, Input)
    widget.value = ""
    if keys:
        await pilot.press(*text)
    else:
        widget.value = text


async def choose(pilot: Pilot[Any], kind: str) -> None:
    """Pick a kind on the switch with its key (c, t, h), as a user would."""
    pilot.app.screen.query_one(KindToggle).focus()
    await pilot.press(kind[0])
    await pilot.pause()


async def throw(pilot: Pilot[Any], message: str, code: str, *, prefix: str | None = None,
                keys: bool = False) -> None:
    """Make the call throw: the switch on throw, then its fields filled in."""
    await choose(pilot, "throw")
    if prefix is not None:
        await type_into(pilot, "#oe-prefix", prefix)
    await type_into(pilot, "#oe-message", message, keys=keys)
    await type_into(pilot, "#oe-code", code, keys=keys)
    await pilot.pause()


async def set_json(pilot: Pilot[Any], screen: OverrideEditorScreen, text: str) -> None:
    area = screen.query_one("#oe-json", TextArea)
    area.focus()
    area.select_all()
    await pilot.press("backspace")
    area.insert(text)
    await pilot.pause()


def derived(root: Path) -> list[dict[str, Any]]:
    scenario = load_scenario(root)
    assert scenario.derived_primary is not None
    return [e.to_json() for e in scenario.derived_primary]


async def serve_after_reload(root: Path, calls: int) -> Served:
    """A real engine that was serving the old scripts, reloaded from the saved file."""
    return await serve_scenario_calls(root, calls, reload=True)


def host(scenario: Scenario, index: int, served: int | None = None, **kw: Any) -> Host:
    return Host(lambda: OverrideEditorScreen(scenario, index, served, **kw))


async def test_throw_here_prefix_defaults_to_served_chunks(root: Path) -> None:
    d = derived(root)
    app = host(load_scenario(root), 1, served=3)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert screen.query_one("#oe-prefix", Input).value == "3"
        assert json.loads(screen.query_one("#oe-json", TextArea).text) == d[1]
        await throw(pilot, "rate limited", "RATE_LIMIT", keys=True)
        assert "call #1 now throws RATE_LIMIT after 3 chunk(s)" in text_of(screen, "#oe-status")
        assert json.loads(screen.query_one("#oe-json", TextArea).text)["kind"] == "throw"
        effective = text_of(screen, "#oe-effective")
        assert "* #1   1/2    throw" in effective and "  #0   1/1    chunks" in effective
        assert "kind chunks -> throw" in text_of(screen, "#oe-diff")
        assert "unsaved changes" in text_of(screen, "#oe-title")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
        saved = screen.saved
    want = sidecar_bytes({"patches": [{"at": 1, "entry": {
        "kind": "throw", "chunks": d[1]["chunks"][:3], "message": "rate limited",
        "code": "RATE_LIMIT"}}]})
    assert (root / SIDE).read_bytes() == want
    assert saved is not None and saved.data == want and saved.is_current()
    assert saved.sha256 == fingerprint(root / SIDE)
    assert await serve_after_reload(root, 2) == [(d[0]["chunks"], None),
                                                (d[1]["chunks"][:3], "RATE_LIMIT")]


async def test_hang_here_with_ready_file(root: Path) -> None:
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(180, 50)) as pilot:
        await opened(app, pilot)
        await choose(pilot, "hang")
        await type_into(pilot, "#oe-ready", "hung.marker")
        await pilot.click("#oe-save")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        {"patches": [{"at": 0, "entry": {"kind": "hang", "readyFile": "hung.marker"}}]})
    served = await serve_after_reload(root, 2)
    assert served[0][1] == "ABORTED" and (root / "hung.marker").exists()


async def test_edit_chunks_json_validates_as_you_type_and_blocks_saving(root: Path) -> None:
    d = derived(root)
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        bad = '[\n  {"type": "block-start", "index": 0, "blockType": "text"},\n  {"type": "oops"}\n]'
        await set_json(pilot, screen, bad)
        status = text_of(screen, "#oe-json-status")
        assert "line 3, column 3: [1]: chunk type 'oops' is not one of" in status
        assert screen.has_unsaved_changes
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "Not saved: the entry JSON is invalid — line 3, column 3" in text_of(
            screen, "#oe-status")
        assert not (root / SIDE).exists() and app.results == []
        await set_json(pilot, screen, '[{"type": "text-delta"')
        assert "line 1, column 23: not valid JSON" in text_of(screen, "#oe-json-status")
        chunks = [{"type": "block-start", "index": 0, "blockType": "text"},
                  {"type": "text-delta", "index": 0, "text": "Edited!"},
                  {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Edited!"}},
                  {"type": "finish", "reason": {"kind": "stop"}}]
        await set_json(pilot, screen, json.dumps(chunks, indent=1))
        assert "valid entry" in text_of(screen, "#oe-json-status")
        diff = text_of(screen, "#oe-diff")
        assert '+ {"type": "text-delta", "index": 0, "text": "Edited!"}' in diff
        assert "- " + json.dumps(d[1]["chunks"][1]) in diff
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        {"patches": [{"at": 1, "entry": {"kind": "chunks", "chunks": chunks}}]})
    assert (await serve_after_reload(root, 2))[1] == (chunks, None)


async def test_typing_the_recorded_entry_back_drops_the_patch(root: Path) -> None:
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        original = screen.query_one("#oe-json", TextArea).text
        await set_json(pilot, screen, '{"kind": "hang"}')
        assert screen.draft is not None and screen.draft.edited(0)
        await set_json(pilot, screen, original)
        assert not screen.draft.edited(0) and not screen.has_unsaved_changes


async def test_append_a_retry_call_after_a_throw(root: Path) -> None:
    d = derived(root)
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        await throw(pilot, "overloaded", "SERVER", prefix="0")
        await pilot.click("#oe-append")
        await pilot.pause()
        assert screen.index == 2
        assert screen.query_one("#oe-index", Input).value == "2"
        assert json.loads(screen.query_one("#oe-json", TextArea).text) == d[1]
        # A Button ignores a second press while it still shows the first one.
        await until(pilot, lambda: not screen.query_one("#oe-append").has_class("-active"))
        await pilot.click("#oe-append")
        await pilot.pause()
        assert "already appended" in text_of(screen, "#oe-status")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes({"patches": [
        {"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "overloaded",
                            "code": "SERVER"}},
        {"at": 2, "entry": d[1]},
    ]})
    assert await serve_after_reload(root, 3) == [(d[0]["chunks"], None), ([], "SERVER"),
                                                (d[1]["chunks"], None)]


async def test_remove_patch_keeps_backup(root: Path) -> None:
    d = derived(root)
    old = sidecar_bytes({"patches": [{"at": 0, "entry": {"kind": "hang"}}]})
    (root / SIDE).write_bytes(old)
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        await pilot.click("#oe-remove")
        await until(pilot, lambda: "call 1 is not patched" in text_of(screen, "#oe-status"))
        screen.query_one("#oe-index", Input).value = "0"
        await until(pilot, lambda: screen.index == 0)
        await pilot.click("#oe-remove")
        # the press is a queued message: wait for its answer rather than for one idle frame
        await until(pilot, lambda: "call #0: patch removed." in text_of(screen, "#oe-status"))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == b'{\n  "patches": []\n}\n'
    assert (root / (SIDE + ".bak")).read_bytes() == old
    assert await serve_after_reload(root, 2) == [(d[0]["chunks"], None), (d[1]["chunks"], None)]


async def test_bare_list_stays_a_list(root: Path) -> None:
    (root / SIDE).write_text('[{"kind": "hang"}, {"kind": "hang"}]')
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert "bare list" in text_of(screen, "#oe-status")
        await throw(pilot, "no", "AUTH")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        [{"kind": "hang"}, {"kind": "throw", "chunks": [], "message": "no", "code": "AUTH"}])


async def test_interrupted_save_keeps_old_file_and_the_edits(root: Path) -> None:
    old = sidecar_bytes({"patches": [{"at": 0, "entry": {"kind": "hang"}}]})
    (root / SIDE).write_bytes(old)

    def failing(src: str, dst: str) -> None:
        if Path(dst).name == SIDE:
            raise OSError(5, "Input/output error")
        os.replace(src, dst)

    app = host(load_scenario(root), 1, rename=failing)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        await choose(pilot, "hang")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Not saved" in text_of(screen, "#oe-status"))
        assert "Input/output error" in text_of(screen, "#oe-status")
        assert app.results == [] and screen.has_unsaved_changes
    assert (root / SIDE).read_bytes() == old
    assert sorted(p.name for p in root.iterdir()) == [SIDE, SIDE + ".bak", "session.jsonl"]


async def test_escape_asks_before_discarding(root: Path) -> None:
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        await choose(pilot, "hang")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen))
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen)
        assert app.results == [] and screen.has_unsaved_changes
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.results == [False])
    assert not (root / SIDE).exists()


async def test_escape_without_changes_closes_at_once(root: Path) -> None:
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(180, 50)) as pilot:
        await opened(app, pilot)
        await pilot.press("escape")
        await until(pilot, lambda: app.results == [False])


async def test_child_script_offers_nothing() -> None:
    scenario = load_scenario(SAMPLES / "nested-subagents")
    assert not scenario.scripts[1].primary
    app = host(scenario, 0, script_index=1)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert "apply to the primary session only" in text_of(screen, "#oe-child")
        assert not screen.query("#oe-json") and not screen.query("#oe-save")
        assert not screen.query(KindToggle)
        await pilot.press("escape")
        await until(pilot, lambda: app.results == [False])


async def test_unknown_call_index_is_refused(root: Path) -> None:
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        screen.query_one("#oe-index", Input).value = "7"
        await pilot.pause()
        assert screen.index == 0
        assert "call 7 does not exist: the effective script has 2 call(s)" in text_of(
            screen, "#oe-status")


async def test_o_in_the_debugger_then_the_next_call_is_served_from_the_saved_file(
        tmp_path: Path) -> None:
    """The real debugger: ``o`` on primary call 1, throw here, save; its server then fails that
    call for a real openai client (429 for RATE_LIMIT) after serving call 0 as recorded."""
    import openai

    from tests.app.apptools import client, copy_sample, make_app, stream_text
    from tests.app.apptools import until as until_flush

    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, serve=True)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.ready.wait()
        assert app.scripts_view.select(0, 1)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OverrideEditorScreen)
                    and app.screen.ready.is_set())
        editor = app.screen
        assert isinstance(editor, OverrideEditorScreen) and editor.index == 1
        await throw(pilot, "slow down", "RATE_LIMIT")
        await pilot.press("ctrl+s")
        await until_flush(app, lambda: app.engine.scripts[0].entries[1].entry.kind == "throw",
                          "the reload after the save")
        assert editor.saved is not None and editor.saved.is_current()
        async with client(app, "s1") as sdk:
            await stream_text(sdk)
            with pytest.raises(openai.RateLimitError, match="slow down"):
                await stream_text(sdk)
    assert json.loads((root / SIDE).read_text())["patches"][0]["at"] == 1


async def test_scenario_without_a_sidecar_path_shows_why(root: Path) -> None:
    from replay_engine.models import ReplayConfig
    from replay_engine.scenario.loading import load_scenario_config

    scenario = load_scenario_config(ReplayConfig(file=str(root / "session.jsonl")))
    app = host(scenario, 0)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert "DSH_SNAPSHOT_OVERRIDE" in text_of(screen, "#oe-status")
        save = screen.query_one("#oe-save")
        assert save.disabled
        await pilot.press("ctrl+s")
        await pilot.press("escape")
        await until(pilot, lambda: app.results == [False])
    assert sorted(p.name for p in root.iterdir()) == ["session.jsonl"]
