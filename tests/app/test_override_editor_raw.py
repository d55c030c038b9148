"""A sidecar that does not load opens in the editor as text beside every problem it has: typing a
fix is checked as you type, Ctrl+S writes the text atomically only once it is valid, and the
debugger reloads the scenario it fixed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dsh_replay_tui.headless.override_edits import RAW_HELP
from dsh_replay_tui.screens.override_confirm import ConfirmDiscardScreen
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from dsh_replay_tui.widgets.raw_sidecar import RawSidecarPane
from textual.widgets import Button, OptionList, TextArea

from replay_engine import load_scenario, open_raw_sidecar
from tests.app.apptools import copy_sample, make_app
from tests.app.apptools import until as until_flush
from tests.app.test_override_editor import SIDE, Host, opened, text_of, until
from tests.conftest import SAMPLES
from tests.unit.enginetools import sidecar_bytes

pytestmark = pytest.mark.anyio
FIXED = sidecar_bytes({"patches": [{"at": 0, "entry": {"kind": "hang"}}]}).decode()


def broken(tmp_path: Path, text: str | None = None) -> Path:
    """The broken-sidecar sample (a sidecar with eight problems), or its log with ``text`` as
    the sidecar."""
    root = copy_sample(SAMPLES, "broken-sidecar", tmp_path)
    if text is not None:
        (root / SIDE).write_text(text, encoding="utf-8")
    return root


def problems_listed(pane: RawSidecarPane) -> list[str]:
    listed = pane.query_one("#rs-problems", OptionList)
    return [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]


async def replace_text(pane: RawSidecarPane, text: str) -> None:
    area = pane.query_one("#rs-text", TextArea)
    area.select_all()
    area.replace(text, *area.selection)
    await pane.check()  # what the typing pause would run; the test does not wait for it


class Renames:
    """Records every rename of a save (an atomic write ends with one), then does it."""

    def __init__(self) -> None:
        self.done: list[tuple[str, str]] = []

    def __call__(self, src: str, dst: str) -> None:
        self.done.append((src, dst))
        os.replace(src, dst)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])
async def test_every_problem_is_listed_and_only_a_valid_text_is_written(
        tmp_path: Path, size: tuple[int, int]) -> None:
    root = broken(tmp_path)
    old = (root / SIDE).read_bytes()
    want = open_raw_sidecar(root).problems(old.decode())
    assert len(want) == 8
    renames = Renames()
    app = Host(lambda: OverrideEditorScreen.for_directory(root, rename=renames))
    async with app.run_test(size=size) as pilot:
        screen = await opened(app, pilot)
        pane = screen.raw
        assert pane is not None and screen.draft is None and screen.HELP_NOTE == RAW_HELP
        assert isinstance(app.focused, TextArea)
        assert problems_listed(pane) == [f"line {p.line}, column {p.column}: {p.location}: "
                                         f"{p.message}" for p in want]
        assert "line 12, column 13: patch 1.at: must be an integer >= 0" in problems_listed(pane)
        assert "✗ 8 problem(s)" in text_of(screen, "#rs-count")
        assert screen.query_one("#oe-save", Button).disabled
        assert f"{root / SIDE} does not load" in text_of(screen, "#oe-title")
        # Enter on a problem puts the cursor on it.
        listed = pane.query_one("#rs-problems", OptionList)
        listed.focus()
        listed.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert pane.query_one("#rs-text", TextArea).cursor_location == (11, 12)
        # Still invalid: nothing is written.
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Not saved" in text_of(screen, "#oe-status"))
        assert "8 problem(s), the first at line 5, column 16: patch 0.entry.code" in text_of(
            screen, "#oe-status")
        await replace_text(pane, FIXED.replace('"hang"', '"sleep"'))
        assert problems_listed(pane) == [
            "line 5, column 16: patch 0.entry: kind 'sleep' is not one of chunks, throw, hang"]
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert renames.done == [] and (root / SIDE).read_bytes() == old
        # Typing a fix enables save; the text is written as typed, the old file kept.
        await replace_text(pane, FIXED)
        await pilot.pause()
        assert not screen.query_one("#oe-save", Button).disabled
        assert "✓ no problem" in text_of(screen, "#rs-count")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_text(encoding="utf-8") == FIXED
    assert (root / (SIDE + ".bak")).read_bytes() == old
    assert [Path(dst).name for _, dst in renames.done] == [SIDE + ".bak", SIDE]
    assert all(Path(src).parent == root and Path(src).name != SIDE for src, _ in renames.done)
    assert screen.saved is not None and screen.saved.is_current()
    assert [e.entry.kind for e in load_scenario(root).scripts[0].entries] == ["hang"]


async def test_invalid_json_opens_at_its_error_and_changes_are_asked_about(tmp_path: Path) -> None:
    root = broken(tmp_path, '{"patches": [\n  {"at": 0,\n}\n')
    app = Host(lambda: OverrideEditorScreen.for_directory(root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        assert screen.raw is not None
        assert problems_listed(screen.raw) == [
            "line 3, column 1: not valid JSON (Expecting property name enclosed in double "
            "quotes)"]
        await pilot.press("end", "x")
        assert screen.has_unsaved_changes
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDiscardScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.results == [False])
    assert (root / SIDE).read_text(encoding="utf-8") == '{"patches": [\n  {"at": 0,\n}\n'


async def test_typing_is_checked_again_after_a_pause(tmp_path: Path) -> None:
    root = broken(tmp_path, "[")
    app = Host(lambda: OverrideEditorScreen.for_directory(root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        pane = screen.raw
        assert pane is not None and not pane.valid
        await pilot.press("end", "]")
        await until(pilot, lambda: pane.valid)  # the debounced check ran on its own
        assert not screen.query_one("#oe-save", Button).disabled
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_text(encoding="utf-8") == "[]"


async def test_o_in_the_debugger_fixes_the_sidecar_and_the_scenario_reloads(
        tmp_path: Path) -> None:
    root = broken(tmp_path)
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        assert app.scenario is None and app.banner.showing
        assert "press o to fix the sidecar" in str(app.banner.render())
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OverrideEditorScreen)
                    and app.screen.ready.is_set())
        editor = app.screen
        assert isinstance(editor, OverrideEditorScreen) and editor.raw is not None
        assert len(problems_listed(editor.raw)) == 8
        await replace_text(editor.raw, FIXED)
        await pilot.press("ctrl+s")
        await until_flush(app, lambda: app.scenario is not None, "the reload")
        assert not app.banner.showing and app.screen is app.main
        assert app.engine.scripts[0].entries[0].entry.kind == "hang"


async def test_tab_to_the_problems_highlights_one_enter_jumps_and_typing_goes_to_the_text(
        tmp_path: Path) -> None:
    root = broken(tmp_path)
    app = Host(lambda: OverrideEditorScreen.for_directory(root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        pane = screen.raw
        assert pane is not None
        area = pane.query_one("#rs-text", TextArea)
        listed = pane.query_one("#rs-problems", OptionList)
        while not listed.has_focus:  # Tab, as a user would, until the list has focus
            await pilot.press("tab")
        assert listed.highlighted == 0
        await pilot.press("down", "enter")
        second = pane.problems[1]
        await until(pilot, lambda: area.has_focus)
        assert area.cursor_location == (second.line - 1, second.column - 1)
        listed.focus()
        await pilot.pause()
        before = area.text
        await pilot.press("z")
        await until(pilot, lambda: area.text != before)
        assert area.has_focus and len(area.text) == len(before) + 1
