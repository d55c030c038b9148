"""Upstream failures become what the harness records: the unfinished call in the log, and the
primary's bare-list sidecar deciding it as a throw; a child's failed call is reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from replay_engine.authoring.unfinished import open_draft
from replay_engine.record import record_scenario
from replay_engine.scenario.check import check_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY
from tests.record.rawupstream import (
    Behaviour,
    RawUpstream,
    chat_chunk,
    cut_stream,
    json_answer,
    sse_answer,
    text_events,
)
from tests.record.recordtools import every_byte, log_lines, scripts_json
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

PREFIX = [{"type": "block-start", "index": 0, "blockType": "text"},
          {"type": "text-delta", "index": 0, "text": "par"},
          {"type": "text-delta", "index": 0, "text": "tial"}]


async def attempt(base_url: str, session: str | None, n: int) -> tuple[Any, ...]:
    """Call ``n`` of a session, as an agent that survives failures sees it."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    headers = {"X-Session-Id": session} if session else {}
    text = ""
    try:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"call {n}"}], stream=True,
            extra_headers=headers)
        async for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
        return ("ok", text)
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
        return ("status", exc.status_code, error.get("message"))
    except (openai.APIError, httpx.HTTPError):
        return ("broken", text)
    finally:
        await client.close()


async def test_scripted_failures_record_as_the_sidecar_that_replays_them(tmp_path: Path) -> None:
    entries = [
        text_entry("hello there", parts=2),
        {"kind": "throw", "chunks": [], "message": f"Incorrect API key provided: {API_KEY}",
         "code": "AUTH"},
        {"kind": "throw", "chunks": PREFIX, "message": "slow down", "code": "RATE_LIMIT"},
        text_entry("after the storm", parts=3),
    ]
    source = write_scenario(tmp_path / "source", entries)
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            live = [await attempt(rec.base_url, None, n) for n in range(4)]
    assert live == [("ok", "hello there"),
                    ("status", 401, f"Incorrect API key provided: {API_KEY}"),
                    ("broken", "partial"), ("ok", "after the storm")]
    assert [r.code for r in rec.reports] == [None, "AUTH", "RATE_LIMIT", None]
    sidecar = target / "replay.override.json"
    decided = json.loads(sidecar.read_text(encoding="utf-8"))
    redacted = dict(entries[1], message="Incorrect API key provided: [redacted]")
    assert decided == [entries[0], redacted, entries[2], entries[3]]
    # the form `dsh-replay override` writes, and a scenario that loads
    assert open_draft(target).render() == sidecar.read_text(encoding="utf-8")
    assert check_scenario(str(target)) == ([], [])
    # the log itself holds the two failed calls unfinished, as the harness records them
    events = log_lines(target / "session.jsonl")
    ends = [e["data"] for e in events if e["type"] == "step/end"]
    assert [e.get("error", {}).get("code") for e in ends] == [None, "AUTH", "RATE_LIMIT", None]
    assert API_KEY.encode() not in every_byte(target)
    async with serve_scenario(target) as replay:
        again = [await attempt(replay.url + "/v1", None, n) for n in range(4)]
        assert replay.engine.consumed_problems() == []
    assert again == [live[0], ("status", 401, "Incorrect API key provided: [redacted]"),
                     *live[2:]]


async def test_dropped_connections_and_a_child_failure(tmp_path: Path) -> None:
    behaviours = [
        Behaviour(sse_answer(text_events("one"))),
        Behaviour(json_answer(429, {"error": {"message": "child is rate limited",
                                              "type": "requests", "code": "rate_limit_exceeded"}})),
        cut_stream([chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": "c"})]),
        Behaviour(b""),  # closed before any answer
        cut_stream([chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": "par"})]),
        Behaviour(sse_answer(text_events("done"))),
    ]
    target = tmp_path / "recorded"
    async with RawUpstream(behaviours) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            live = [await attempt(rec.base_url, None, 0),
                    await attempt(rec.base_url, "child-1", 0),
                    await attempt(rec.base_url, "child-1", 1),
                    await attempt(rec.base_url, None, 1),
                    await attempt(rec.base_url, None, 2),
                    await attempt(rec.base_url, None, 3)]
    assert live[0] == ("ok", "one")
    assert live[1] == ("status", 429, "child is rate limited")
    assert live[2] == ("broken", "c")
    del live[1:3]
    assert live[1][:2] == ("status", 502)
    assert live[2] == ("broken", "par")
    assert live[3] == ("ok", "done")
    # the client's headers went upstream as they were, the session id too
    heads = [head.lower() for head, _ in upstream.requests]
    assert all(f"authorization: bearer {API_KEY}".lower() in h for h in heads)
    assert "x-session-id: child-1" in heads[1] and "x-session-id: child-1" in heads[2]
    # the child's failures cannot be decided by a sidecar: reported, naming the calls
    before, broken = rec.problems
    assert "session.1.jsonl" in before and "call #0 (model call 1/1)" in before
    assert "child-1" in before and "RATE_LIMIT" in before and "no such call" in before
    assert "call #1 (model call 2/1)" in broken and "NETWORK" in broken
    assert "will not load" in broken
    problems, _ = check_scenario(str(target))
    assert len(problems) == 1 and "2/1" in problems[0]
    decided = json.loads((target / "replay.override.json").read_text(encoding="utf-8"))
    assert [e["kind"] for e in decided] == ["chunks", "throw", "throw", "chunks"]
    assert decided[1]["code"] == "HTTP_502" and "did not answer" in decided[1]["message"]
    assert decided[2]["code"] == "NETWORK"
    assert decided[2]["chunks"] == PREFIX[:2]
    assert API_KEY.encode() not in every_byte(target)
    # without the child's log the primary replays the same failures
    (target / "session.1.jsonl").unlink()
    async with serve_scenario(target) as replay:
        again = [await attempt(replay.url + "/v1", None, n) for n in range(4)]
        assert replay.engine.consumed_problems() == []
    assert again == live
    assert scripts_json(target)[0][0]["chunks"][-1] == {"type": "finish", "reason": {"kind": "stop"}}
