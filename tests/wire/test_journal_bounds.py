"""What the server keeps of each call and each run is bounded: the journal holds a digest and a
bounded excerpt of a request's messages (refused calls too), the verdict's divergence and the
debugger's Request view still read right from it, and the oldest finished runs are evicted
past the run limit while a run in use never is."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine.context import diff_context, live_new_messages, recorded_context
from replay_engine.excerpt import EXCERPT_BUDGET, EXCERPT_TEXT
from replay_engine.jsonlimits import encode_json
from replay_engine.server import ReplayServer
from tests.unit.logtools import call_events, header, text_chunks, write_scenario

pytestmark = pytest.mark.anyio
LONG = "".join(f"line {n}: the tool printed this\n" for n in range(2000))  # ~60 KB


def _scenario(root: Path) -> Path:
    """One recorded call answering a long user message."""
    events = [{"type": "user/message", "seq": 0, "time": 1, "data": {"content": LONG}},
              *call_events(1, 1, text_chunks("read it"), seq=1, time=2)]
    return write_scenario(root, (header("p"), events))


async def _journal(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url) as http:
        calls: list[dict[str, Any]] = (await http.get("/replay/v1/journal")).json()["calls"]
    return calls


async def test_a_huge_request_is_journaled_as_a_digest_and_a_bounded_excerpt(
        tmp_path: Path) -> None:
    engine = ReplayEngine(load_scenario(_scenario(tmp_path / "sc")).scripts)
    async with ReplayServer(engine) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        history = [{"role": "user", "content": f"old {n} " + "h" * 5000} for n in range(200)]
        messages = [*history, {"role": "assistant", "content": "ok"},
                    {"role": "user", "content": LONG}]
        await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        with pytest.raises(openai.ConflictError):  # past the recording: refused, journaled too
            await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        await client.close()
        calls = await _journal(server.url)
    whole = encode_json(messages)
    assert [c["outcome"] for c in calls] == ["finished", "refused"]
    for call in calls:
        assert call["messagesDigest"] == hashlib.sha256(whole).hexdigest()
        assert call["messagesBytes"] == len(whole) and call["messagesCut"] is True
        assert len(json.dumps(call["messages"])) < 2 * EXCERPT_BUDGET  # not 1 MB
        kept = call["messages"]
        assert isinstance(kept[0], str) and kept[0].startswith("…[cut: ")  # oldest dropped
        assert kept[-2] == {"role": "assistant", "content": "ok"}  # newest kept
        new_text = kept[-1]["content"]
        assert new_text.startswith(LONG[:EXCERPT_TEXT]) and "more characters; sha256" in new_text
        assert call["divergence"] is None or call["outcome"] == "refused"


async def test_the_request_view_and_the_verdict_read_a_cut_request_right(tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path / "sc"))
    engine = ReplayEngine(scenario.scripts)
    recorded = recorded_context(scenario.scripts[0], 0)
    assert recorded is not None
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        same = await http.post("/runs/same/v1/chat/completions",
                               json={"messages": [{"role": "user", "content": LONG}]})
        changed = await http.post("/runs/changed/v1/chat/completions",
                                  json={"messages": [{"role": "user", "content": LONG + "!"}]})
        assert same.status_code == changed.status_code == 200
        faithful = engine.journal("same")[0]
        left = engine.journal("changed")[0]
        verdict = (await http.post("/runs/changed/replay/v1/assert-consumed")).json()
    assert faithful.messages_cut and left.messages_cut
    # the debugger's Request view: live (cut) against recorded, row by row
    assert [row[0] for row in diff_context(live_new_messages(faithful.messages), recorded)] \
        == ["="]
    assert [row[0] for row in diff_context(live_new_messages(left.messages), recorded)] == ["≠"]
    # the verdict compared the whole request, not the excerpt
    assert faithful.divergence is None
    assert left.divergence is not None and left.divergence.kind == "user-differs"
    assert verdict["firstDivergence"] is not None


async def test_small_requests_are_journaled_whole(tmp_path: Path) -> None:
    engine = ReplayEngine(load_scenario(_scenario(tmp_path / "sc")).scripts)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        await http.post("/v1/chat/completions", json={"messages": messages})
        call = (await _journal(server.url))[0]
    assert call["messages"] == messages and call["messagesCut"] is False
    assert call["messagesBytes"] == len(encode_json(messages))


async def test_the_oldest_finished_runs_are_evicted_and_a_run_in_use_never_is(
        tmp_path: Path) -> None:
    events = [*call_events(1, 1, text_chunks("one"), seq=0),
              *call_events(2, 1, text_chunks("two"), seq=10)]
    scenario = write_scenario(tmp_path / "sc", (header("p"), events))
    engine = ReplayEngine(load_scenario(scenario).scripts, run_limit=5, pace_ms=0)
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        engine.set_mode("call", run="busy")  # the busy run's call holds at the step gate
        async with http.stream("POST", "/runs/busy/v1/chat/completions",
                               json={"messages": [], "stream": True}) as held:
            with anyio.fail_after(10):
                while engine.paused_sessions("busy") != [None]:
                    await anyio.sleep(0.01)
            for n in range(20):
                answer = await http.post(f"/runs/r{n}/v1/chat/completions", json={"messages": []})
                assert answer.status_code == 200
            runs = engine.runs()
            assert len(runs) <= 5 + 1  # the limit, and the default run is never counted out
            assert "busy" in runs  # in use: a call in flight
            assert "r19" in runs and "r0" not in runs  # the newest kept, the oldest gone
            assert engine.step(None, run="busy", how="continue")
            async for _ in held.aiter_bytes():
                pass
        state = (await http.get("/runs/busy/replay/v1/state")).json()
    assert state["bindings"][0]["cursor"] == 1  # its binding survived the evictions


async def test_a_retry_of_a_long_request_is_still_seen_by_its_content(tmp_path: Path) -> None:
    from tests.wire.wire_helpers import text_entry
    from tests.wire.wire_helpers import write_scenario as write_sidecar_scenario

    throw = {"kind": "throw", "chunks": [], "message": "busy", "code": "RATE_LIMIT"}
    root = write_sidecar_scenario(tmp_path / "sc", [throw, text_entry("done")])
    engine = ReplayEngine(load_scenario(root).scripts)
    body = {"messages": [{"role": "user", "content": LONG}]}
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        failed = await http.post("/v1/chat/completions", json=body)
        retried = await http.post("/v1/chat/completions", json=body)
    assert failed.status_code == 429 and retried.status_code == 200
    assert [r.retry_detected for r in engine.journal()] == [False, True]
