"""A ``dsh-replay record`` process killed (SIGKILL) at any moment, including while it creates
its logs, leaves logs that load: a log is created already holding its header."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import anyio.to_thread
import httpx
import pytest

from replay_engine.scenario.check import check_scenario
from tests.record.fakeupstream import FakeUpstream, text_answer

pytestmark = pytest.mark.anyio

SESSIONS = 12
STEP_MS = 20
MAX_DELAY_MS = 3000


async def _kill_while_creating(target: Path, upstream_url: str, delay_ms: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "replay_engine.cli", "record", str(target), "--format", "v4",
         "--upstream", upstream_url, "--port", "0"], stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        url = (await anyio.to_thread.run_sync(proc.stdout.readline)).decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        async with httpx.AsyncClient(timeout=10) as http:
            async def call(n: int) -> None:
                body = {"model": "m", "stream": True,
                        "messages": [{"role": "user", "content": f"hello {n}"}]}
                try:
                    await http.post(url + "/v1/chat/completions", json=body,
                                    headers={"x-session-id": f"s{n}"})
                except httpx.HTTPError:
                    pass  # the recorder is killed under it

            calls = [asyncio.create_task(call(n)) for n in range(SESSIONS)]
            await asyncio.sleep(delay_ms / 1000)  # the moment of the kill, not a wait for it
            proc.send_signal(signal.SIGKILL)
            await asyncio.gather(*calls)
    finally:
        if proc.poll() is None:
            proc.kill()
        await anyio.to_thread.run_sync(proc.wait)
        assert proc.stdout is not None
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


async def test_sigkill_while_logs_are_created_leaves_logs_that_load(tmp_path: Path) -> None:
    """Kills land later and later after the first calls of every session were sent, until one
    lands after all the logs were created: every kill before leaves logs that load."""
    async with FakeUpstream(lambda head, body: text_answer("ok")) as upstream:
        for delay in range(0, MAX_DELAY_MS, STEP_MS):
            target = tmp_path / f"killed-{delay}"
            await _kill_while_creating(target, upstream.url, delay)
            logs = sorted(target.glob("session*.v4.jsonl"))
            for log in logs:
                assert log.read_bytes().startswith(b'{"type":"session"'), (delay, log.name)
            problems, _ = check_scenario(str(target))
            assert problems == [] or not logs, (delay, problems)
            if len(logs) == SESSIONS:
                return
    raise AssertionError(f"the recorder never created its {SESSIONS} logs within "
                         f"{MAX_DELAY_MS} ms")
