"""Test agents on the Anthropic Messages and OpenAI Responses APIs: the same tool loop, turns
and subagents as tests/record/agent.py, through the official SDKs' stream helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import openai

from tests.record.agent import API_KEY, run_tool

Tool = tuple[str, str, str]
"""A tool call the model made: id, name, arguments."""


class FramedAgent:
    """Drives ``plan`` (calls per session: primary first, then its subagents)."""

    def __init__(self, url: str, plan: list[int]) -> None:
        self.url = url.rstrip("/")
        """The server's origin (no ``/v1``)."""
        self.plan = plan
        self.transcript: list[tuple[str, dict[str, Any]]] = []

    def base(self, session: str | None, via_path: bool) -> str:
        """The origin a session's client talks to."""
        return f"{self.url}/sessions/{session}" if session is not None and via_path else self.url

    async def run(self) -> list[tuple[str, dict[str, Any]]]:
        """The whole run; returns every call's assembled answer, labelled by session."""

        async def subagents() -> None:
            for n, calls in enumerate(self.plan[1:], 1):
                await self.session(f"child-{n}", calls, via_path=n > 1)

        await self.session(None, self.plan[0], after_first=subagents)
        return self.transcript

    async def session(self, session: str | None, calls: int, *, via_path: bool = False,
                      after_first: Callable[[], Awaitable[None]] | None = None) -> None:
        """One session's loop: run the tools asked for, else send the next user message."""
        headers = {"X-Session-Id": session} if session is not None and not via_path else {}
        label = session or "primary"
        history: list[dict[str, Any]] = [self.user(f"{label}: task 1")]
        async with self.client(self.base(session, via_path)) as client:
            for k in range(calls):
                answer, tools = await self.call(client, label, history, headers)
                self.transcript.append((label, answer))
                if k == 0 and after_first is not None:
                    await after_first()
                if tools:
                    history += self.results([(t, run_tool(t[1], t[2])) for t in tools])
                else:
                    history.append(self.user(f"{label}: task {k + 2}"))

    def client(self, base: str) -> Any:
        raise NotImplementedError

    def user(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def results(self, done: list[tuple[Tool, str]]) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def call(self, client: Any, label: str, history: list[dict[str, Any]],
                   headers: dict[str, str]) -> tuple[dict[str, Any], list[Tool]]:
        """One streamed call: the answer as assembled (appended to ``history``) and its tools."""
        raise NotImplementedError


class MessagesAgent(FramedAgent):
    """The loop on ``anthropic.AsyncAnthropic().messages.stream``."""

    def client(self, base: str) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(base_url=base, api_key=API_KEY, max_retries=0)

    def user(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def results(self, done: list[tuple[Tool, str]]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool[0], "content": output}
            for tool, output in done]}]

    async def call(self, client: Any, label: str, history: list[dict[str, Any]],
                   headers: dict[str, str]) -> tuple[dict[str, Any], list[Tool]]:
        async with client.messages.stream(
                model="claude-sonnet-4-5", max_tokens=4096, system=f"You are agent {label}.",
                messages=history, extra_headers=headers) as stream:
            message = await stream.get_final_message()
        blocks = [b.model_dump(exclude_none=True) for b in message.content]
        history.append({"role": "assistant", "content": blocks})
        tools = [(b.id, b.name, _dumps(b.input)) for b in message.content if b.type == "tool_use"]
        answer = {"content": blocks, "stop_reason": message.stop_reason,
                  "usage": message.usage.model_dump(exclude_none=True)}
        return answer, tools


class ResponsesAgent(FramedAgent):
    """The loop on ``openai.AsyncOpenAI().responses.stream``."""

    def client(self, base: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=base + "/v1", api_key=API_KEY, max_retries=0)

    def user(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def results(self, done: list[tuple[Tool, str]]) -> list[dict[str, Any]]:
        return [{"type": "function_call_output", "call_id": tool[0], "output": output}
                for tool, output in done]

    async def call(self, client: Any, label: str, history: list[dict[str, Any]],
                   headers: dict[str, str]) -> tuple[dict[str, Any], list[Tool]]:
        async with client.responses.stream(
                model="gpt-5", instructions=f"You are agent {label}.", input=history,
                extra_headers=headers) as stream:
            response = await stream.get_final_response()
        items = [item.model_dump(exclude_none=True) for item in response.output]
        history += items
        tools = [(i.call_id, i.name, i.arguments) for i in response.output
                 if i.type == "function_call"]
        kept = [{k: v for k, v in item.items() if k != "id"} for item in items]
        usage = response.usage.model_dump(exclude_none=True) if response.usage else None
        return {"output": kept, "status": response.status, "usage": usage}, tools


def _dumps(value: object) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
