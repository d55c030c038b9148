"""``--pack`` writes runs of deltas as packed rows (docs/format.md#session-logs) that derive to the same
scripts; a ``stream: false`` call is recorded too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from replay_engine.record import record_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY, Agent
from tests.record.recordtools import CORPUS, corpus_scenario, every_byte, log_lines, plan_of, scripts_json
from tests.wire.wire_helpers import deepseek_producible, text_entry, write_scenario

pytestmark = pytest.mark.anyio

NAME = "Aurora__examples__acp-agent__tests__snapshots__subagent-spawn"


@pytest.mark.skipif(CORPUS is None, reason="corpus absent")
async def test_packed_rows_derive_to_the_same_scripts(tmp_path: Path) -> None:
    source = corpus_scenario(NAME)
    recorded = {}
    async with serve_scenario(source) as upstream:
        for pack in (False, True):
            target = tmp_path / ("packed" if pack else "plain")
            async with record_scenario(target, upstream.url, pack=pack) as rec:
                await Agent(rec.base_url, plan_of(source)).run()
            recorded[pack] = target
            upstream.engine.reset()
    packed, plain = recorded[True], recorded[False]
    kinds = {e["type"] for log in packed.glob("session*.jsonl") for e in log_lines(log)}
    assert {"reasoning-chunks", "text-chunks", "tool-call-chunks"} <= kinds
    assert "text-chunks" not in {e["type"] for e in log_lines(plain / "session.jsonl")}
    assert len(log_lines(packed / "session.jsonl")) < len(log_lines(plain / "session.jsonl")) / 3
    assert scripts_json(packed) == scripts_json(plain)
    for want, got in zip(scripts_json(source), scripts_json(packed), strict=True):
        for w, g in zip(want, got, strict=True):
            if deepseek_producible(w["chunks"]):
                assert g == w
    assert API_KEY.encode() not in every_byte(packed)


async def test_a_non_streaming_call_is_recorded(tmp_path: Path) -> None:
    entry = text_entry("whole answer at once", parts=4)
    source = write_scenario(tmp_path / "source", [entry])
    target = tmp_path / "recorded"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url) as rec, httpx.AsyncClient() as http:
            live = (await http.post(rec.base_url + "/chat/completions", json=body)).json()
    [[recorded]] = scripts_json(target)
    assert recorded["chunks"][1] == {"type": "text-delta", "index": 0,
                                     "text": "whole answer at once"}
    async with serve_scenario(target) as replay, httpx.AsyncClient() as http:
        again = (await http.post(replay.url + "/v1/chat/completions", json=body)).json()
    assert again["choices"] == live["choices"] and again["usage"] == live["usage"]
