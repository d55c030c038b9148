"""A small openai-SDK agent for the recorder's tests: a real tool loop, turns and subagents.

Each session streams its calls through the official SDK, runs the tools the model asks for
(local functions whose results go back as ``tool`` messages) or, when the model stops, sends
the next user message; after the primary's first call it delegates to its subagents, each on
its own session id (the first through ``X-Session-Id``, later ones through the
``/sessions/{id}`` path).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai

API_KEY = "sk-live-7d1c0f9a2b4e4c8d9e0f1a2b3c4d5e6f-recorder-test"
"""A key that looks real: the tests search every written byte for it."""


def run_tool(name: str | None, arguments: str) -> str:
    """A local tool: describes its call and digests its arguments (deterministic)."""
    digest = hashlib.sha256(arguments.encode("utf-8")).hexdigest()[:12]
    try:
        keys = sorted(json.loads(arguments)) if arguments.strip().startswith("{") else []
    except ValueError:
        keys = []
    return f"{name} ran with {len(arguments)} bytes of arguments {keys} (digest {digest})"


@dataclass
class Turn:
    """What the agent assembled from one streamed call."""

    text: str = ""
    reasoning: str = ""
    tools: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    usage: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "reasoning": self.reasoning,
                "tools": [self.tools[k] for k in sorted(self.tools)], "finish": self.finish,
                "usage": self.usage}


class Agent:
    """Drives ``plan`` (calls per session: primary first, then its subagents)."""

    def __init__(self, base_url: str, plan: list[int], *, include_usage: bool = False) -> None:
        self.base_url = base_url.rstrip("/")
        self.plan = plan
        self.include_usage = include_usage
        self.transcript: list[tuple[str, dict[str, Any]]] = []

    def _client(self, session: str | None, via_path: bool) -> openai.AsyncOpenAI:
        base = self.base_url
        if session is not None and via_path:
            root, _, tail = base.rpartition("/v1")
            base = f"{root}/sessions/{session}/v1{tail}"
        return openai.AsyncOpenAI(base_url=base, api_key=API_KEY, max_retries=0)

    async def run(self) -> list[tuple[str, dict[str, Any]]]:
        """The whole run; returns every call's assembled content, labelled by session."""

        async def subagents() -> None:
            for n, calls in enumerate(self.plan[1:], 1):
                await self.session(f"child-{n}", calls, via_path=n > 1)

        await self.session(None, self.plan[0], after_first=subagents)
        return self.transcript

    async def session(self, session: str | None, calls: int, *, via_path: bool = False,
                      after_first: Callable[[], Awaitable[None]] | None = None) -> None:
        """One session's loop of ``calls`` model calls."""
        client = self._client(session, via_path)
        headers = {"X-Session-Id": session} if session is not None and not via_path else {}
        label = session or "primary"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"You are test agent {label}."},
            {"role": "user", "content": f"{label}: task 1"}]
        try:
            for k in range(calls):
                turn = await self.call(client, messages, headers)
                self.transcript.append((label, turn.as_json()))
                reply: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
                tools = [turn.tools[i] for i in sorted(turn.tools)]
                if tools:
                    reply["tool_calls"] = [{"id": t["id"], "type": "function", "function": {
                        "name": t["name"], "arguments": t["arguments"]}} for t in tools]
                messages.append(reply)
                if k == 0 and after_first is not None:
                    await after_first()
                if tools:
                    for t in tools:
                        messages.append({"role": "tool", "tool_call_id": t["id"],
                                         "content": run_tool(t["name"], t["arguments"])})
                else:
                    messages.append({"role": "user", "content": f"{label}: task {k + 2}"})
        finally:
            await client.close()

    async def call(self, client: openai.AsyncOpenAI, messages: list[dict[str, Any]],
                   headers: dict[str, str]) -> Turn:
        """One streamed call, assembled as an agent would."""
        options: dict[str, Any] = {}
        if self.include_usage:
            options["stream_options"] = {"include_usage": True}
        stream = await client.chat.completions.create(
            model="deepseek-chat", messages=messages,  # type: ignore[arg-type]
            stream=True, extra_headers=headers, **options)
        turn = Turn()
        async for chunk in stream:
            if chunk.usage is not None:
                turn.usage = chunk.usage.model_dump(exclude_none=True)
            for choice in chunk.choices:
                delta = choice.delta
                turn.text += delta.content or ""
                turn.reasoning += getattr(delta, "reasoning_content", None) or ""
                for call in delta.tool_calls or []:
                    slot = turn.tools.setdefault(call.index, {"id": None, "name": None,
                                                              "arguments": ""})
                    slot["id"] = slot["id"] or call.id
                    if call.function is not None:
                        slot["name"] = slot["name"] or call.function.name
                        slot["arguments"] += call.function.arguments or ""
                if choice.finish_reason:
                    turn.finish = choice.finish_reason
        return turn
