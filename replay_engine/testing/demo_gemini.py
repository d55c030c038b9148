"""The demo agent's Gemini wire (docs/format.md#wire-gemini), spoken with httpx: one streamed call.

``gemini_contents`` turns the demo's chat-completions history into Gemini ``contents`` (model
turns with ``functionCall`` parts, tool results as ``functionResponse`` parts of a user turn);
``stream_gemini`` posts ``:streamGenerateContent?alt=sse`` and folds the parts as google-genai
would hand them over.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .demo_result import Streamed
from .demo_sse import as_dict, compact, failed_answer, sse_json

GEMINI_FINISH = {"stop": "STOP", "tool-calls": "STOP", "max-tokens": "MAX_TOKENS"}
"""Recorded finish kinds as the client reports ``finish_reason`` (stop and tool-calls alike)."""


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def gemini_contents(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chat-completions history as Gemini ``contents``."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            parts: list[dict[str, Any]] = []
            if message.get("content"):
                parts.append({"text": message["content"]})
            for call in message.get("tool_calls") or []:
                name = call["function"]["name"]
                names[call["id"]] = name
                parts.append({"functionCall": {"id": call["id"], "name": name,
                                               "args": _args(call["function"]["arguments"])}})
            out.append({"role": "model", "parts": parts or [{"text": ""}]})
        elif role == "tool":
            ident = str(message.get("tool_call_id", ""))
            part = {"functionResponse": {"id": ident, "name": names.get(ident, "tool"),
                                         "response": {"output": str(message.get("content") or "")}}}
            last = out[-1] if out else None
            if (last is not None and last["role"] == "user"
                    and all("functionResponse" in p for p in last["parts"])):
                last["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        else:
            out.append({"role": "user", "parts": [{"text": str(message.get("content") or "")}]})
    return out


def _error_code(body: dict[str, Any]) -> str | None:
    """The replay code of a Google error body: ``error.details[].reason``."""
    details = as_dict(body.get("error")).get("details")
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str) and detail["reason"]:
            return str(detail["reason"])
    return None


async def stream_gemini(http: httpx.AsyncClient, prefix: str, api_key: str, model: str,
                        session: str, contents: list[dict[str, Any]]) -> Streamed:
    """One ``:streamGenerateContent?alt=sse`` call of Gemini ``contents``, parts folded as
    google-genai hands them over: text and thought parts concatenated, each function call
    kept; an error event ends the call with its code. httpx.TransportError is the caller's."""
    got = Streamed()
    url = f"{prefix}/v1beta/models/{model}:streamGenerateContent"
    headers = {"x-goog-api-key": api_key, "X-Session-Id": session}
    body = {"contents": contents}
    async with http.stream("POST", url, params={"alt": "sse"}, json=body,
                           headers=headers) as response:
        if response.status_code >= 400:
            return await failed_answer(response, got, _error_code)
        async for _event, data in sse_json(response):
            got.events += 1
            data = as_dict(data)
            if isinstance(data.get("error"), dict):
                got.error_code = _error_code(data) or f"HTTP_{data['error'].get('code')}"
                got.error_message = str(data["error"].get("message") or "stream error")
                return got
            candidates = data.get("candidates")
            candidate = candidates[0] if isinstance(candidates, list) and candidates else None
            if not isinstance(candidate, dict):
                continue
            for part in as_dict(candidate.get("content")).get("parts") or []:
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict):
                    got.tools[len(got.tools)] = {
                        "id": str(call.get("id") or ""), "name": str(call.get("name") or ""),
                        "arguments": compact(call.get("args") or {})}
                elif isinstance(part, dict) and part.get("thought"):
                    got.reasoning += str(part.get("text") or "")
                elif isinstance(part, dict):
                    got.text += str(part.get("text") or "")
            if candidate.get("finishReason") is not None:
                got.finish = str(candidate["finishReason"])
    return got
