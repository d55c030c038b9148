"""``record --format v4`` writes ``session[.N].v4.jsonl`` logs (docs/format.md#generations) that derive to
exactly the scripts the v1 recording of the same traffic derives to, validate, and replay.

The upstream is the project's own server over conformance scenarios (or a raw upstream for
failures); the agents are real openai / anthropic SDK tool loops with subagents.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_engine.cli.dispatch import main
from replay_engine.record import record_scenario
from replay_engine.scenario.check import check_scenario
from replay_engine.scenario.loading import load_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY, Agent
from tests.record.framed_agents import MessagesAgent
from tests.record.rawupstream import Behaviour, RawUpstream, json_answer, sse_answer, text_events
from tests.record.recordtools import CORPUS, corpus_scenario, every_byte, log_lines, plan_of, scripts_json
from tests.record.test_failures import PREFIX, attempt
from tests.wire.wire_helpers import sdk_stream, text_entry, write_scenario

pytestmark = pytest.mark.anyio

CASES = [
    ("openai", "Aurora__examples__acp-agent__tests__snapshots__subagent-spawn"),
    ("messages", "Aurora__examples__acp-agent__tests__snapshots__advanced-toolchain"),
]


async def _agent_run(kind: str, base: str, plan: list[int]) -> list[tuple[str, dict[str, Any]]]:
    if kind == "openai":
        return await Agent(base + "/v1", plan).run()
    return await MessagesAgent(base, plan).run()


def _settlements(path: Path) -> list[dict[str, Any]]:
    return [e for e in log_lines(path) if e["type"] in ("assistant/message", "assistant/attempt")]


@pytest.mark.skipif(CORPUS is None, reason="corpus absent")
@pytest.mark.parametrize(("kind", "name"), CASES)
async def test_v4_recording_derives_to_the_v1_recordings_scripts(kind: str, name: str,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]
                                                                 ) -> None:
    source = corpus_scenario(name)
    plan = plan_of(source)
    recorded: dict[str, Path] = {}
    transcripts = {}
    async with serve_scenario(source) as upstream:
        for log_format in ("v1", "v4"):
            target = tmp_path / log_format
            async with record_scenario(target, upstream.url, log_format=log_format) as rec:
                transcripts[log_format] = await _agent_run(kind, rec.url, plan)
            assert rec.problems == [] and all(not r.failed for r in rec.reports)
            assert upstream.engine.consumed_problems() == []
            recorded[log_format] = target
            upstream.engine.reset()
    v1, v4 = recorded["v1"], recorded["v4"]
    assert transcripts["v1"] == transcripts["v4"]
    assert scripts_json(v4) == scripts_json(v1)
    names = {p.name for p in v4.iterdir() if p.name.startswith("session")}
    assert names == {"session.v4.jsonl"} | {f"session.{n}.v4.jsonl" for n in range(1, len(plan))}
    scenario = load_scenario(v4)
    assert scenario.ignored == []
    assert [s.recorded_id for s in scenario.scripts[1:]] == [
        s.recorded_id for s in load_scenario(v1).scripts[1:]]
    # the v4 shape: a versioned header, one settlement per call, compact stream records
    for n, calls in enumerate(plan):
        log = v4 / ("session.v4.jsonl" if n == 0 else f"session.{n}.v4.jsonl")
        lines = log_lines(log)
        assert lines[0]["version"] == 4 and lines[0]["isSeeded"] is False
        assert "seedLength" not in lines[0]
        assert not {"assistant/chunk", "text-chunks"} & {e["type"] for e in lines[1:]}
        settled = _settlements(log)
        assert len(settled) == calls
        assert all(e["type"] == "assistant/message" for e in settled)
        records = {r["type"] for e in settled for r in e["data"]["stream"]}
        assert {"chunk", "text-chunks"} <= records
        assert [e["seq"] for e in lines[1:]] == list(range(len(lines) - 1))
    assert API_KEY.encode() not in every_byte(v4)
    assert main(["validate", str(v4)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ok   {v4}\n") and "session.v4.jsonl (v4)" in out
    async with serve_scenario(v4) as replay:
        again = await _agent_run(kind, replay.url, plan)
        assert replay.engine.consumed_problems() == []
    assert again == transcripts["v4"]


async def test_v4_failures_are_attempts_the_same_sidecar_decides(tmp_path: Path) -> None:
    entries = [
        text_entry("hello there", parts=2),
        {"kind": "throw", "chunks": [], "message": "Incorrect API key provided", "code": "AUTH"},
        {"kind": "throw", "chunks": PREFIX, "message": "slow down", "code": "RATE_LIMIT"},
        text_entry("after the storm", parts=3),
    ]
    source = write_scenario(tmp_path / "source", entries)
    live = {}
    async with serve_scenario(source) as upstream:
        for log_format in ("v1", "v4"):
            async with record_scenario(tmp_path / log_format, upstream.url,
                                       log_format=log_format) as rec:
                live[log_format] = [await attempt(rec.base_url, None, n) for n in range(4)]
            upstream.engine.reset()
    v1, v4 = tmp_path / "v1", tmp_path / "v4"
    assert live["v4"] == live["v1"]
    sidecar = "replay.override.json"
    assert (v4 / sidecar).read_bytes() == (v1 / sidecar).read_bytes()
    assert scripts_json(v4) == scripts_json(v1)
    assert check_scenario(str(v4)) == ([], [])
    settled = _settlements(v4 / "session.v4.jsonl")
    assert [e["type"] for e in settled] == ["assistant/message", "assistant/attempt",
                                           "assistant/attempt", "assistant/message"]
    finishes = [e["data"]["stream"][-1]["chunk"] for e in settled]
    assert finishes[1] == {"type": "finish", "reason": {"kind": "error", "failure": {
        "message": "Incorrect API key provided", "code": "AUTH"}}}
    assert finishes[2]["reason"]["failure"]["code"] == "RATE_LIMIT"
    # without its sidecar the v4 log still loads: each failure is an error finish
    (v4 / sidecar).unlink()
    derived = scripts_json(v4)[0]
    assert [e["chunks"][-1]["reason"]["kind"] for e in derived] == ["stop", "error", "error",
                                                                    "stop"]
    assert derived[2]["chunks"][:-1] == PREFIX


async def test_a_v4_childs_failure_loads_and_is_noted(tmp_path: Path) -> None:
    behaviours = [
        Behaviour(sse_answer(text_events("one"))),
        Behaviour(json_answer(429, {"error": {"message": "child is rate limited",
                                              "type": "requests", "code": "rate_limit_exceeded"}})),
    ]
    target = tmp_path / "recorded"
    async with RawUpstream(behaviours) as upstream:
        async with record_scenario(target, upstream.url, log_format="v4") as rec:
            assert await attempt(rec.base_url, None, 0) == ("ok", "one")
            assert (await attempt(rec.base_url, "child-1", 0))[:2] == ("status", 429)
    assert rec.problems == []
    note = rec.reports[1].problem
    assert note is not None and "session.1.v4.jsonl" in note and "1/1" in note
    assert "error finish" in note
    assert check_scenario(str(target)) == ([], [])
    [child] = scripts_json(target)[1]
    assert child["chunks"] == [{"type": "finish", "reason": {"kind": "error", "failure": {
        "message": "child is rate limited", "code": "RATE_LIMIT"}}}]


async def test_the_record_command_takes_format_v4(tmp_path: Path) -> None:
    import openai

    source = write_scenario(tmp_path / "source", [text_entry("first answer", parts=2)])
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(target), "--upstream",
            upstream.url, "--port", "0", "--format", "v4", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
            client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-x", max_retries=0)
            await sdk_stream(client, None)
            await client.close()
            proc.terminate()
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 0
    assert "(session.v4.jsonl)" in out.decode()
    assert [p.name for p in target.glob("session*")] == ["session.v4.jsonl"]
    assert scripts_json(target) == [[text_entry("first answer", parts=2)]]
    assert json.loads((target / "session.v4.jsonl").read_text().splitlines()[0])["version"] == 4


def test_an_unknown_format_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["record", str(tmp_path / "x"), "--upstream", "http://127.0.0.1:9",
              "--format", "v3"])
    assert exc.value.code == 2
    assert "--format" in capsys.readouterr().err and not (tmp_path / "x").exists()
