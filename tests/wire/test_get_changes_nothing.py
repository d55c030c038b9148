"""A ``GET`` changes nothing on the server: a page on another site can make a browser send one
with no ``Origin`` (an ``<img src>``), so looking a model up lists no model and reading a run's
state, journal or context creates no run."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine.server import ReplayServer
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio


async def test_gets_add_no_model_and_no_run(tmp_path: Path) -> None:
    engine = ReplayEngine(load_scenario(write_scenario(tmp_path / "sc", [text_entry("hi")])).scripts)
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        before = [m.id for m in (await client.models.list()).data]
        for path in ("/v1/models/planted-by-a-page", "/runs/x/v1/models/planted-too",
                     "/sessions/s/v1/models/org/planted", "/runs/x/replay/v1/state",
                     "/runs/y/replay/v1/journal", "/runs/z/v1/responses/resp_1",
                     "/runs/w/replay/v1/scripts", "/runs/v/replay/v1/context/0/0"):
            answer = await http.get(path)  # what an <img src> sends: no Origin, no body
            assert answer.status_code in (200, 404), (path, answer.text)
        looked_up = await client.models.retrieve("planted-by-a-page")
        after = [m.id for m in (await client.models.list()).data]
        await client.close()
    assert looked_up.id == "planted-by-a-page"  # still answered: agents check their model
    assert after == before == ["replay"]
    assert engine.runs() == []
