"""Help screen, command palette, footer, focus, search, detail view, log coalescing, toasts and
the 80x24 layout of the debugger, driven through the real app with Pilot."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from dsh_replay_tui.screens.detail import DetailScreen
from dsh_replay_tui.screens.dialect_choice import DialectChoiceScreen
from dsh_replay_tui.screens.help import HelpScreen
from dsh_replay_tui.screens.override_confirm import ConfirmDiscardScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from dsh_replay_tui.screens.verdict import VerdictScreen
from dsh_replay_tui.widgets.call_pane import ChunkList
from dsh_replay_tui.widgets.live_pane import KEY_WIDTH, SessionList
from textual.command import CommandPalette
from textual.widget import Widget
from textual.widgets import Button, TextArea
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

from app import keymap
from tests.app.apptools import client, make_app, stream_text, until
from tests.conftest import ROOT, SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
NARROW = (80, 24)


def footer_keys(screen: object) -> list[tuple[str, str]]:
    """(key, label) of every key the footer on ``screen`` shows."""
    return [(k.key_display, k.description) for k in screen.query(FooterKey)]  # type: ignore[attr-defined]


def on_screen(widget: object, size: tuple[int, int]) -> bool:
    """Whether a widget has a non-empty region inside the terminal."""
    region = widget.region  # type: ignore[attr-defined]
    return region.width > 0 and region.height > 0 and region.right <= size[0] and region.bottom <= size[1]


async def test_labels_say_what_keys_do_and_help_lists_every_key_by_area() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.pause()
        labels = {k.label for k in keymap.TABLE}
        assert not labels & {"Brk call", "Brk chunk", "Brkpt", "Step"}
        assert keymap.describe("step('chunk')").label == "Next chunk"  # type: ignore[union-attr]

        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        areas = [area for area, _ in help_screen.sections]
        assert areas == ["Move", "Stepping", "Calls", "Pace", "Search", "Scenario", "App"]
        listed = {text for _, rows in help_screen.sections for _, text in rows}
        for key in (keymap.LIST_KEYS + keymap.LIVE_KEYS + keymap.MAIN_KEYS + keymap.SEARCH_BAR_KEYS
                    + keymap.APP_KEYS):
            assert key.help in listed, key
        assert ". Next match" not in help_screen.text and ". Go to the next match" in help_screen.text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_a_binding_outside_the_table_reaches_the_help_and_the_palette() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        app.bind("y", "bell", description="Ring the bell")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert ("Other", [("y", "Ring the bell")]) in app.screen.sections
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.main)]
        assert "Ring the bell (y)" in titles


async def test_palette_offers_every_action_the_theme_and_recorded_pace_speeds() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        titles = [c.title for c in app.get_system_commands(app.main)]
        assert "Theme" in titles
        for key in keymap.MAIN_KEYS + keymap.APP_KEYS:
            if key.palette:
                assert any(t.startswith(key.label + " (") for t in titles), key
        assert "Pace: recorded gaps x2" in titles and "Pace: fixed 20 ms per chunk" in titles
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"recorded gaps x4")
        palette = app.screen
        await until(app, lambda: palette.query("CommandList")
                    and palette.query_one("CommandList").option_count > 0, "palette hits")
        await pilot.press("enter")
        await until(app, lambda: app.engine.pace.mode == "recorded", "the pace to change")
        assert app.engine.pace.speed == 4.0
        await until(app, lambda: "pace recorded gaps x4" in app.header.text.plain)


async def test_keys_act_on_the_visible_selection_after_focus_moves() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        await pilot.press("down")
        assert app.scripts_view.selected() == (0, 0)
        assert app.call_pane.border_title == "Call #0 of [0] sample-basic-chat"
        await pilot.press("tab")
        assert not app.scripts_view.has_focus
        await pilot.press("down")  # moves in the focused pane, not the scripts
        assert app.scripts_view.selected() == (0, 0)
        await pilot.press("b")
        assert app.engine.breakpoints == frozenset({(0, 0)})
        assert any("call #0 of [0]" in str(n.message) for n in app._notifications)


async def test_search_filters_scripts_and_finds_lines_in_chunks_and_the_log(tmp_path: Path) -> None:
    app = make_app(SAMPLES / "patch-throw-append", serve=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        view = app.scripts_view
        every = view.row_count
        await pilot.press("slash", *"kind:throw")
        await pilot.pause()
        assert view.row_count == 2 and view.locate(1)[1] == 1
        assert "/ kind:throw (1 call)" in str(view.border_title)
        await pilot.press("enter")
        assert view.has_focus
        await pilot.press("down")
        assert view.selected() == (0, 1)
        await pilot.press("slash", *["backspace"] * 10, *"origin:patched")
        await pilot.press("enter")
        assert view.filtered
        await pilot.press("slash", "escape")
        assert not view.filtered and view.row_count == every
        assert view.selected() == (0, 1)  # the selection survives the filter

        # Within the chunks: the matching chunk is marked and . / , jump between matches.
        await pilot.press("slash", *"stop", "enter")
        await pilot.press("down", "right_square_bracket")
        chunks = app.call_pane.query_one(ChunkList)
        chunks.focus()
        await pilot.pause()
        assert chunks.search_text == "stop" and chunks.row_count > 1
        assert "stop" not in chunks.row_text(0).plain
        await pilot.press("full_stop")
        assert "stop" in chunks.row_text(chunks.cursor).plain and chunks.cursor > 0
        # Within the event log (no scripts match "loaded": the log still finds it).
        log = app.live_pane.event_log
        await pilot.press("slash", *["backspace"] * 4, *"loaded", "enter")
        log.focus()
        await pilot.press("home", "comma")
        assert log.row_text(log.cursor).plain.startswith("loaded ")


async def test_enter_opens_a_log_line_and_a_chunk_whole_with_copy(tmp_path: Path) -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        app.main.log_line("warning: " + "a long hint that does not fit one line of the pane " * 4)
        log = app.live_pane.event_log
        await pilot.pause()
        newest = log.row_count - 1 - log.scroll_offset.y
        assert 0 <= newest < log.size.height  # the log follows its newest line
        assert "…" in log.render_line(newest).text  # cut on screen…
        log.focus()
        await pilot.press("end", "enter")
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        assert detail.plain == app.live_pane.lines[-1]  # …whole here
        assert len(detail.plain) > 2 * log.size.width
        await pilot.press("c")
        assert app.clipboard == detail.plain
        await pilot.press("escape")
        # A chunk opens as pretty JSON.
        app.scripts_view.focus()
        await pilot.press("down", "right_square_bracket")
        chunks = app.call_pane.query_one(ChunkList)
        chunks.focus()
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.plain.startswith("{\n  \"type\"")


async def test_break_at_every_chunk_keeps_one_log_line_per_call() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        await pilot.press("3")
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk))
        for served in range(4):
            await until(app, lambda s=served: bool(app.engine.state().bindings)
                        and app.engine.state().bindings[0].status == "paused"
                        and app.engine.state().bindings[0].chunks_served == s, f"pause {served}")
            await pilot.press("n")
        await until(app, lambda: app.engine.state().bindings[0].chunks_served == 4
                    and any("paused before chunk 4" in x for x in app.live_pane.lines), "chunk 4")
        paused = [x for x in app.live_pane.lines if "paused before chunk" in x]
        assert paused == ["s call #0 paused before chunk 4"]
        assert len(app.live_pane.event_log.entries) == len(app.live_pane.lines)
        await pilot.press("1")
        await asyncio.wait_for(reader, 10)
        await sdk.close()


async def test_toasts_leave_the_newest_event_log_lines_visible() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await app.ready.wait()
        await pilot.press("p")  # nothing streams: a warning toast
        await pilot.pause()
        await pilot.pause()
        toasts = list(app.screen.query(Toast))
        assert toasts
        log = app.live_pane.event_log.region
        for toast in toasts:
            assert not toast.region.overlaps(log), (toast.region, log)


async def test_80x24_keeps_live_columns_and_the_editor_usable() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        sdk = client(app, "agent-1")
        await stream_text(sdk)
        await sdk.close()
        await until(app, lambda: bool(app.live_pane.sessions))
        sessions = app.live_pane.query_one(SessionList)
        header = sessions.row_text(0).plain
        assert re.match(r"session\s+cursor\s+state", header)
        assert sessions.region.width >= header.index("state") + len("state")
        assert app.live_pane.sessions[0][:KEY_WIDTH].strip() == "agent-1"
        await pilot.press("down", "o")
        editor = app.screen
        assert isinstance(editor, OverrideEditorScreen)
        await editor.ready.wait()
        await pilot.pause()
        # The kind switch has the focus: its keys, then the editor's (Save and Close live in the
        # footer at 80 columns; the buttons on screen are the form's own).
        assert [label for _, label in footer_keys(editor)] == ["Chunks", "Throw", "Hang", "Save",
                                                                "Close", "Help"]
        for button in editor.query("#oe-append, #oe-remove").results(Button):
            assert on_screen(button, NARROW) and str(button.label) in button.render().plain  # type: ignore[attr-defined]
        box = editor.query_one("#oe-json", TextArea)
        box.focus()
        await pilot.pause()
        assert on_screen(box, NARROW) and box.region.height >= 4
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert [area for area, _ in app.screen.sections] == ["Override editor"]


def test_docs_key_map_is_the_key_table() -> None:
    page = (ROOT / "docs" / "keys.md").read_text(encoding="utf-8")
    assert keymap.readme_with_keymap(page) == page, (
        "docs/keys.md differs from app/keymap.py: run python -m dsh_replay_tui.keymap docs/keys.md")


async def test_a_dialog_shows_its_own_keys_in_the_footer_not_the_screen_below() -> None:
    # The wire chooser, the verdict and the discard question showed the footer of the screen
    # below them (2 Break at calls, b Breakpoint, ^s Save...), keys that do not act there.
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the chooser")
        await pilot.pause()
        assert footer_keys(app.screen) == [("1", "openai"), ("2", "anthropic"), ("3", "responses"),
                                           ("4", "gemini"), ("Esc", "Cancel")]
        await pilot.press("escape")
        await pilot.press("a")
        await until(app, lambda: isinstance(app.screen, VerdictScreen), "the verdict")
        await pilot.pause()
        assert footer_keys(app.screen) == [("Esc", "Close")]
        await pilot.press("escape")
        await pilot.press("down", "o")
        editor = app.screen
        assert isinstance(editor, OverrideEditorScreen)
        await editor.ready.wait()
        await pilot.press("t", "escape")
        await until(app, lambda: isinstance(app.screen, ConfirmDiscardScreen), "the question")
        await pilot.pause()
        assert footer_keys(app.screen) == [("y", "Discard"), ("n", "Keep editing")]
        await pilot.press("y")


def painted(widget: Widget) -> str:
    """The lines a widget paints now."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


async def test_slash_in_the_help_filters_its_keys() -> None:
    # The help is some sixty rows: at 80x24 a third of them show, and nothing found a key.
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("question_mark", "slash")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        for char in "breakpoint":
            await pilot.press(char)
        await pilot.pause()
        assert help_screen.sections == [
            ("Calls", [("b", "Toggle a breakpoint on the selected call.")])]
        assert "Toggle a breakpoint" in painted(help_screen.query_one("#help-table"))
        await pilot.press("enter")  # back to the rows: q closes again
        await pilot.press("q")
        assert app.screen is app.main
        await pilot.press("question_mark", "slash", "z", "z", "z")
        await pilot.pause()
        assert app.screen.sections == []  # type: ignore[attr-defined]
        assert "no key matches 'zzz'" in painted(app.screen.query_one("#help-table"))
        await pilot.press("escape")
        assert app.screen is app.main


async def test_the_main_footer_goes_while_the_palette_is_over_it() -> None:
    # Typing goes to the palette: the main screen's d 2 3 b hints at its foot would not act.
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.pause()
        assert app.main.footer.visible
        await pilot.press("ctrl+p")
        await until(app, lambda: isinstance(app.screen, CommandPalette), "the palette")
        await pilot.pause()
        assert not app.main.footer.visible
        await pilot.press("escape")
        await until(app, lambda: app.screen is app.main, "the main screen")
        await pilot.pause()
        assert app.main.footer.visible
