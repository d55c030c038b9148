"""Client SDKs with their default retry settings never consume a recorded call behind the agent.

A scripted 429 reaches the agent on the first try and consumes exactly one call; a 409
binding error is not retried. With ``sdk_retries`` the SDK retries as it would against a
real provider, and the journal shows which request was a retry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine import events as ev
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import EngineWatch, text_entry, write_scenario

pytestmark = pytest.mark.anyio

GO: list[Any] = [{"role": "user", "content": "go"}]
THROTTLED = {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}


def _client(url: str) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="any")
    assert client.max_retries == 2  # the default, kept: the server must stop the retries
    return client


@pytest.mark.parametrize("stream", [True, False])
async def test_a_scripted_429_reaches_the_agent_on_the_first_try(tmp_path: Path,
                                                                  stream: bool) -> None:
    root = write_scenario(tmp_path / "s", [THROTTLED, text_entry("after the throttle")])
    async with serve_scenario(root) as server:
        client = _client(server.url)
        with pytest.raises(openai.RateLimitError) as caught:
            await client.chat.completions.create(model="m", messages=GO, stream=stream)
        assert [r.outcome for r in server.engine.journal()] == ["failed"]
        after = await client.chat.completions.create(model="m", messages=GO)
        await client.close()
    assert caught.value.code == "RATE_LIMIT"
    assert after.choices[0].message.content == "after the throttle"
    assert [(r.outcome, r.retry) for r in server.engine.journal()] == [
        ("failed", False), ("finished", False)]


async def test_a_409_is_not_retried(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("only")])
    async with serve_scenario(root) as server:
        watch = EngineWatch(server.engine)
        client = _client(server.url)
        await client.chat.completions.create(model="m", messages=GO)
        with pytest.raises(openai.ConflictError) as caught:
            await client.chat.completions.create(model="m", messages=GO)
        await client.close()
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    refused = [e for e in watch.events if isinstance(e, ev.BindingFailed)]
    assert [(e.code, e.retry) for e in refused] == [("SCRIPT_EXHAUSTED", False)]


async def test_with_sdk_retries_the_retry_is_served_and_marked(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [THROTTLED, text_entry("served to the retry")])
    async with serve_scenario(root, sdk_retries=True) as server:
        client = _client(server.url)
        answer = await client.chat.completions.create(model="m", messages=GO)
        await client.close()
    assert answer.choices[0].message.content == "served to the retry"
    assert [(r.outcome, r.retry) for r in server.engine.journal()] == [
        ("failed", False), ("finished", True)]
