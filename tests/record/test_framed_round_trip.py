"""Recording Anthropic Messages and OpenAI Responses agents against a replay server yields
the scenario it served, and replays.

The upstream is the project's own server over conformance scenarios; the agents are real
SDK tool loops with subagents (tests/record/framed_agents.py). The recorded scenario derives
to the upstream's scripts for every call the dialect carries exactly
(tests/record/producible.py), the logs hold the request's user messages and tool results,
and serving the recording to the same agent gives the same answers with every script
consumed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_engine.record import record_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY
from tests.record.framed_agents import FramedAgent, MessagesAgent, ResponsesAgent
from tests.record.producible import messages_producible, responses_producible
from tests.record.recordtools import (
    CORPUS,
    corpus_scenario,
    every_byte,
    log_lines,
    plan_of,
    scripts_json,
)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(CORPUS is None, reason="corpus absent")]

CASES = [
    ("messages", "Aurora__examples__acp-agent__tests__snapshots__advanced-toolchain"),
    ("messages", "Aurora__examples__acp-agent__tests__snapshots__subagent-report"),
    ("responses", "Aurora__examples__acp-agent__tests__snapshots__subagent-spawn"),
    ("responses", "Aurora__apps__cli__tests__snapshots__multi-turn-conversation"),
    ("responses", "Aurora__examples__acp-agent__tests__snapshots__subagent-mixed"),
]
AGENTS: dict[str, type[FramedAgent]] = {"messages": MessagesAgent, "responses": ResponsesAgent}
PRODUCIBLE = {"messages": messages_producible, "responses": responses_producible}


@pytest.mark.parametrize(("dialect", "name"), CASES)
async def test_recording_derives_to_the_served_scripts_and_replays(dialect: str, name: str,
                                                                  tmp_path: Path) -> None:
    source = corpus_scenario(name)
    target = tmp_path / "recorded"
    agent = AGENTS[dialect]
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            transcript = await agent(rec.url, plan_of(source)).run()
        assert upstream.engine.consumed_problems() == []
    assert rec.problems == [] and all(not r.failed for r in rec.reports)
    want, got = scripts_json(source), scripts_json(target)
    assert [len(s) for s in got] == [len(s) for s in want]
    producible = 0
    for i, (w_script, g_script) in enumerate(zip(want, got, strict=True)):
        for j, (w, g) in enumerate(zip(w_script, g_script, strict=True)):
            if w["kind"] == "chunks" and PRODUCIBLE[dialect](w["chunks"]):
                producible += 1
                assert g == w, f"script {i} call {j}"
    assert producible >= 2
    primary = log_lines(target / "session.jsonl")
    users = [e["data"]["content"] for e in primary if e["type"] == "user/message"]
    assert users[0] == "primary: task 1"
    results = [e["data"] for e in primary if e["type"] == "tool/result"]
    tool_turns = sum(1 for _, answer in transcript[:plan_of(source)[0]]
                     if answer.get("stop_reason") == "tool_use"
                     or any(o.get("type") == "function_call" for o in answer.get("output", [])))
    assert bool(results) == bool(tool_turns)
    assert all(isinstance(r["callId"], str) and r["callId"] for r in results)
    steps = [(e["data"]["turn"], e["data"]["step"]) for e in primary if e["type"] == "step/start"]
    assert steps[0] == (1, 1) and len(steps) == plan_of(source)[0]
    assert API_KEY.encode() not in every_byte(target)
    async with serve_scenario(target) as replay:
        again = await agent(replay.url, plan_of(source)).run()
        assert replay.engine.consumed_problems() == []
    assert again == transcript
