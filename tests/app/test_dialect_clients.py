"""The debugger's stepping and cancel keys hold and end the calls of an Anthropic Messages
client and an OpenAI Responses client exactly as they do a chat-completions one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import anthropic
import openai
import pytest

from tests.app.apptools import make_app, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
ANSWER = "The workspace has README.md and src. Hello!"


class Aborted(Exception):
    """The call ended with the replay's ABORTED error."""


async def messages_text(base: str, session: str) -> str:
    """One streamed Messages call; the text blocks of the final message."""
    api = anthropic.AsyncAnthropic(base_url=base, api_key="replay", max_retries=0,
                                   default_headers={"X-Session-Id": session})
    try:
        async with api.messages.stream(model="claude-replay", max_tokens=64,
                                       messages=[{"role": "user", "content": "hi"}]) as stream:
            message = await stream.get_final_message()
    except anthropic.APIStatusError as exc:
        if isinstance(exc.body, dict) and exc.body.get("code") == "ABORTED":
            raise Aborted() from None
        raise
    finally:
        await api.close()
    return "".join(b.text for b in message.content if b.type == "text")


async def responses_text(base: str, session: str) -> str:
    """One streamed Responses call; the output text of the final response."""
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="replay", max_retries=0,
                                default_headers={"X-Session-Id": session})
    try:
        async with client.responses.stream(model="gpt-replay", input="hi") as stream:
            async for event in stream:
                if event.type == "error":
                    if event.code == "ABORTED":
                        raise Aborted()
                    raise AssertionError(f"unexpected error event {event}")
            return (await stream.get_final_response()).output_text
    finally:
        await client.close()


Client = Callable[[str, str], Awaitable[str]]
CLIENTS = [pytest.param(messages_text, "anthropic", id="messages"),
           pytest.param(responses_text, "responses", id="responses")]


@pytest.mark.parametrize(("run", "dialect"), CLIENTS)
async def test_step_keys_hold_and_release_the_clients_stream(run: Client, dialect: str) -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None
        await pilot.press("2")  # break at every call
        reader = asyncio.create_task(run(app.url, "s"))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the call to pause")
        assert not reader.done() and app.engine.state().bindings[0].chunks_served == 0
        await pilot.press("n")  # one chunk, then held again
        await until(app, lambda: any("paused before chunk 1" in x for x in app.live_pane.lines))
        assert not reader.done()
        await pilot.press("e")  # run to the end of the call
        assert await asyncio.wait_for(reader, 10) == ""  # call 0 is a tool call: no text
        second = asyncio.create_task(run(app.url, "s"))
        await until(app, lambda: app.engine.paused_sessions() == ["s"], "the second pause")
        await pilot.press("c")
        assert await asyncio.wait_for(second, 10) == ANSWER
        journal = app.engine.journal()
        assert [(r.outcome, r.dialect) for r in journal] == [("finished", dialect)] * 2


@pytest.mark.parametrize(("run", "dialect"), CLIENTS)
async def test_cancel_key_ends_the_clients_hang_with_aborted(run: Client, dialect: str,
                                                             tmp_path: Path) -> None:
    app = make_app(SAMPLES / "hang-ready-file", ready_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None
        assert await run(app.url, "h") == "Ready."
        hanging = asyncio.create_task(run(app.url, "h"))
        await until(app, lambda: "HANGING 1" in str(app.header.render()), "the hang")
        assert (tmp_path / "hang-ready.marker").exists()
        await pilot.press("x")
        with pytest.raises(Aborted):
            await asyncio.wait_for(hanging, 10)
        await until(app, lambda: any("call #1 cancelled (ABORTED)" in x for x in app.live_pane.lines))
        assert app.engine.journal()[1].dialect == dialect
