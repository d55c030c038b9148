"""Hot reload through the real watcher: a changed log swaps scripts in keeping cursors and the
selection; a broken sidecar shows the banner while the last good scripts keep serving."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.app.apptools import LIMIT_S, client, copy_sample, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
ANSWER = "The workspace has README.md and src. Hello!"


def write_atomic(path: Path, text: str) -> None:
    """How editors save: a temp file in the same directory, then a rename."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def reloads(app: object) -> list[str]:
    return [x for x in app.live_pane.lines if x.startswith("reload")]  # type: ignore[attr-defined]


async def test_a_changed_log_reloads_keeping_cursor_and_selection(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await app.watching.wait()
        sdk = client(app, "s")
        await stream_text(sdk)  # call 0 served: cursor 1/2
        await pilot.press("down", "down")  # select call #1
        assert app.scripts_view.selected() == (0, 1)
        log = root / "session.jsonl"
        text = log.read_text(encoding="utf-8").replace("Hello!", "Howdy!")
        write_atomic(log, text.replace('"createdAt":1767225600000', '"createdAt":1767225600001'))
        await until(app, lambda: reloads(app), "the reload")
        # The server's scripts route follows the watcher's reload, headers included.
        async with httpx.AsyncClient(base_url=str(app.url)) as http:
            served = (await http.get("/replay/v1/scripts")).json()
        assert served["headers"]["session.jsonl"]["createdAt"] == 1767225600001
        assert served["scripts"][0]["createdAt"] == 1767225600001
        assert reloads(app) == ["reloaded: [0] sample-basic-chat: +0 added, -0 removed, ~1 changed"]
        assert app.scripts_view.selected() == (0, 1)
        assert "Howdy!" in app.scripts_view.row_text(2).plain
        assert app.engine.state().bindings[0].cursor == 1
        assert not app.banner.showing
        # The agent goes on from its cursor and gets the new text.
        assert await stream_text(sdk) == ANSWER.replace("Hello!", "Howdy!")
        await sdk.close()


async def test_a_broken_sidecar_shows_the_banner_until_a_good_reload(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        await app.watching.wait()
        sidecar = root / "replay.override.json"
        write_atomic(sidecar, json.dumps({"patches": [{"at": 0, "entry": {"kind": "throw",
                                                                              "chunks": []}}]}))
        await until(app, lambda: app.banner.showing, "the banner")
        banner = app.banner.whole.plain
        assert "Reload failed — still serving the last good scripts" in banner
        assert str(sidecar) in banner and "SIDECAR_INVALID" in banner
        assert "patch 0.entry" in banner
        # Still serving the last good scripts.
        sdk = client(app, "s")
        await stream_text(sdk)
        assert await stream_text(sdk) == ANSWER
        # Fixing the file clears the banner and swaps the new scripts in.
        write_atomic(sidecar, json.dumps([{"kind": "chunks", "chunks": [
            {"type": "text-delta", "index": 0, "text": "fixed"},
            {"type": "finish", "reason": {"kind": "stop"}}]}]))
        await until(app, lambda: not app.banner.showing, "the recovery")
        assert app.scripts_view.row_count == 2
        assert "replaced" in app.scripts_view.row_text(1).plain
        assert reloads(app)[-1].startswith("reloaded: [0] sample-basic-chat: +0 added, -1 removed")
        await sdk.close()


async def test_reload_key_and_control_api_reload_now(tmp_path: Path) -> None:
    import httpx

    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root)  # no watcher: only explicit reloads
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        log = root / "session.jsonl"
        log.write_text(log.read_text(encoding="utf-8").replace("Hello!", "Hi!"), encoding="utf-8")
        await pilot.press("l")
        await until(app, lambda: reloads(app), "the reload")
        assert "~1 changed" in reloads(app)[0]
        log.write_text("{not json\n", encoding="utf-8")
        async with httpx.AsyncClient(base_url=app.url or "") as http:
            answer = await http.post("/replay/v1/reload")
        assert answer.status_code == 409 and answer.json()["code"] == "LOG_PARSE"
        assert app.banner.showing and "line 1" in app.banner.whole.plain


async def test_a_scenario_broken_at_start_is_served_once_fixed(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "broken-json-line", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        await app.watching.wait()
        assert app.banner.showing and "Cannot load the scenario" in app.banner.whole.plain
        assert app.scripts_view.row_count == 0
        # Replace the broken log with a good one: the banner goes, the scripts appear.
        write_atomic(root / "session.jsonl",
                     (SAMPLES / "basic-chat" / "session.jsonl").read_text(encoding="utf-8"))
        await until(app, lambda: not app.banner.showing, "the recovery")
        assert app.scripts_view.row_count == 3
        sdk = client(app, "s")
        await stream_text(sdk)
        assert await stream_text(sdk) == ANSWER
        await sdk.close()


async def _banner_focused(app: Any, pilot: Any) -> None:
    """Wait until the banner holds the focus (it takes it once it is displayed)."""
    with anyio.fail_after(LIMIT_S):
        while app.focused is not app.banner:
            await pilot.pause()


async def test_the_focus_the_banner_held_moves_to_the_scripts_once_loaded(tmp_path: Path) -> None:
    # The banner is focused while nothing loads; once it goes, the arrows move the scripts
    # (the focus went nowhere before: no heavy border, and keys acted on nothing).
    root = copy_sample(SAMPLES, "broken-json-line", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await app.watching.wait()
        await _banner_focused(app, pilot)
        write_atomic(root / "session.jsonl",
                     (SAMPLES / "basic-chat" / "session.jsonl").read_text(encoding="utf-8"))
        await until(app, lambda: not app.banner.showing, "the recovery")
        await pilot.pause()
        assert app.focused is app.scripts_view
        await pilot.press("down")
        assert app.scripts_view.selected() == (0, 0)


async def test_a_failed_reload_leaves_the_focus_where_the_user_took_it(tmp_path: Path) -> None:
    # With Live focused (to pick a log line for E), l on a scenario that still does not load
    # pulled the focus back to the banner.
    root = copy_sample(SAMPLES, "broken-json-line", tmp_path)
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _banner_focused(app, pilot)
        await pilot.press("f4")
        assert app.focused is app.live_pane.event_log
        failures = sum("load failed" in x for x in app.live_pane.lines)
        await pilot.press("l")
        await until(app, lambda: sum("load failed" in x for x in app.live_pane.lines) > failures,
                    "the second failure")
        await pilot.pause()
        assert app.focused is app.live_pane.event_log
