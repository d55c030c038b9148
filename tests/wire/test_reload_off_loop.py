"""``POST /replay/v1/reload`` loads the scenario in a worker thread and swaps it in at once:
while a (slow) load runs, streams and every other route go on with the scripts served before;
a load that fails leaves them served."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from replay_engine.scenario.loading import Scenario, load_scenario
from replay_engine.server import runner, serve_scenario
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio


def _held_loads(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the server's reloads wait for ``release`` (``started`` is set when one begins)."""
    started, release = threading.Event(), threading.Event()
    real = load_scenario

    def held(path: Any, **kwargs: Any) -> Scenario:
        started.set()
        assert release.wait(30), "the test never released the load"
        return real(path, **kwargs)

    monkeypatch.setattr(runner, "load_scenario", held)  # what reload_scenario calls
    return started, release


async def test_a_slow_reload_holds_no_stream_and_swaps_in_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_scenario(tmp_path / "sc", [text_entry("one two three four", parts=4)] * 2)
    async with serve_scenario(root, pace_ms=1) as server, \
            httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        started, release = _held_loads(monkeypatch)
        (root / "replay.override.json").write_text(json.dumps([text_entry("new")] * 3))
        async with anyio.create_task_group() as tg:
            answers: list[httpx.Response] = []

            async def reload() -> None:
                answers.append(await http.post("/replay/v1/reload"))

            tg.start_soon(reload)
            with anyio.fail_after(10):
                while not started.is_set():
                    await anyio.sleep(0.01)
            # the load is under way in its thread: the loop still serves, the old scripts
            streamed = await http.post("/v1/chat/completions", json={"messages": [],
                                                                      "stream": True})
            scripts = (await http.get("/replay/v1/scripts")).json()["scripts"]
            release.set()
        assert streamed.status_code == 200 and "four" in streamed.text
        assert len(scripts[0]["entries"]) == 2
        assert answers[0].status_code == 200 and answers[0].json()["ok"] is True
        assert answers[0].json()["changes"][0]["added"] == 1
        after = (await http.get("/replay/v1/scripts")).json()["scripts"]
        assert len(after[0]["entries"]) == 3


async def test_a_reload_that_fails_keeps_the_scripts_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_scenario(tmp_path / "sc", [text_entry("kept")])
    async with serve_scenario(root) as server, \
            httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        (root / "replay.override.json").write_text("{not json")
        failed = await http.post("/replay/v1/reload")
        answer = await http.post("/v1/chat/completions", json={"messages": []})
    assert failed.status_code == 409 and failed.json()["code"] == "SIDECAR_INVALID"
    assert answer.json()["choices"][0]["message"]["content"] == "kept"
