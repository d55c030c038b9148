"""Recording an agent against a replay server yields the scenario it served, and replays.

The upstream is the project's own server over conformance scenarios; the agent is a real
openai-SDK tool loop with subagents (tests/record/agent.py). The recorded scenario derives
to the upstream's scripts for every call a DeepSeek stream could have produced, and serving
it to the same agent gives the same answers with every script consumed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_engine.record import record_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY, Agent
from tests.record.recordtools import (
    CORPUS,
    ROUND_TRIP,
    corpus_scenario,
    every_byte,
    log_lines,
    plan_of,
    scripts_json,
)
from tests.wire.wire_helpers import deepseek_producible

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(CORPUS is None, reason="corpus absent")]


async def record_run(source: Path, target: Path, *, pack: bool = False,
                     include_usage: bool = False) -> list[tuple[str, dict[str, object]]]:
    """Serve ``source``, record the agent against it into ``target``; the agent's transcript."""
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url, pack=pack) as rec:
            transcript = await Agent(rec.base_url, plan_of(source),
                                     include_usage=include_usage).run()
        assert upstream.engine.consumed_problems() == []
    assert rec.problems == []
    assert all(not r.failed for r in rec.reports)
    return transcript


@pytest.mark.parametrize("name", ROUND_TRIP)
async def test_recording_derives_to_the_served_scripts_and_replays(name: str,
                                                                  tmp_path: Path) -> None:
    source = corpus_scenario(name)
    target = tmp_path / "recorded"
    transcript = await record_run(source, target, include_usage=name.endswith("toolchain"))
    want, got = scripts_json(source), scripts_json(target)
    assert [len(s) for s in got] == [len(s) for s in want]
    producible = 0
    for i, (w_script, g_script) in enumerate(zip(want, got, strict=True)):
        for j, (w, g) in enumerate(zip(w_script, g_script, strict=True)):
            if w["kind"] == "chunks" and deepseek_producible(w["chunks"]):
                producible += 1
                assert g == w, f"script {i} call {j}"
    assert producible >= 2
    # children are separate logs in first-call order, ids as the agent sent them
    names = {p.name for p in target.glob("session*.jsonl")}
    assert names == {"session.jsonl"} | {f"session.{n}.jsonl" for n in range(1, len(want))}
    for n in range(1, len(want)):
        assert log_lines(target / f"session.{n}.jsonl")[0]["id"] == f"child-{n}"
    assert API_KEY.encode() not in every_byte(target)  # every byte the recording wrote
    async with serve_scenario(target) as replay:
        again = await Agent(replay.url + "/v1", plan_of(source),
                            include_usage=name.endswith("toolchain")).run()
        assert replay.engine.consumed_problems() == []
    assert again == transcript
