"""The demo agent's Gemini wire: one streamed call through google-genai (docs/format.md#wire-gemini).

``gemini_contents`` turns the demo's chat-completions history into Gemini ``contents`` (model
turns with ``functionCall`` parts, tool results as ``functionResponse`` parts of a user turn);
``stream_gemini`` runs ``generate_content_stream`` and folds what the client hands over.
"""

from __future__ import annotations

import json
from typing import Any

from .demo_result import Streamed

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


def _error_code(exc: Any) -> str:
    """The replay code of a Google error: ``details[0].reason``, else ``HTTP_<status>``."""
    body = exc.details if isinstance(exc.details, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str) and detail["reason"]:
            return str(detail["reason"])
    return f"HTTP_{exc.code}"


async def stream_gemini(api: Any, model: str, session: str,
                        messages: list[dict[str, Any]]) -> Streamed:
    """``generate_content_stream`` of google-genai (``api`` a ``genai.Client``), parts folded:
    text and thought parts concatenated, each function call kept."""
    from google.genai import errors, types

    got = Streamed()
    config = types.GenerateContentConfig(
        http_options=types.HttpOptions(headers={"X-Session-Id": session}))
    try:
        async for response in await api.aio.models.generate_content_stream(
                model=model, contents=gemini_contents(messages), config=config):
            got.events += 1
            candidate = (response.candidates or [None])[0]
            if candidate is None:
                continue
            for part in (candidate.content.parts or []) if candidate.content else []:
                if part.function_call is not None:
                    call = part.function_call
                    got.tools[len(got.tools)] = {
                        "id": call.id or "", "name": call.name or "",
                        "arguments": json.dumps(call.args or {}, separators=(",", ":"))}
                elif part.thought:
                    got.reasoning += part.text or ""
                else:
                    got.text += part.text or ""
            if candidate.finish_reason is not None:
                got.finish = str(candidate.finish_reason.value)
    except errors.APIError as exc:
        if got.events == 0:
            got.status = exc.code
        got.error_code = _error_code(exc)
        got.error_message = exc.message or str(exc)
    return got
