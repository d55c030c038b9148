"""Ctrl-C (SIGINT) of ``dsh-replay record`` while a call streams: it exits cleanly, with no
traceback, and the calls that ended before are written."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from replay_engine.scenario.check import check_scenario
from tests.record.fakeupstream import FakeUpstream, chunk, sse, text_answer
from tests.record.recordcheck import logged_calls, post

pytestmark = pytest.mark.anyio

ASK = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_while_a_call_streams_exits_cleanly_keeping_the_calls_before(
        tmp_path: Path, sig: signal.Signals) -> None:
    streaming = sse([chunk({"content": "partial"})], done=False)
    streaming.silent = True  # the head and a chunk, then nothing until the recorder leaves
    target = tmp_path / "rec"
    async with FakeUpstream([text_answer("first"), text_answer("second"), streaming]) as up:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(target), "--upstream",
            up.url, "--port", "0", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
            for _ in range(2):
                assert (await post(url + "/v1/chat/completions", ASK)).status == 200
            hanging = asyncio.create_task(post(url + "/v1/chat/completions", ASK))
            await up.wait(lambda: len(up.requests) == 3)
            proc.send_signal(sig)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
            await hanging
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert b"Traceback" not in err and b"CancelledError" not in err, err.decode()
    assert proc.returncode == 0, err.decode()
    assert b"recorded 2 call(s)" in out
    assert b"1 call(s) still streaming at stop were not recorded" in out
    assert [c.code for c in logged_calls(target)] == [None, None]
    assert check_scenario(str(target))[0] == []
