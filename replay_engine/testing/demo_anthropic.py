"""The demo agent's Anthropic Messages wire (docs/format.md#wire-anthropic), spoken with httpx: one streamed
``POST /v1/messages`` whose events are folded as the anthropic SDK folds them (text and
thinking deltas concatenated, a tool's ``input_json_delta`` parts parsed once it ends, the
``stop_reason`` of ``message_delta``; an ``event: error`` ends the call with its code)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from .demo_result import Streamed
from .demo_sse import as_dict, compact, failed_answer, sse_json

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header every Messages request carries."""


def _code(body: dict[str, Any]) -> str | None:
    code = body.get("code")
    return code if isinstance(code, str) and code else None


def _input(arguments: str) -> str:
    """A tool's streamed input as the SDK's final message holds it, written compactly."""
    try:
        return compact(json.loads(arguments) if arguments else {})
    except ValueError:
        return arguments


async def stream_messages(http: httpx.AsyncClient, prefix: str, api_key: str, model: str,
                          session: str, messages: list[dict[str, Any]]) -> Streamed:
    """One streamed Messages call of ``messages`` (Messages API shape); httpx.TransportError
    is the caller's to report."""
    got = Streamed()
    headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION,
               "X-Session-Id": session}
    body = {"model": model, "max_tokens": 1024, "stream": True,
            "messages": messages}
    async with http.stream("POST", f"{prefix}/v1/messages", json=body, headers=headers) as response:
        if response.status_code >= 400:
            return await failed_answer(response, got, _code)
        kinds: dict[int, str] = {}
        async for event, data in sse_json(response):
            got.events += 1
            data = as_dict(data)
            kind = data.get("type", event)
            if kind == "error":
                error = as_dict(data.get("error"))
                got.error_code = _code(data) or "ERROR"
                got.error_message = str(error.get("message") or "stream error")
                return got
            index = data.get("index")
            if kind == "content_block_start" and isinstance(index, int):
                block = data.get("content_block") or {}
                kinds[index] = str(block.get("type"))
                if block.get("type") == "tool_use":
                    got.tools[index] = {"id": str(block.get("id") or ""),
                                        "name": str(block.get("name") or ""), "arguments": ""}
            elif kind == "content_block_delta" and isinstance(index, int):
                delta = data.get("delta") or {}
                if delta.get("type") == "text_delta":
                    got.text += str(delta.get("text") or "")
                elif delta.get("type") == "thinking_delta":
                    got.reasoning += str(delta.get("thinking") or "")
                elif delta.get("type") == "input_json_delta" and index in got.tools:
                    got.tools[index]["arguments"] += str(delta.get("partial_json") or "")
            elif (kind == "content_block_stop" and isinstance(index, int)
                  and kinds.get(index) == "tool_use"):
                got.tools[index]["arguments"] = _input(got.tools[index]["arguments"])
            elif kind == "message_delta":
                reason = (data.get("delta") or {}).get("stop_reason")
                if reason is not None:
                    got.finish = str(reason)
    return got
