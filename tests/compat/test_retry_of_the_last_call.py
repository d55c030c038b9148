"""A client's retry of a script's last call, after that call's scripted failure, is refused
(409, the recording has no call after it) but known for what it is: the journal marks it a
retry and the verdict says "a retry of call #k", not "script exhausted".

Two ways a retry reaches the server: the SDK's own retry (``x-stainless-retry-count``, with
``--sdk-retries``), and an agent or framework repeating the same request without any header
(LangChain's ``with_retry``, llama-index), which the server sees as the same new content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine import NotConsumedError
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

GO: list[Any] = [{"role": "user", "content": "go"}]
THROTTLED = {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}


def _verdict(engine: Any) -> str:
    with pytest.raises(NotConsumedError) as caught:
        engine.assert_consumed()
    return caught.value.message


async def test_the_sdks_retry_of_the_last_call_is_a_retry(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("first"), THROTTLED])
    async with serve_scenario(root, sdk_retries=True) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="any", max_retries=1)
        await client.chat.completions.create(model="m", messages=GO)
        with pytest.raises(openai.ConflictError) as caught:
            await client.chat.completions.create(model="m", messages=GO)
        await client.close()
        journal = [(r.outcome, r.code, r.retry) for r in server.engine.journal()]
        verdict = _verdict(server.engine)
    assert journal == [("finished", None, False), ("failed", "RATE_LIMIT", False),
                       ("refused", "SCRIPT_EXHAUSTED", True)]
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    assert "a retry of call #1" in str(caught.value.message)
    assert "a retry of call #1 of script 0 (a sidecar entry) was refused with SCRIPT_EXHAUSTED" in verdict
    assert "script exhausted" not in verdict


async def test_the_same_request_again_after_the_failure_is_a_retry(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("first"), THROTTLED])
    async with serve_scenario(root) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="any", max_retries=0)
        await client.chat.completions.create(model="m", messages=GO)
        for _ in range(2):  # the agent's own retry: the same request, no retry header
            with pytest.raises(openai.APIStatusError):
                await client.chat.completions.create(model="m", messages=GO, stream=True)
        await client.close()
        journal = [(r.outcome, r.retry) for r in server.engine.journal()]
        verdict = _verdict(server.engine)
    assert journal == [("finished", False), ("failed", False), ("refused", True)]
    assert "a retry of call #1 of script 0" in verdict and "script exhausted" not in verdict


async def test_a_new_request_past_the_end_is_still_script_exhausted(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("first"), THROTTLED])
    async with serve_scenario(root) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="any", max_retries=0)
        await client.chat.completions.create(model="m", messages=GO)
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(model="m", messages=GO)
        with pytest.raises(openai.ConflictError):
            await client.chat.completions.create(model="m", messages=[
                *GO, {"role": "assistant", "content": "?"}, {"role": "user", "content": "other"}])
        await client.close()
        journal = [(r.outcome, r.retry) for r in server.engine.journal()]
        verdict = _verdict(server.engine)
    assert journal == [("finished", False), ("failed", False), ("refused", False)]
    assert "call #2 of script 0 was refused with SCRIPT_EXHAUSTED: script exhausted — session " \
           "requested model call #3 but its script has only 2" in verdict
    assert "call #2, past calls #0 to #1]" in verdict
