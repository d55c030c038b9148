"""The recorder's OpenAI Responses dialect, ``POST /v1/responses`` (docs/format.md#wire-responses read
backwards).

Each output item is one block, numbered 0, 1, … in the order the items are added: a
``reasoning`` item a reasoning block (its reasoning text, or its summary text when that is
what streams), a ``message`` item a text block, a ``function_call`` item a tool-call block
whose id is the item's ``call_id``. ``response.output_item.added`` is the ``block-start``,
each text / reasoning / arguments delta one delta chunk, ``response.output_item.done`` the
``block-end`` (taking the item's own content when no delta came). The response's end is the
usage (the wire always states all four counters) and the finish: ``response.completed`` is
tool-calls when the output has a function call and stop otherwise, ``response.incomplete``
for ``max_output_tokens`` is max-tokens, ``response.failed`` an error finish with its code
and message (an ordinary recorded call, which replays as the same failed response).

Producible calls (what a recording served on this wire rebuilds exactly): every block opens
with a ``block-start`` and closes with a ``block-end`` holding its concatenated deltas, its
indices are 0, 1, … in opening order, a block whose content is not empty has at least one
delta, tool deltas carry their block's id and name, then a usage with all four counters and
a finish that the response's status states: stop without a tool block, tool-calls with one,
max-tokens, or an error with just a code and a message.
"""

from __future__ import annotations

import json
from typing import Any

from ..jsonnumbers import count
from .dialect import (
    Block,
    Chunk,
    RequestMessage,
    SseEvent,
    StreamFailure,
    conversation_of,
    impossible_usage,
    key_of,
    malformed,
    of_type,
    rebuild_events,
    upstream_error_message,
    upstream_json,
)

_KINDS = {"reasoning": "reasoning", "message": "text", "function_call": "tool-call"}
_DELTAS = {"response.output_text.delta": "text",
           "response.reasoning_text.delta": "reasoning",
           "response.reasoning_summary_text.delta": "reasoning",
           "response.function_call_arguments.delta": "tool-call"}
_ENDS = ("response.completed", "response.incomplete", "response.failed")


def _texts(parts: object, kinds: tuple[str, ...]) -> str:
    """The text of an item's ``content`` / ``summary`` parts of ``kinds``."""
    out = []
    for part in of_type(parts, list, "an output item's content") or []:
        if not isinstance(part, dict):
            raise malformed("an output item's content part", part)
        if part.get("type") in kinds:
            out.append(of_type(part.get("text"), str, f"a {part['type']} part's text") or "")
    return "".join(out)


def _item_text(kind: str, item: dict[str, Any]) -> str:
    """A finished item's own content (its block's text when no delta carried any)."""
    if kind == "tool-call":
        return of_type(item.get("arguments"), str, "a function_call item's arguments") or ""
    if kind == "text":
        return _texts(item.get("content"), ("output_text",))
    return (_texts(item.get("content"), ("reasoning_text",))
            or _texts(item.get("summary"), ("summary_text",)))


def usage_back(wire: object) -> dict[str, Any] | None:
    """Recorded usage of Responses usage (``input_tokens`` includes the cached ones)."""
    if not isinstance(wire, dict) or impossible_usage(wire, (
            "input_tokens", "output_tokens", "input_tokens_details.cached_tokens",
            "output_tokens_details.reasoning_tokens")):
        return None
    inp = wire.get("input_tokens_details")
    out = wire.get("output_tokens_details")
    cached = count(inp.get("cached_tokens")) if isinstance(inp, dict) else 0
    return {"inputTokens": count(wire.get("input_tokens")) - cached,
            "outputTokens": count(wire.get("output_tokens")), "cacheReadTokens": cached,
            "reasoningTokens": count(out.get("reasoning_tokens")) if isinstance(out, dict) else 0}


def _failure(error: object) -> dict[str, Any]:
    error = error if isinstance(error, dict) else {}
    code, message = error.get("code"), error.get("message")
    return {"code": code if isinstance(code, str) and code else "ERROR",
            "message": message if isinstance(message, str) and message else "the response failed"}


class ResponsesRebuilder:
    """Folds one Responses event stream into recorded chunks, item by item."""

    def __init__(self) -> None:
        self.ended = False
        self._blocks: list[Block] = []
        self._open: dict[Any, Block] = {}
        self._final: dict[str, Any] = {}
        self._status = "response.completed"

    def feed(self, event: SseEvent) -> list[Chunk]:
        if not event.data.strip():
            return []
        data = upstream_json(event.data)
        if not isinstance(data, dict):
            raise malformed("an event", data)
        kind = data.get("type", event.event)
        kind = kind if isinstance(kind, str) else None
        if kind == "error" or event.event == "error":
            message, code = data.get("message"), data.get("code")
            raise StreamFailure(message if isinstance(message, str) and message
                                else "stream error",
                                code=code if isinstance(code, str) and code else None)
        if kind == "response.output_item.added":
            return self._added(key_of(data.get("output_index")),
                               of_type(data.get("item"), dict, "an output item"))
        if kind in _DELTAS:
            return self._delta(key_of(data.get("output_index")), _DELTAS[str(kind)],
                               of_type(data.get("delta"), str, f"a {kind} event's delta"))
        if kind == "response.output_item.done":
            return self._done(key_of(data.get("output_index")),
                              of_type(data.get("item"), dict, "an output item"))
        if kind in _ENDS:
            self._final = of_type(data.get("response"), dict, f"a {kind} event's response") or {}
            self._status = str(kind)
            self.ended = True
        return []

    def _added(self, index: Any, item: dict[str, Any] | None) -> list[Chunk]:
        item = item or {}
        kind = _KINDS.get(of_type(item.get("type"), str, "an output item's type"))
        if kind is None or index in self._open:
            return []
        block = Block(kind, len(self._blocks))
        if kind == "tool-call":
            block.id = of_type(item.get("call_id"), str, "a function_call item's call_id")
            block.name = of_type(item.get("name"), str, "a function_call item's name")
        self._blocks.append(block)
        self._open[index] = block
        return [{"type": "block-start", "index": block.index, "blockType": kind}]

    def _delta(self, index: Any, kind: str, text: str | None) -> list[Chunk]:
        block = self._open.get(index)
        if block is None or block.kind != kind:
            return []
        text = text or ""
        block.parts.append(text)
        if kind == "tool-call":
            chunk: Chunk = {"type": "tool-call-delta", "index": block.index, "id": block.id}
            if block.name is not None:
                chunk["name"] = block.name
            chunk["argumentsDelta"] = text
            return [chunk]
        return [{"type": f"{kind}-delta", "index": block.index, "text": text}]

    def _done(self, index: Any, item: dict[str, Any] | None) -> list[Chunk]:
        block = self._open.pop(index, None)
        if block is None:
            return []
        block.preset = _item_text(block.kind, item or {})
        return [{"type": "block-end", "index": block.index, "block": block.whole()}]

    def end(self) -> list[Chunk]:
        out: list[Chunk] = []
        for index in list(self._open):
            out += self._done(index, {})
        usage = usage_back(self._final.get("usage"))
        if usage is not None:
            out.append({"type": "usage", "usage": usage})
        out.append({"type": "finish", "reason": self._reason()})
        return out

    def _reason(self) -> dict[str, Any]:
        if self._status == "response.failed":
            return {"kind": "error", "failure": _failure(self._final.get("error"))}
        if self._status == "response.incomplete":
            details = self._final.get("incomplete_details")
            why = details.get("reason") if isinstance(details, dict) else None
            if why in (None, "max_output_tokens"):
                return {"kind": "max-tokens"}
            return {"kind": "error", "failure": {"code": str(why).upper(),
                                                 "message": f"the response is incomplete ({why})"}}
        tools = any(b.kind == "tool-call" for b in self._blocks)
        return {"kind": "tool-calls" if tools else "stop"}


def _events_of_response(response: dict[str, Any]) -> list[SseEvent]:
    """The event stream that carries one whole response (each item with its content at once)."""
    def event(data: dict[str, Any]) -> SseEvent:
        return SseEvent(str(data["type"]), json.dumps(data))

    out: list[SseEvent] = []
    output = of_type(response.get("output"), list, "a response's output") or []
    for k, item in enumerate(output):
        if not isinstance(item, dict):
            raise malformed("a response's output item", item)
        out.append(event({"type": "response.output_item.added", "output_index": k, "item": item}))
        kind = _KINDS.get(str(item.get("type")))
        if kind is not None:
            whole = _item_text(kind, item)
            if whole:
                delta = {"text": "response.output_text.delta",
                         "reasoning": "response.reasoning_text.delta",
                         "tool-call": "response.function_call_arguments.delta"}[kind]
                out.append(event({"type": delta, "output_index": k, "delta": whole}))
        out.append(event({"type": "response.output_item.done", "output_index": k, "item": item}))
    status = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
        str(response.get("status")), "response.completed")
    out.append(event({"type": status, "response": response}))
    return out


class OpenAIResponses:
    """The OpenAI Responses wire (docs/format.md#wire-responses)."""

    name: str = "responses"
    routes: tuple[str, ...] = ("/v1/responses",)

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation as the Responses request reading has it."""
        return conversation_of(self.name, body)

    def rebuilder(self) -> ResponsesRebuilder:
        return ResponsesRebuilder()

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """The chunks the same response streamed with one delta per item rebuilds to."""
        if not isinstance(body, dict) or body.get("object") != "response":
            raise ValueError("not a response")
        return rebuild_events(ResponsesRebuilder(), _events_of_response(body))

    def error_message(self, status: int, body: bytes) -> str:
        return upstream_error_message(status, body)


OPENAI_RESPONSES = OpenAIResponses()
"""The Responses dialect."""
