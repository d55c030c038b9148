"""The recorder's Google Gemini dialect, ``:generateContent`` / ``:streamGenerateContent``
(docs/format.md#wire-gemini read backwards).

Every streamed event is one ``GenerateContentResponse``; its first candidate's parts are
folded as a client of that wire folds them: ``text`` parts into one text block, ``thought``
parts into one reasoning block (a ``thoughtSignature`` on a thought part becomes the
reasoning block-end's ``signature``), each ``functionCall`` part into a tool block of its own
with one delta holding its arguments as compact JSON. Blocks open in first-seen order; their
block ends, the usage of ``usageMetadata`` and the finish of ``finishReason`` come at the
end. Gemini has no end marker: the response that carries a ``finishReason`` ends the call.
``streamGenerateContent`` without ``alt=sse`` answers one JSON array of responses and
``generateContent`` one response; both are read as the stream they would have been.

Producible calls (what a recording served on this wire rebuilds exactly): at most one text
and one reasoning block, tool blocks whose arguments are a JSON object written compactly,
block ends holding the concatenated deltas, usage and a stop, tool-calls or max-tokens
finish. A ``thoughtSignature`` Gemini puts on a non-thought part, and finish reasons other
than STOP and MAX_TOKENS (kept as ``stopReason`` of a stop), have no exact recorded form.
"""

from __future__ import annotations

import json
from typing import Any

from ..jsonnumbers import as_safe_integer
from ..statuscodes import code_for_status
from ..wire.gemini import ROUTES
from .dialect import (
    INVALID_RESPONSE,
    Block,
    Chunk,
    RequestMessage,
    SseEvent,
    StreamFailure,
    conversation_of,
    impossible_usage,
    malformed,
    of_type,
    rebuild_events,
    upstream_error_message,
)

_FINISH = {"STOP": "stop", "MAX_TOKENS": "max-tokens"}


def _failure(error: object) -> StreamFailure:
    """The failure of a Google error object: the replay code in ``details[].reason`` when
    given, else the code of its HTTP ``code``."""
    if not isinstance(error, dict):
        return StreamFailure("the upstream's stream reported an error")
    message = error.get("message")
    text = message if isinstance(message, str) and message else "stream error"
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        reason = detail.get("reason") if isinstance(detail, dict) else None
        if isinstance(reason, str) and reason:
            return StreamFailure(text, code=reason)
    status = as_safe_integer(error.get("code"))
    return StreamFailure(text, code=code_for_status(status) if status else "SERVER")


def usage_back(wire: object) -> dict[str, Any] | None:
    """Recorded usage of ``usageMetadata`` (``promptTokenCount`` includes the cached ones;
    ``outputTokens`` is candidates plus thoughts, as the replay wire splits it)."""
    if not isinstance(wire, dict) or impossible_usage(wire, (
            "promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount",
            "thoughtsTokenCount")):
        return None
    cached = as_safe_integer(wire.get("cachedContentTokenCount"))
    prompt = as_safe_integer(wire.get("promptTokenCount")) or 0
    thoughts = as_safe_integer(wire.get("thoughtsTokenCount"))
    candidates = as_safe_integer(wire.get("candidatesTokenCount")) or 0
    usage: dict[str, Any] = {"inputTokens": prompt - (cached or 0),
                             "outputTokens": candidates + (thoughts or 0)}
    if cached is not None:
        usage["cacheReadTokens"] = cached
    if thoughts is not None:
        usage["reasoningTokens"] = thoughts
    return usage


class GeminiRebuilder:
    """Folds one Gemini response stream into recorded chunks."""

    def __init__(self) -> None:
        self.ended = False
        self._blocks: list[Block] = []
        self._by_kind: dict[str, Block] = {}
        self._usage: dict[str, Any] | None = None
        self._finish: str | None = None

    def feed(self, event: SseEvent) -> list[Chunk]:
        data = event.data.strip()
        if not data:
            return []
        try:
            response = json.loads(data)
        except ValueError:
            raise StreamFailure(f"the upstream sent an event that is not JSON: {data[:200]!r}",
                                code=INVALID_RESPONSE) from None
        return self.fold(response)

    def fold(self, response: object) -> list[Chunk]:
        """The chunks one ``GenerateContentResponse`` adds (raises for an error object, and
        INVALID_RESPONSE for a part that is not of its wire type)."""
        if not isinstance(response, dict):
            raise malformed("a response", response)
        if "error" in response and "candidates" not in response:
            raise _failure(response["error"])
        usage = usage_back(response.get("usageMetadata"))
        if usage is not None:
            self._usage = usage
        out: list[Chunk] = []
        candidates = of_type(response.get("candidates"), list, "a response's candidates")
        first = of_type(candidates[0], dict, "a candidate") if candidates else None
        if first is None:
            return out
        content = of_type(first.get("content"), dict, "a candidate's content") or {}
        for part in of_type(content.get("parts"), list, "a content's parts") or []:
            if not isinstance(part, dict):
                raise malformed("a content part", part)
            self._part(part, out)
        reason = of_type(first.get("finishReason"), str, "a candidate's finishReason")
        if reason:
            self._finish = reason
            self.ended = True
        return out

    def _open(self, kind: str, out: list[Chunk]) -> Block:
        block = Block(kind, len(self._blocks))
        self._blocks.append(block)
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        return block

    def _part(self, part: dict[str, Any], out: list[Chunk]) -> None:
        call = of_type(part.get("functionCall"), dict, "a part's functionCall")
        if call is not None:
            block = self._open("tool-call", out)
            block.id = of_type(call.get("id"), str, "a functionCall's id")
            block.name = of_type(call.get("name"), str, "a functionCall's name")
            args = call.get("args")
            arguments = json.dumps(args if args is not None else {}, ensure_ascii=False,
                                   separators=(",", ":"))
            block.parts.append(arguments)
            delta: Chunk = {"type": "tool-call-delta", "index": block.index, "id": block.id}
            if block.name is not None:
                delta["name"] = block.name
            delta["argumentsDelta"] = arguments
            out.append(delta)
            return
        text = of_type(part.get("text"), str, "a part's text")
        thought = part.get("thought") is True
        kind = "reasoning" if thought else "text"
        if text is not None:
            block = self._by_kind.get(kind) or self._open(kind, out)
            self._by_kind[kind] = block
            block.parts.append(text)
            out.append({"type": f"{kind}-delta", "index": block.index, "text": text})
        signature = part.get("thoughtSignature")
        if thought and isinstance(signature, str) and signature and kind in self._by_kind:
            self._by_kind[kind].signature = signature

    def end(self) -> list[Chunk]:
        out: list[Chunk] = [{"type": "block-end", "index": b.index, "block": b.whole()}
                            for b in self._blocks]
        if self._usage is not None:
            out.append({"type": "usage", "usage": self._usage})
        out.append({"type": "finish", "reason": self._finish_back()})
        return out

    def _finish_back(self) -> dict[str, Any]:
        kind = _FINISH.get(self._finish or "STOP")
        if kind == "stop" and any(b.kind == "tool-call" for b in self._blocks):
            return {"kind": "tool-calls"}
        return {"kind": kind} if kind else {"kind": "stop", "stopReason": self._finish}


class Gemini:
    """The Google Gemini wire (docs/format.md#wire-gemini)."""

    name: str = "gemini"
    routes: tuple[str, ...] = ROUTES

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation as the Gemini request reading has it."""
        return conversation_of(self.name, body)

    def rebuilder(self) -> GeminiRebuilder:
        return GeminiRebuilder()

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """One response (``generateContent``) or a JSON array of them (``streamGenerateContent``
        without ``alt=sse``), read as the stream they carry."""
        responses = body if isinstance(body, list) else [body]
        if not responses or not all(isinstance(r, dict) and ("candidates" in r or "error" in r)
                                    for r in responses):
            raise ValueError("not a GenerateContentResponse")
        try:
            return rebuild_events(GeminiRebuilder(),
                                  [SseEvent(None, json.dumps(r)) for r in responses])
        except StreamFailure as exc:
            if exc.code == INVALID_RESPONSE:  # a part not of its wire type: say which
                raise
            raise ValueError(exc.message) from None

    def error_message(self, status: int, body: bytes) -> str:
        return upstream_error_message(status, body)


GEMINI = Gemini()
"""The Gemini dialect."""
