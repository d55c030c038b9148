"""The override editor's preview of a long primary script: the calls around the one edited,
the others counted (laying out thousands of rows made ``o`` take seconds)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from dsh_replay_tui.widgets.override_preview import WINDOW, script_text, window_bounds

from replay_engine.authoring.draft import OverrideDraft
from replay_engine.models import ChunksEntry, ScriptEntry
from tests.app.apptools import LIMIT_S, make_app, until
from tests.app.test_first_paint import write_log


def draft(calls: int) -> OverrideDraft:
    derived = []
    for i in range(calls):
        entry = ChunksEntry.model_construct(kind="chunks", chunks=[
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": f"answer {i}"},
            {"type": "finish", "reason": {"kind": "stop"}}])
        derived.append(ScriptEntry(entry=entry, origin="derived", call_key=f"{i + 1}/1"))
    return OverrideDraft(Path("/nonexistent/replay.override.json"), "patches", derived)


def test_the_window_keeps_the_selected_call_in_it_at_either_end() -> None:
    assert window_bounds(10, 3, None) == (0, 10)
    assert window_bounds(10, 3, 5) == (0, 10)
    assert window_bounds(1000, 500, 5) == (495, 506)
    assert window_bounds(1000, 0, 5) == (0, 11)
    assert window_bounds(1000, 999, 5) == (989, 1000)


def test_a_long_script_shows_the_calls_around_the_selected_one_and_counts_the_rest() -> None:
    rows = draft(3191).compare()
    text = script_text(rows, "effective", 1500, window=WINDOW).plain.split("\n")
    assert len(text) == 2 * WINDOW + 1 + 2
    assert text[0] == f"  … {1500 - WINDOW} call(s) above"
    assert text[-1] == f"  … {3191 - 1500 - WINDOW - 1} call(s) below"
    assert text[1 + WINDOW].startswith("  #1500")
    whole = script_text(rows, "effective", 1500).plain.split("\n")
    assert len(whole) == 3191  # without a window (the benchmark's measure), every call


@pytest.mark.anyio
@pytest.mark.parametrize(("size", "layout"), [((80, 24), "-narrow"), ((160, 45), "-wide")])
async def test_o_on_a_long_script_lays_the_editor_out_once_in_its_final_layout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int],
        layout: str) -> None:
    """Every layout of the editor, the first included, has the size's breakpoint class:
    Textual sets it on the first resize, after the first paint, which showed the wide frames
    at 80x24 for a moment on a 3,191-call scenario."""
    write_log(tmp_path / "big" / "session.jsonl", 3191)
    laid_out: list[set[str]] = []
    original = OverrideEditorScreen._refresh_layout

    def spy(screen: OverrideEditorScreen, *args: Any, **kwargs: Any) -> None:
        laid_out.append(set(screen.classes))
        original(screen, *args, **kwargs)

    monkeypatch.setattr(OverrideEditorScreen, "_refresh_layout", spy)
    app = make_app(tmp_path / "big", serve=False)
    async with app.run_test(size=size) as pilot:
        await app.ready.wait()
        await pilot.press("down", "o")
        await until(app, lambda: isinstance(app.screen, OverrideEditorScreen), "the editor")
        editor = app.screen
        assert isinstance(editor, OverrideEditorScreen)
        await asyncio.wait_for(editor.ready.wait(), LIMIT_S)
        await pilot.pause()
        assert laid_out and all(layout in classes for classes in laid_out), laid_out
