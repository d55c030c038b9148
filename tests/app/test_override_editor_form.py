"""The override editor's form with Pilot: focus on open, a patched call prefilled, the kind switch
that Ctrl+S saves as shown, unsaved text that Esc asks about, the layout at 80x24 and its own
help, and the throw-code warning from the entry JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.headless.override_edits import EDITOR_HELP
from dsh_replay_tui.screens.help import SEARCH_NOTE, HelpScreen
from dsh_replay_tui.screens.override_confirm import ConfirmDiscardScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from dsh_replay_tui.widgets.kind_toggle import KindToggle
from textual.containers import VerticalScroll
from textual.widgets import Input, TextArea

from replay_engine import ReplayError, load_scenario, throw_code_warning
from tests.app.apptools import copy_sample, make_app
from tests.app.test_override_editor import (
    SIDE,
    choose,
    derived,
    host,
    opened,
    set_json,
    text_of,
    type_into,
    until,
)
from tests.conftest import SAMPLES
from tests.unit.enginetools import sidecar_bytes

pytestmark = pytest.mark.anyio
SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
sized = pytest.mark.parametrize("size", list(SIZES))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_sample(SAMPLES, "basic-chat", tmp_path)


def patch_at_1(root: Path, entry: dict[str, Any]) -> None:
    (root / SIDE).write_bytes(sidecar_bytes({"patches": [{"at": 1, "entry": entry}]}))


def form_values(screen: OverrideEditorScreen) -> tuple[str, str, str, str, str]:
    boxes = (screen.query_one(f"#oe-{name}", Input).value
             for name in ("message", "code", "prefix", "ready"))
    return (screen.query_one(KindToggle).kind, *boxes)  # type: ignore[return-value]


def json_box(screen: OverrideEditorScreen) -> Any:
    return json.loads(screen.query_one("#oe-json", TextArea).text)


@sized
async def test_the_kind_switch_has_focus_and_typed_text_counts(root: Path, size: str) -> None:
    app = host(load_scenario(root), 1)
    async with app.run_test(size=SIZES[size]) as pilot:
        screen = await opened(app, pilot)
        assert isinstance(app.focused, KindToggle)
        await pilot.press("t")  # picks throw: the switch's own key
        await until(pilot, lambda: screen.query_one(KindToggle).kind == "throw")
        await pilot.press("tab", "tab", "tab", "tab")  # call #, Append, Remove, then message
        assert app.focused is screen.query_one("#oe-message", Input)
        await pilot.press(*"boom")
        assert screen.query_one("#oe-message", Input).value == "boom"
        await pilot.pause()
        assert json_box(screen)["message"] == "boom"
        assert "✗ code: must be a non-empty string" in text_of(screen, "#oe-json-status")
        await pilot.press("escape")  # the throw has no code yet: unsaved, so it asks
        await until(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen))
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert text_of(screen, "#oe-status") == (
            "Not saved: the form is not complete — code: must be a non-empty string")
        assert app.results == [] and not (root / SIDE).exists()


@pytest.mark.parametrize("kind", ["throw", "hang", "chunks"])
async def test_a_patched_call_opens_as_it_is_served(root: Path, kind: str) -> None:
    d = derived(root)
    entry: dict[str, Any] = {
        "throw": {"kind": "throw", "chunks": d[1]["chunks"][:2], "message": "slow down",
                  "code": "RATE_LIMIT"},
        "hang": {"kind": "hang", "readyFile": "hung.marker"},
        "chunks": {"kind": "chunks", "chunks": d[1]["chunks"][:3]},
    }[kind]
    patch_at_1(root, entry)
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        want = {"throw": ("throw", "slow down", "RATE_LIMIT", "2", ""),
                "hang": ("hang", "", "", "0", "hung.marker"),
                "chunks": ("chunks", "", "", "0", "")}[kind]
        assert form_values(screen) == want
        assert json_box(screen) == entry
        assert screen.query_one(KindToggle).render().plain.count("◉") == 1
        assert f"◉ {kind}" in screen.query_one(KindToggle).render().plain
        for shown in ("throw", "hang"):
            assert all(w.display == (shown == kind) for w in screen.query(f".oe-{shown}"))
        await pilot.pause()
        assert not screen.has_unsaved_changes  # filling the form is not an edit
        await pilot.press("escape")
        await until(pilot, lambda: app.results == [False])


async def test_switching_the_kind_then_ctrl_s_saves_the_kind_shown(root: Path) -> None:
    d = derived(root)
    patch_at_1(root, {"kind": "throw", "chunks": [], "message": "boom", "code": "SERVER"})
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        await pilot.press("h")
        await pilot.pause()
        assert json_box(screen) == {"kind": "hang"}
        await type_into(pilot, "#oe-ready", "ready.marker")
        await pilot.pause()
        assert json_box(screen) == {"kind": "hang", "readyFile": "ready.marker"}
        assert "call #1 now hangs until cancelled (readyFile ready.marker)." in text_of(
            screen, "#oe-status")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        {"patches": [{"at": 1, "entry": {"kind": "hang", "readyFile": "ready.marker"}}]})
    # Back to chunks: the recorded call again, so the patch goes.
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        await choose(pilot, "chunks")
        assert json_box(screen) == d[1]
        assert screen.draft is not None and not screen.draft.edited(1)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert json.loads((root / SIDE).read_text())["patches"] == []


async def test_chunks_typed_into_a_throw_survive_a_message_edit(root: Path) -> None:
    chunk = {"type": "text-delta", "index": 0, "text": "partial"}
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await opened(app, pilot)
        await set_json(pilot, screen, json.dumps(
            {"kind": "throw", "chunks": [chunk], "message": "a", "code": "SERVER"}))
        assert form_values(screen)[:4] == ("throw", "a", "SERVER", "1")
        await type_into(pilot, "#oe-message", "another message")
        await pilot.pause()
        assert json_box(screen) == {"kind": "throw", "chunks": [chunk],
                                    "message": "another message", "code": "SERVER"}
        await type_into(pilot, "#oe-prefix", "12")
        await pilot.pause()
        assert "keep first: 12 is out of range" in text_of(screen, "#oe-json-status")


async def test_a_throw_code_outside_the_known_set_warns_from_the_json_box_and_the_form(
        root: Path) -> None:
    warning = throw_code_warning("RATE_LIMT")
    assert warning is not None
    app = host(load_scenario(root), 0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        await set_json(pilot, screen, '{"kind": "throw", "chunks": [], "message": "m", '
                                      '"code": "RATE_LIMT"}')
        assert "✓ valid entry" in text_of(screen, "#oe-json-status")
        assert text_of(screen, "#oe-status") == (
            f"call #0 now throws RATE_LIMT after 0 chunk(s). Warning: {warning}.")
        await set_json(pilot, screen, '{"kind": "throw", "chunks": [], "message": "m", '
                                      '"code": "RATE_LIMIT"}')
        assert "Warning" not in text_of(screen, "#oe-status")
        await type_into(pilot, "#oe-code", "RATE_LIMT")
        await pilot.pause()
        assert text_of(screen, "#oe-status").endswith(f"Warning: {warning}.")


def inside(screen: Any, widget: Any) -> bool:
    """The widget is on screen and on top where it is (a click there reaches it)."""
    region = widget.region
    return region.height >= 1 and screen.get_widget_at(*region.center)[0] is widget


async def test_at_80x24_every_control_fits_and_the_previews_follow_the_call(root: Path) -> None:
    d = derived(root)
    (root / SIDE).write_bytes(sidecar_bytes([d[1]] * 12))
    app = host(load_scenario(root), 10)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        await choose(pilot, "throw")
        for name in ("kind", "index", "append", "remove", "message", "code", "prefix", "json"):
            assert inside(screen, screen.query_one(f"#oe-{name}")), name
        area = screen.query_one("#oe-json", TextArea)
        assert area.scrollable_content_region.height >= 5
        shown = {key: active.binding.show for key, active in screen.active_bindings.items()}
        assert shown.get("ctrl+s") and shown.get("escape") and shown.get("f1")
        await choose(pilot, "hang")  # a change the preview shows on call 10
        await pilot.pause()
        sides = list(screen.query(".oe-side").results(VerticalScroll))
        for side in sides:
            rows = side.scrollable_content_region.height
            assert rows >= 3
            assert side.scroll_y <= 10 < side.scroll_y + rows
        assert "* #10" in text_of(screen, "#oe-effective").splitlines()[10]
        diff = screen.query_one("#oe-diff-box", VerticalScroll)
        lines = text_of(screen, "#oe-diff").splitlines()
        head = next(i for i, line in enumerate(lines) if line.startswith("call #10:"))
        rows = diff.scrollable_content_region.height
        assert rows >= 2 and head > rows and diff.scroll_y <= head < diff.scroll_y + rows


@sized
async def test_f1_shows_the_editors_keys_and_kinds(root: Path, size: str) -> None:
    app = make_app(root)
    async with app.run_test(size=SIZES[size]) as pilot:
        await app.ready.wait()
        assert app.scripts_view.select(0, 1)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OverrideEditorScreen)
                    and app.screen.ready.is_set())
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert help_screen.note == EDITOR_HELP and help_screen.note != SEARCH_NOTE
        assert "Override editor: ^s Save replay.override.json" in help_screen.text
        assert "t On the kind switch: the call streams the first N recorded chunks" in (
            help_screen.text)
        assert "Search syntax" not in help_screen.text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, OverrideEditorScreen))


@pytest.mark.parametrize("ready", ["../outside.marker", "/etc/outside.marker"])
async def test_a_ready_file_outside_the_ready_directory_is_no_valid_entry(
        root: Path, ready: str) -> None:
    """The editor, validate and serving share one rule: what serving refuses is never valid."""
    app = host(load_scenario(root), 1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        await pilot.press("h")
        await type_into(pilot, "#oe-ready", ready)
        await pilot.pause()
        status = text_of(screen, "#oe-json-status")
        assert status.startswith("✗ ") and "readyFile" in status, status
        assert "valid entry" not in status
    patch_at_1(root, {"kind": "hang", "readyFile": ready})
    with pytest.raises(ReplayError) as refused:
        load_scenario(root)
    assert "SIDECAR" in refused.value.code
    assert "readyFile" in refused.value.message
