"""The Messages and Responses routes under the wire's common rules (docs/format.md#wire) and the engine's
controls.

Each test runs the real ``anthropic`` or ``openai`` SDK (or raw HTTP where a status or a
header is the point) against a real server: sessions by header and path, errors in the
dialect's shape with ``x-should-retry: false`` unless SDK retries are allowed, retries
marked, the journal naming each call's dialect, the opening sent before the step gate,
stepping and cancelling from the control API, hang ready files, pacing and fromRequest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from replay_engine import ReplayEngine
from replay_engine import events as ev
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import EngineWatch, text_entry, write_scenario

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Wire:
    """One dialect as a test drives it: its route, a minimal body and its SDK calls."""

    name: str
    path: str
    body: dict[str, Any]

    def error_code(self, body: dict[str, Any]) -> str:
        """The replay code in an error body of this dialect."""
        return str(body["code"] if self.name == "anthropic" else body["error"]["code"])

    def error_shape_ok(self, body: dict[str, Any], kind: str) -> bool:
        """The body has the dialect's error shape (``kind``: Anthropic's error type)."""
        if self.name == "anthropic":
            return body["type"] == "error" and body["error"]["type"] == kind \
                and isinstance(body["error"]["message"], str)
        return set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}


MESSAGES = Wire("anthropic", "/v1/messages",
                {"model": "claude-replay", "max_tokens": 64, "system": "be brief",
                 "messages": [{"role": "user", "content": "go"}]})
RESPONSES = Wire("responses", "/v1/responses",
                 {"model": "gpt-replay", "instructions": "be brief", "input": "go"})
WIRES = [pytest.param(MESSAGES, id="messages"), pytest.param(RESPONSES, id="responses")]


class StreamFailed(Exception):
    """A Responses stream ended with an ``error`` event (the SDK yields it, it does not raise)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def anthropic_client(base: str, session: str | None = None) -> anthropic.AsyncAnthropic:
    headers = {"X-Session-Id": session} if session else None
    return anthropic.AsyncAnthropic(base_url=base, api_key="replay", max_retries=0,
                                    default_headers=headers)


def openai_client(base: str, session: str | None = None) -> openai.AsyncOpenAI:
    headers = {"X-Session-Id": session} if session else None
    return openai.AsyncOpenAI(base_url=base + "/v1", api_key="replay", max_retries=0,
                              default_headers=headers)


async def sdk_text(wire: Wire, base: str, session: str | None = None, *, stream: bool = True,
                   on_event: Callable[[Any], Awaitable[None]] | None = None) -> str:
    """One call through the dialect's own SDK; the text it assembled.

    ``on_event`` sees every streamed event as the SDK parsed it, as it arrives.
    """
    if wire is MESSAGES:
        api = anthropic_client(base, session)
        try:
            if not stream:
                message = await api.messages.create(**wire.body)
                return "".join(b.text for b in message.content if b.type == "text")
            async with api.messages.stream(**wire.body) as events:
                async for event in events:
                    if on_event is not None:
                        await on_event(event)
                return await events.get_final_text()
        finally:
            await api.close()
    client = openai_client(base, session)
    try:
        if not stream:
            return (await client.responses.create(**wire.body)).output_text
        async with client.responses.stream(**wire.body) as responses:
            async for event in responses:
                if on_event is not None:
                    await on_event(event)
                if event.type == "error":
                    raise StreamFailed(str(event.code), event.message)
            return (await responses.get_final_response()).output_text
    finally:
        await client.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_sessions_by_path_bind_and_a_disagreeing_header_is_refused(
        wire: Wire, tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("parent")], children=[[text_entry("child")]])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        bad = await http.post("/sessions/a" + wire.path, json=wire.body, headers={"X-Session-Id": "b"})
        parent = await sdk_text(wire, server.url + "/sessions/p", stream=False)
        child = await sdk_text(wire, server.url + "/runs/t1/sessions/c")
        again = await sdk_text(wire, server.url + "/runs/t1/sessions/d", "d")
    assert bad.status_code == 400 and bad.headers["x-should-retry"] == "false"
    assert wire.error_code(bad.json()) == "SESSION_MISMATCH"
    assert wire.error_shape_ok(bad.json(), "invalid_request_error")
    assert (parent, child, again) == ("parent", "parent", "child")
    assert [(r.session, r.dialect) for r in server.engine.journal()] == [("p", wire.name)]
    assert [r.session for r in server.engine.journal("t1")] == ["c", "d"]


@pytest.mark.parametrize("wire", WIRES)
async def test_errors_answer_in_the_dialect_shape_and_say_do_not_retry(
        wire: Wire, tmp_path: Path) -> None:
    throw = {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}
    root = write_scenario(tmp_path / "s", [throw, throw])
    for sdk_retries, expected in ((False, "false"), (True, None)):
        async with serve_scenario(root, sdk_retries=sdk_retries) as server, \
                httpx.AsyncClient(base_url=server.url) as http:
            streamed = await http.post(wire.path, json={**wire.body, "stream": True})
            plain = await http.post(wire.path, json=wire.body)
            exhausted = await http.post(wire.path, json=wire.body)
            malformed = await http.post(wire.path, content=b"{not json")
        answers = (streamed, plain, exhausted, malformed)
        assert [a.status_code for a in answers] == [429, 429, 409, 400]
        assert [wire.error_code(a.json()) for a in answers] == [
            "RATE_LIMIT", "RATE_LIMIT", "SCRIPT_EXHAUSTED", "INVALID_JSON"]
        kinds = ["rate_limit_error", "rate_limit_error", "invalid_request_error",
                 "invalid_request_error"]
        for answer, kind in zip(answers, kinds, strict=True):
            assert answer.headers.get("x-should-retry") == expected
            assert answer.headers["content-type"] == "application/json"
            assert wire.error_shape_ok(answer.json(), kind)


async def test_unknown_routes_and_wrong_methods_answer_in_the_dialect_shape(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        wrong = await http.get("/runs/r/sessions/x/v1/messages")
        missing = await http.post("/v1/messages/batches", json={})
        wrong_responses = await http.get("/v1/responses")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert wrong.json()["type"] == "error" and wrong.json()["code"] == "METHOD_NOT_ALLOWED"
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    assert wrong_responses.status_code == 405
    assert wrong_responses.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


async def test_the_journal_names_each_calls_dialect_and_marks_retries(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry(w) for w in ("one", "two", "three", "four")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        retry = {"x-stainless-retry-count": "1"}
        await http.post("/v1/chat/completions", json={})
        await http.post(MESSAGES.path, json=MESSAGES.body, headers=retry)
        await http.post(RESPONSES.path, json={**RESPONSES.body, "stream": True}, headers=retry)
        await http.post("/replay/v1/stream", json={})
        journal = (await http.get("/replay/v1/journal")).json()["calls"]
    assert [(c["dialect"], c["retry"]) for c in journal] == [
        ("openai", False), ("anthropic", True), ("responses", True), ("native", False)]
    assert [c["model"] for c in journal] == ["replay", "claude-replay", "gpt-replay", None]
    # What fromRequest searches and the journal keeps: the dialect's prompt fields, in order.
    assert journal[1]["messages"] == {"system": "be brief", "messages": MESSAGES.body["messages"]}
    assert journal[2]["messages"] == {"instructions": "be brief", "input": "go"}
    started = [(e.dialect, e.retry) for e in watch.events if isinstance(e, ev.CallStarted)]
    assert started == [(c["dialect"], c["retry"]) for c in journal]


@pytest.mark.parametrize("wire", WIRES)
async def test_the_opening_goes_out_before_the_gate_and_the_control_api_steps(
        wire: Wire, tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("held back here", parts=3)])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        engine: ReplayEngine = server.engine
        assert (await http.post("/replay/v1/mode", json={"mode": "chunk"})).status_code == 200
        watch = EngineWatch(engine)
        seen: list[str] = []

        async def on_event(event: Any) -> None:
            seen.append(event.type)
            if len(seen) == 1:  # the opening arrived while the gate holds the first chunk
                await watch.wait_for(ev.CallPaused)
                assert engine.state().bindings[0].status == "paused"
                step = await http.post("/replay/v1/step", json={"how": "chunk"})
                assert step.json() == {"ok": True}
                await watch.wait_for(ev.CallPaused, 2)
                await http.post("/replay/v1/step", json={"how": "continue"})

        text = await sdk_text(wire, server.url, on_event=on_event)
    assert text == "held back here"
    assert seen[0] == ("message_start" if wire is MESSAGES else "response.created")
    assert [type(e) for e in watch.events if isinstance(e, ev.CallFinished)] == [ev.CallFinished]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_a_hang_is_cancelled_from_the_control_api(
        wire: Wire, stream: bool, tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "hang.ready"}])
    ready = tmp_path / "hang.ready"
    async with serve_scenario(root, ready_dir=tmp_path) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        call = asyncio.create_task(sdk_text(wire, server.url, "a", stream=stream))
        deadline = time.monotonic() + 10
        while not ready.exists():  # the engine creates it once the hang waits
            assert time.monotonic() < deadline and not call.done(), "the hang never got ready"
            await asyncio.sleep(0.01)
        assert server.engine.state().bindings[0].status == "hanging"
        cancelled = await http.post("/replay/v1/cancel", json={"sessionId": "a"})
        assert cancelled.json() == {"ok": True, "cancelled": 1}
        if wire is MESSAGES:
            with pytest.raises(anthropic.APIStatusError) as caught:
                await call
            assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "ABORTED"
            assert caught.value.status_code == (200 if stream else 500)
        elif stream:
            with pytest.raises(StreamFailed) as failed:
                await call
            assert failed.value.code == "ABORTED"
        else:
            with pytest.raises(openai.InternalServerError) as refused:
                await call
            assert isinstance(refused.value.body, dict) and refused.value.body["code"] == "ABORTED"
        record = server.engine.journal()[0]
    assert (record.outcome, record.code, record.dialect) == ("cancelled", "ABORTED", wire.name)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_paced_stream_reaches_the_sdk_delta_by_delta(wire: Wire, tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one two three four", parts=4)])
    deltas: list[str] = []

    async def on_event(event: Any) -> None:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            deltas.append(event.delta.text)
        elif event.type == "response.output_text.delta":
            deltas.append(event.delta)

    async with serve_scenario(root, pace_ms=5) as server:
        text = await sdk_text(wire, server.url, on_event=on_event)
    assert text == "one two three four"
    assert deltas == ["one ", "two ", "three ", "four"]
