"""The debugger's stepping and cancel keys hold and end the calls of an Anthropic Messages
client, an OpenAI Responses client and a google-genai client exactly as they do a
chat-completions one."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anthropic
import openai
import pytest
from dsh_replay_tui.screens.dialect_choice import DialectChoiceScreen
from dsh_replay_tui.widgets.rendered_lines import RenderedLines
from google.genai import errors as genai_errors

from tests.app.apptools import make_app, until
from tests.compat.gemini_helpers import connected
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


async def gemini_text(base: str, session: str) -> str:
    """One ``generate_content_stream`` call of google-genai; the text of its parts."""
    async with connected(base, session=session) as api:
        try:
            text = ""
            async for response in await api.aio.models.generate_content_stream(
                    model="gemini-replay", contents="hi"):
                text += response.text or ""
            return text
        except genai_errors.APIError as exc:
            if exc.details["error"]["details"][0]["reason"] == "ABORTED":
                raise Aborted() from None
            raise


Client = Callable[[str, str], Awaitable[str]]
CLIENTS = [pytest.param(messages_text, "anthropic", id="messages"),
           pytest.param(responses_text, "responses", id="responses"),
           pytest.param(gemini_text, "gemini", id="gemini")]


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


@pytest.mark.parametrize(("key", "dialect", "finish"), [("2", "anthropic", "end_turn"),
                                                       ("3", "responses", "completed"),
                                                       ("4", "gemini", "STOP")])
async def test_demo_key_asks_the_dialect_and_drives_it(key: str, dialect: str, finish: str) -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the chooser")
        await pilot.press(key)
        await until(app, lambda: any(x.startswith(f"demo agent ({dialect}) done")
                                     for x in app.live_pane.lines), "the demo agent")
        lines = app.live_pane.lines
        assert f"demo agent ({dialect}) done (consumed: True)" in lines
        assert any(f"finish {finish}" in x for x in lines), lines
        # The event log names the wire each call arrived on; so does the journal.
        assert "demo-0 call #0 started (chunks, " + dialect + ")" in lines
        assert [r.dialect for r in app.engine.journal()] == [dialect, dialect]


async def test_demo_chooser_escape_runs_nothing() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the chooser")
        await pilot.press("escape")
        await until(app, lambda: not isinstance(app.screen, DialectChoiceScreen), "the close")
        assert not any(x.startswith("demo agent") for x in app.live_pane.lines)
        assert app.engine.journal() == []
        # The arrow keys and Enter pick a dialect too.
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the chooser")
        await pilot.press("down", "down", "enter")
        await until(app, lambda: any(x.startswith("demo agent (responses) done")
                                     for x in app.live_pane.lines), "the demo agent")


async def test_request_tab_compares_a_messages_call_with_the_recording() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None
        api = anthropic.AsyncAnthropic(base_url=app.url, api_key="replay", max_retries=0,
                                       default_headers={"X-Session-Id": "m"})
        question = "What files are in the workspace? Then say hello."
        async with api.messages.stream(model="claude-replay", max_tokens=64, system="be brief",
                                       messages=[{"role": "user", "content": question}]) as stream:
            first = await stream.get_final_message()
        [tool] = [b for b in first.content if b.type == "tool_use"]
        async with api.messages.stream(model="claude-replay", max_tokens=64, messages=[
            {"role": "user", "content": question},
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool.id, "name": tool.name,
                                               "input": tool.input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id,
                                          "content": "README.md\nlib\n"}]},
        ]) as stream:
            await stream.get_final_message()
        await api.close()
        pane = app.call_pane
        await pilot.press("down")  # call #0
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert pane.active == "request"
        await until(app, lambda: pane.request_rows == [("=", f"user: {question}", f"user: {question}")],
                    "the request rows of call #0")
        head = pane.query_one("#request", RenderedLines).text.replace("\n", " ")
        assert "live request over anthropic: call id" in head and "model claude-replay" in head
        # Call #1 answered a different tool result: the Request tab marks it.
        await pilot.press("down")
        await until(app, lambda: pane.request_rows == [
            ("≠", "tool: README.md\nlib\n", "tool: README.md\nsrc\n")], "the diff of call #1")
        assert any("call #1 started (chunks, anthropic)" in x for x in app.live_pane.lines)


@pytest.mark.parametrize(("key", "dialect"), [("2", "anthropic"), ("4", "gemini")])
async def test_the_demo_key_works_without_the_optional_sdks(
        key: str, dialect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As after a plain `pip install .`: importing the anthropic or google-genai SDK fails.
    for name in ("anthropic", "google", "google.genai"):
        monkeypatch.setitem(sys.modules, name, None)
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the chooser")
        await pilot.press(key)
        await until(app, lambda: any(x.startswith(f"demo agent ({dialect}) done")
                                     for x in app.live_pane.lines), "the demo agent")
        assert f"demo agent ({dialect}) done (consumed: True)" in app.live_pane.lines
