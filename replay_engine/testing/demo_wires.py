"""The demo agent's clients: one streamed call on each wire (the openai SDK's chat completions and
Responses streams; Anthropic Messages and Gemini streams spoken with httpx), from one
chat-completions history.

The openai SDK is a core dependency, the anthropic and google-genai SDKs are not: the two wires
without a core SDK are spoken with httpx (core too), so every dialect the demo agent and the
debugger offer works on a plain ``pip install``. The SDKs themselves are judged in tests/compat.

Both demo drivers use it: the replay driver (``demo_agent``, every recorded call of a replay
server) and the fixed conversation (``demo_conversation``, through a recording proxy).
"""

from __future__ import annotations

import json
from typing import Any, cast

import httpx

from ..errors import ConfigError, ServerUnreachableError
from .demo_anthropic import stream_messages
from .demo_gemini import gemini_contents, stream_gemini
from .demo_result import Streamed

DEMO_DIALECTS = ("openai", "anthropic", "responses", "gemini")
"""The wires the demo agent can drive: chat completions, Anthropic Messages, OpenAI Responses,
Google Gemini."""


def check_dialect(dialect: str) -> None:
    """Raise ConfigError for a dialect the demo agent does not speak."""
    if dialect not in DEMO_DIALECTS:
        raise ConfigError(f"unknown demo-agent dialect {dialect!r}; "
                          f"choose one of {', '.join(DEMO_DIALECTS)}")


def server_root(base_url: str) -> str:
    """A server's root URL as people pass it: ``127.0.0.1:8765``, ``…/v1`` and ``…/`` all work."""
    root = base_url.strip()
    if root and "://" not in root:
        root = "http://" + root  # "127.0.0.1:8765" as printed by some tools
    root = root.rstrip("/")  # after the scheme is known: "http://" is no host named "http"
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


class DemoClients:
    """The SDK client of one dialect pointed at ``prefix`` (a server's base URL or a run's)."""

    def __init__(self, prefix: str, server: str, dialect: str, *, api_key: str = "replay",
                 what: str = "the replay server") -> None:
        self.prefix = prefix
        self.server = server
        self.dialect = dialect
        self.what = what
        """What ``server`` is, as errors name it."""
        import openai  # imported here: it costs most of the CLI's start-up time

        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=f"{prefix}/v1",
                                         max_retries=0, timeout=60.0)
        self.api_key = api_key
        self.http = httpx.AsyncClient(timeout=60.0)
        """The Anthropic and Gemini wires' client (no retries: httpx makes none)."""
        self.model = "replay-demo"

    async def close(self) -> None:
        """Close every client."""
        await self.client.close()
        await self.http.aclose()

    def pick_model(self, catalog: Any) -> None:
        """Use the first model of a provider catalog (``GET /v1/models``) when it lists one."""
        data = catalog.get("data") if isinstance(catalog, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict) and data[0].get("id"):
            self.model = str(data[0]["id"])

    async def stream(self, session: str, messages: list[dict[str, Any]]) -> Streamed:
        """One streamed call on the agent's dialect; ``messages`` is the chat-completions history."""
        if self.dialect in ("anthropic", "gemini"):
            try:
                if self.dialect == "anthropic":
                    return await stream_messages(self.http, self.prefix, self.api_key, self.model,
                                                 session, messages_request(messages))
                return await stream_gemini(self.http, self.prefix, self.api_key, self.model,
                                           session, gemini_contents(messages))
            except httpx.TransportError as exc:
                raise unreachable(self.server, exc, self.what) from None
        if self.dialect == "responses":
            return await self._stream_responses(session, messages)
        return await self._stream_chat(session, messages)

    async def _stream_responses(self, session: str, messages: list[dict[str, Any]]) -> Streamed:
        """``responses.stream(...)`` of the openai SDK; the terminal event's response counts."""
        import openai

        got = Streamed()
        final: Any = None
        try:
            async with self.client.responses.stream(
                model=self.model, input=cast(Any, responses_input(messages)),
                extra_headers={"X-Session-Id": session},
            ) as stream:
                async for event in stream:
                    got.events += 1
                    if event.type == "error":
                        got.error_code = event.code or "ERROR"
                        got.error_message = event.message
                    elif event.type in ("response.completed", "response.incomplete",
                                        "response.failed"):
                        final = event.response
        except openai.APIConnectionError as exc:
            raise unreachable(self.server, exc, self.what) from None
        except openai.APIError as exc:
            return _openai_failure(got, exc)
        if got.error_code is not None or final is None:
            if got.error_code is None:
                got.error_code, got.error_message = "ERROR", "the stream ended without a response"
            return got
        if final.status == "failed" and final.error is not None:
            got.error_code, got.error_message = final.error.code or "ERROR", final.error.message
            return got
        for k, item in enumerate(final.output):
            if item.type == "message":
                got.text += "".join(part.text for part in item.content if part.type == "output_text")
            elif item.type == "reasoning":
                got.reasoning += "".join(part.text for part in item.content or [])
            elif item.type == "function_call":
                got.tools[k] = {"id": item.call_id, "name": item.name, "arguments": item.arguments}
        got.finish = str(final.status)
        if final.status == "incomplete" and final.incomplete_details is not None:
            got.finish += f" ({final.incomplete_details.reason})"
        return got

    async def _stream_chat(self, session: str, messages: list[dict[str, Any]]) -> Streamed:
        """``chat.completions.create(stream=True)`` of the openai SDK, deltas folded by hand."""
        import openai

        got = Streamed()
        try:
            stream = await self.client.chat.completions.create(
                model=self.model, messages=cast(Any, messages),
                stream=True, extra_headers={"X-Session-Id": session},
            )
            async for chunk in stream:
                got.events += 1
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        got.text += delta.content
                    reasoning = (delta.model_extra or {}).get("reasoning_content")
                    if isinstance(reasoning, str):
                        got.reasoning += reasoning
                    for call in delta.tool_calls or []:
                        slot = got.tools.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                        if call.id:
                            slot["id"] = call.id
                        if call.function is not None:
                            # A recorded name may repeat on every delta: keep it, do not append.
                            slot["name"] = call.function.name or slot["name"]
                            slot["arguments"] += call.function.arguments or ""
                    if choice.finish_reason:
                        got.finish = choice.finish_reason
        except openai.APIConnectionError as exc:
            raise unreachable(self.server, exc, self.what) from None
        except openai.APIError as exc:
            return _openai_failure(got, exc)
        return got


    @staticmethod
    def extend(messages: list[dict[str, Any]], got: Streamed) -> None:
        """Add the assistant turn the call streamed (what the next request builds on)."""
        message: dict[str, Any] = {"role": "assistant", "content": got.text or None}
        calls: list[dict[str, Any]] = [
            {"id": slot["id"] or f"call_{k}", "type": "function",
             "function": {"name": slot["name"], "arguments": slot["arguments"]}}
            for k, slot in sorted(got.tools.items())
        ]
        if calls:
            message["tool_calls"] = calls
        messages.append(message)



def _openai_failure(got: Streamed, exc: Any) -> Streamed:
    """Note an openai SDK error on ``got``: the status and the code and message the server sent
    (``HTTP_<status>`` without a code; ``ERROR`` for a stream that failed mid-way)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        got.status = status
        got.error_code = exc.code or f"HTTP_{status}"
        body = exc.body if isinstance(exc.body, dict) else {}
        got.error_message = str(body.get("message") or exc.message)
    else:
        got.error_code = exc.code or "ERROR"
        got.error_message = exc.message
    return got


def _tool_input(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def messages_request(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chat-completions history as Messages API ``messages``: assistant text and tool_use
    blocks; tool results as ``tool_result`` blocks of one user message."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.get("content"):
                blocks.append({"type": "text", "text": message["content"]})
            for call in message.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                               "input": _tool_input(call["function"]["arguments"])})
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""),
                     "content": str(message.get("content") or "")}
            last = out[-1] if out else None
            if (last is not None and last["role"] == "user" and isinstance(last["content"], list)
                    and all(b.get("type") == "tool_result" for b in last["content"])):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            out.append({"role": "user", "content": str(message.get("content") or "")})
    return out


def responses_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chat-completions history as Responses ``input`` items: messages, ``function_call``
    items and ``function_call_output`` items."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            if message.get("content"):
                out.append({"type": "message", "role": "assistant", "content": message["content"]})
            for call in message.get("tool_calls") or []:
                out.append({"type": "function_call", "call_id": call["id"],
                            "name": call["function"]["name"],
                            "arguments": call["function"]["arguments"]})
        elif role == "tool":
            out.append({"type": "function_call_output", "call_id": message.get("tool_call_id", ""),
                        "output": str(message.get("content") or "")})
        else:
            out.append({"type": "message", "role": "user", "content": str(message.get("content") or "")})
    return out



def short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"



def describe(got: Streamed, recorded: int | None = None) -> str:
    """What the client got; ``recorded``: the call's recorded chunk count (the debugger's
    "chunks"), given once the whole call was served."""
    if got.error_code is not None:
        where = f"HTTP {got.status}" if got.status else f"after {got.events} SSE event(s)"
        return f"error {got.error_code} ({where}): {got.error_message}"
    served = (f"{recorded} recorded chunk(s)" if recorded is not None
              else f"{got.events} SSE event(s)")
    parts = [served, f"finish {got.finish or '-'}"]
    if got.text:
        parts.append(repr(short(got.text)))
    if got.tools:
        parts.append("tools " + ", ".join(t["name"] for t in got.tools.values()))
    return ", ".join(parts)



def unreachable(server: str, exc: BaseException,
                what: str = "the replay server") -> ServerUnreachableError:
    """The typed error of a server the demo agent cannot reach, with what to start."""
    reason = str(exc) or type(exc).__name__
    return ServerUnreachableError(
        f"cannot reach {what} at {server} ({reason}). Start one with "
        "`dsh-replay serve SCENARIO` or `dsh-replay-tui SCENARIO` and pass the URL it prints "
        "(e.g. http://127.0.0.1:8765).")
