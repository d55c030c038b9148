"""``GET /replay/v1/context/{script}/{call}`` takes indices from 0: a negative or non-integer
index is a typed JSON error naming it (``-1`` is not the last script), a script index past the
scripts is 404, and the engine answers no context for a negative index either."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine.server import ReplayServer
from tests.unit.logtools import call_events, header, text_chunks, write_scenario

pytestmark = pytest.mark.anyio


def _engine(tmp_path: Path) -> ReplayEngine:
    events = [{"type": "user/message", "seq": 0, "time": 1, "data": {"content": "hello"}},
              *call_events(1, 1, text_chunks("hi"), seq=1, time=2)]
    return ReplayEngine(load_scenario(write_scenario(tmp_path / "sc", (header("p"), events)))
                        .scripts)


@pytest.mark.parametrize(("path", "index", "value"), [
    ("/replay/v1/context/-1/0", "script", "-1"),
    ("/replay/v1/context/0/-1", "call", "-1"),
    ("/runs/r/replay/v1/context/x/0", "script", "x"),
    ("/replay/v1/context/0/1e3", "call", "1e3"),
    ("/replay/v1/context/%EF%BC%91/0", "script", "１"),  # a full-width digit is no index
])
async def test_a_bad_index_is_a_typed_error_naming_it(
        tmp_path: Path, path: str, index: str, value: str) -> None:
    async with ReplayServer(_engine(tmp_path)) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        answer = await http.get(path)
    assert answer.status_code == 400 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["ok"] is False and body["code"] == "INVALID_INDEX" and body["index"] == index
    assert f"{index} index {value!r}" in body["error"]


async def test_good_indices_answer_and_a_script_past_the_end_is_404(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        found = (await http.get("/replay/v1/context/0/0")).json()
        missing = await http.get("/replay/v1/context/1/0")
    assert found["context"] == [{"role": "user", "text": "hello", "toolCallId": None}]
    assert missing.status_code == 404 and missing.json()["index"] == "script"
    assert engine.recorded_context(-1, 0) is None  # not the last script's
