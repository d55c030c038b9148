"""A scrub rule that backtracks without end runs within a time budget: the recording stops with
a SCRUB error naming the rule, the recorder stays responsive and exits on its own."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_engine.errors import ConfigError
from replay_engine.record import Scrubber, record_scenario
from tests.record.fakeupstream import FakeUpstream, text_answer
from tests.record.recordcheck import no_tracebacks, post

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

SLOW = r"(x+x+)+y"
"""Nested repetition: on a long run of x without a y it backtracks without end."""
TEXT = "x" * 5000


def ask(text: str) -> dict[str, Any]:
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}


def test_a_rule_past_its_budget_is_named_and_re_flags_are_kept() -> None:
    scrub = Scrubber.from_config({"filter_text": [r"\bAlice\b", {"pattern": SLOW, "name": "slow"}]},
                                 "rules.json")
    with pytest.raises(ConfigError) as caught:
        scrub.text("Alice " + TEXT)
    assert caught.value.code == "SCRUB"
    assert caught.value.message.startswith("rules.json: filter_text[1] (slow): the pattern "
                                           "'(x+x+)+y' ran longer than 1 s")
    compiled = Scrubber.from_config({"filter_text": [re.compile("alice", re.IGNORECASE)]}, "t")
    assert compiled.text("ALICE and Bob").startswith("{{scrubbed:text-")  # re flags kept


async def test_a_slow_rule_stops_the_recording_naming_it(tmp_path: Path, no_tracebacks: Any
                                                        ) -> None:
    scrub = Scrubber.from_config({"filter_text": [{"pattern": SLOW, "name": "slow"}]}, "conftest")
    async with FakeUpstream([text_answer("fine"), text_answer("unused")]) as upstream:
        with pytest.raises(ConfigError) as caught:
            async with record_scenario(tmp_path / "rec", upstream.url, scrub=scrub) as rec:
                assert (await post(rec.url + "/v1/chat/completions", ask("short"))).status == 200
                stopped = await post(rec.url + "/v1/chat/completions", ask(TEXT))
    assert caught.value.code == "SCRUB" and "filter_text[0] (slow)" in caught.value.message
    assert stopped.status == 503 and stopped.json()["error"]["code"] == "SCRUB"
    assert len(upstream.requests) == 1  # the call the rule stopped on was not forwarded
    assert [r.code for r in rec.reports] == [None]


async def test_the_record_command_exits_on_a_slow_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"filter_text": [{"pattern": SLOW, "name": "slow"}]}))
    async with FakeUpstream([text_answer("fine")]) as upstream:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(tmp_path / "rec"),
            "--upstream", upstream.url, "--port", "0", "--scrub", str(rules),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
            got = await post(url + "/v1/chat/completions", ask(TEXT))
            out, err = await asyncio.wait_for(proc.communicate(), 30)  # it stops on its own
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert got.status == 503
    assert proc.returncode == 1
    assert b"Traceback" not in err
    assert b"filter_text[0] (slow): the pattern '(x+x+)+y' ran longer than 1 s" in out + err
