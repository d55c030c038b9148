"""The override editor opened on a scenario directory that does not load because a primary call
never finished: it opens on that call, refuses to save until it is decided, then writes the bare
list that makes the scenario load and serve the decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dsh_replay_tui.screens.override_editor import OverrideEditorScreen
from textual.widgets import Button, Input, TextArea

from replay_engine import load_scenario
from replay_engine.errors import DerivationError
from tests.app.test_override_editor import (
    SIDE,
    Host,
    opened,
    serve_after_reload,
    set_json,
    text_of,
    throw,
    type_into,
    until,
)
from tests.conftest import SAMPLES
from tests.unit.enginetools import sidecar_bytes
from tests.unit.test_authoring_unfinished import AGA, HI

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "broken-unfinished-call"
    shutil.copytree(SAMPLES / "broken-unfinished-call", target)
    return target


async def test_opens_on_the_unfinished_call_and_saves_the_throw(root: Path) -> None:
    with pytest.raises(DerivationError):
        load_scenario(root)
    app = Host(lambda: OverrideEditorScreen.for_directory(root))
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert screen.index == 1 and screen.draft is not None and screen.draft.form == "list"
        assert screen.query_one("#oe-index", Input).value == "1"
        assert screen.query_one("#oe-prefix", Input).value == "2"  # all it streamed
        assert "never finished while recorded" in text_of(screen, "#oe-status")
        assert "#1 (1/2)" in text_of(screen, "#oe-status")
        assert "1 unfinished call(s) to decide (this one never finished)" in text_of(
            screen, "#oe-title")
        # The line under the entry JSON does not call it valid while ^s refuses it.
        assert text_of(screen, "#oe-json-status") == (
            "✗ never finished: pick throw or hang, or end its chunks with a finish")
        await pilot.press("ctrl+s")
        await pilot.pause()
        status = text_of(screen, "#oe-status")
        assert status.startswith(f"Not saved: {root / SIDE}: not saved: call #1 (model call 1/2, "
                                 "log lines 9-10)")
        assert app.results == [] and not (root / SIDE).exists()
        await throw(pilot, "connection reset", "SERVER")
        assert "call #1 now throws SERVER after 2 chunk(s)." == text_of(screen, "#oe-status")
        assert "to decide" not in text_of(screen, "#oe-title")
        assert text_of(screen, "#oe-json-status") == "✓ valid entry"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    want = sidecar_bytes([{"kind": "chunks", "chunks": HI},
                      {"kind": "throw", "chunks": AGA, "message": "connection reset",
                       "code": "SERVER"}])
    assert (root / SIDE).read_bytes() == want
    assert screen.saved is not None and screen.saved.data == want
    assert await serve_after_reload(root, 2) == [(HI, None), (AGA, "SERVER")]


async def test_the_recorded_text_in_the_pane_does_not_decide_the_call(root: Path) -> None:
    app = Host(lambda: OverrideEditorScreen.for_directory(root, 0))
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert screen.index == 0 and screen.query_one("#oe-prefix", Input).value == "0"
        await type_into(pilot, "#oe-index", "1")
        await pilot.pause()
        assert screen.index == 1 and screen.query_one("#oe-prefix", Input).value == "2"
        assert screen.draft is not None and list(screen.draft.undecided) == [1]
        finished = [*AGA, {"type": "finish", "reason": {"kind": "stop"}}]
        area = screen.query_one("#oe-json", TextArea)
        assert area.text.startswith("{")
        await set_json(pilot, screen, json.dumps({"kind": "chunks", "chunks": finished}))
        assert screen.draft.undecided == {}
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.results == [True])
    assert (root / SIDE).read_bytes() == sidecar_bytes([{"kind": "chunks", "chunks": HI},
                                                    {"kind": "chunks", "chunks": finished}])
    assert (await serve_after_reload(root, 2))[1] == (finished, None)


async def test_other_load_errors_are_shown_not_raised(tmp_path: Path) -> None:
    target = tmp_path / "broken-json-line"
    shutil.copytree(SAMPLES / "broken-json-line", target)
    app = Host(lambda: OverrideEditorScreen.for_directory(target))
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await opened(app, pilot)
        assert screen.draft is None
        assert "the sidecar cannot be edited" in text_of(screen, "#oe-title")
        assert f"{target / 'session.jsonl'}:5" in text_of(screen, "#oe-status")
        assert screen.query_one("#oe-save", Button).disabled
        await pilot.press("escape")
        await until(pilot, lambda: app.results == [False])
    assert sorted(p.name for p in target.iterdir()) == ["session.jsonl"]
