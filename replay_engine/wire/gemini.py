"""Recorded chunks on the Google Gemini wire, ``:generateContent`` / ``:streamGenerateContent``
(docs/format.md#wire-gemini), and ``GeminiDialect``, which puts it behind the server's dialect seam.

Where the wire cannot carry a recorded call exactly: a tool block is one whole
``functionCall`` part sent when the block ends (Gemini has no argument deltas), with its
arguments parsed, so their spacing is lost and arguments that are not a JSON object fail the
call (a max-tokens call sends ``args: {}``); a block's recorded ``index``, its block-start and
block-end, and a recorded finish's ``stopReason`` have no place on the wire; stop and
tool-calls both finish ``STOP``. ``thoughtSignature`` is bytes in Gemini's clients: a recorded
signature that is canonical base64 goes out unchanged, any other is sent base64-encoded (its
UTF-8 bytes are what the client decodes). A recorded ``outputTokens`` counts the reasoning
tokens too, while Google counts thoughts beside the candidates: ``candidatesTokenCount`` is
output minus reasoning and ``totalTokenCount`` prompt plus output, so a client adding
candidates and thoughts gets the recorded output back; ``usageMetadata`` is sent only when
the call recorded usage.

Streamed, each recorded delta is one ``GenerateContentResponse`` event (``data: {...}``, no
``[DONE]``; a JSON array of them without ``alt=sse``); the last carries ``finishReason`` and
``usageMetadata``. Failures after the first byte end the stream with one
``{"error": {"code", "message", "status"}}`` event, which google-genai raises as ``APIError``.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Sequence
from typing import Any

from ..errors import ScriptedFailure
from ..jsonnumbers import count
from ..models import AnyEntry
from .blocks import Block, BlockWalker, SignatureCollector, cut_short, entry_chunks, tool_arguments
from .dialect import CallRequest, Dialect, RouteInfo, failure_of, status_for_code
from .jsonbytes import encode as _encode

API_VERSIONS = ("v1beta", "v1")
"""Both answer alike: SDK versions and options pick either (google-genai 3.x sends ``v1``)."""
GENERATE = "generateContent"
STREAM_GENERATE = "streamGenerateContent"
ROUTES = tuple(f"/{version}/models/{{model}}:{method}" for version in API_VERSIONS
               for method in (GENERATE, STREAM_GENERATE))
"""The model-call routes, shared with the recorder's Gemini dialect."""
JSON_MEDIA_TYPE = b"application/json"

FINISH_REASONS = {"stop": "STOP", "tool-calls": "STOP", "max-tokens": "MAX_TOKENS"}
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 501: "UNIMPLEMENTED",
                503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 529: "UNAVAILABLE"}
"""Google's ``error.status`` by HTTP status; other 4xx are INVALID_ARGUMENT, other 5xx INTERNAL."""
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"

_OWNED = re.compile(r"^/v1(?:beta)?/models/[^/]+:[A-Za-z]+$")


def status_name(status: int) -> str:
    """Google's canonical ``error.status`` of an HTTP status."""
    return STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


def error_body(message: str, code: str, status: int) -> dict[str, Any]:
    """Google's error shape; the replay code rides in ``details[0].reason``."""
    return {"error": {"code": status, "message": message, "status": status_name(status),
                      "details": [{"@type": ERROR_INFO, "reason": code, "domain": "dsh-replay"}]}}


def usage_to_wire(usage: dict[str, Any]) -> dict[str, Any]:
    """``usageMetadata`` of a recorded usage (cached and thought counts only when recorded).

    ``outputTokens`` includes ``reasoningTokens``; Google's candidates do not include thoughts,
    so candidates are output minus reasoning (never below 0) and the total is prompt + output.
    """
    cache = count(usage.get("cacheReadTokens"))
    prompt = count(usage.get("inputTokens")) + cache
    output = count(usage.get("outputTokens"))
    thoughts = count(usage.get("reasoningTokens"))
    wire: dict[str, Any] = {"promptTokenCount": prompt,
                            "candidatesTokenCount": max(output - thoughts, 0),
                            "totalTokenCount": prompt + output}
    if "cacheReadTokens" in usage:
        wire["cachedContentTokenCount"] = cache
    if "reasoningTokens" in usage:
        wire["thoughtsTokenCount"] = thoughts
    return wire


def wire_signature(signature: str) -> str:
    """A recorded signature as ``thoughtSignature``: canonical base64 unchanged, else encoded."""
    try:
        if base64.b64encode(base64.b64decode(signature, validate=True)).decode() == signature:
            return signature
    except (binascii.Error, ValueError):
        pass
    return base64.b64encode(signature.encode()).decode()


def function_call(block: Block, *, cut: bool, call: str) -> dict[str, Any]:
    """A tool block as one ``functionCall`` part (``cut``: a max-tokens call, whose unparsable
    arguments become ``{}``); UnrepresentableCallError for arguments that are not an object."""
    args = tool_arguments(block, cut=cut, call=call, carried_as="the Gemini wire's functionCall args")
    out: dict[str, Any] = {"name": block.name or "", "args": args}
    if block.call_id is not None:
        out = {"id": block.call_id, **out}
    return {"functionCall": out}


class _Plan(SignatureCollector):
    """The whole call walked ahead: each block's delta count and signature, and the finish."""

    keep_parts = False

    def __init__(self, chunks: Sequence[dict[str, Any]]) -> None:
        super().__init__()
        self.deltas: dict[int, int] = {}
        for chunk in chunks:
            self.feed(chunk)

    def on_delta(self, block: Block, text: str) -> bytes:
        self.deltas[block.ordinal] = self.deltas.get(block.ordinal, 0) + 1
        return b""


class _ResponseMaker:
    """``GenerateContentResponse`` objects of one call: the same id and model on each."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.response_id = uuid.uuid4().hex[:22]

    def response(self, parts: list[dict[str, Any]], *, finish: str | None = None,
                 usage: dict[str, Any] | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        out: dict[str, Any] = {"candidates": [candidate]}
        if usage is not None:
            out["usageMetadata"] = usage_to_wire(usage)
        out["modelVersion"] = self.model
        out["responseId"] = self.response_id
        return out


class GeminiStreamEncoder(BlockWalker):
    """Encodes one call's recorded chunks as ``GenerateContentResponse`` events: SSE, or the
    elements of one JSON array (``sse`` False)."""

    def __init__(self, model: str, chunks: Sequence[dict[str, Any]] = (), *,
                 sse: bool = True) -> None:
        super().__init__(chunks)
        self.plan = _Plan(chunks)
        self.maker = _ResponseMaker(model)
        self.sse = sse
        self._sent = 0
        self._ended = False
        self._signed: set[int] = set()

    def _frame(self, data: dict[str, Any]) -> bytes:
        self._sent += 1
        if self.sse:
            return b"data: " + _encode(data) + b"\n\n"
        return (b"," if self._sent > 1 else b"") + _encode(data)

    def opening(self) -> bytes:
        """Nothing on SSE (Gemini sends no preamble); ``[`` opening the JSON array."""
        return b"" if self.sse else b"["

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        """The response event(s) of one recorded chunk, or None when it maps to nothing."""
        if self._ended:
            return None
        return self.feed(chunk) or None

    def _part(self, block: Block, text: str, *, last: bool) -> dict[str, Any]:
        if block.kind == "text":
            return {"text": text}
        part: dict[str, Any] = {"text": text, "thought": True}
        signature = self.plan.signatures.get(block.ordinal)
        if last and signature is not None:
            part["thoughtSignature"] = wire_signature(signature)
            self._signed.add(block.ordinal)
        return part

    def on_delta(self, block: Block, text: str) -> bytes:
        if block.kind == "tool-call":
            return b""
        seen = len(block.parts) if self.keep_parts else 0
        last = seen >= self.plan.deltas.get(block.ordinal, 0)
        return self._frame(self.maker.response([self._part(block, text, last=last)]))

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        if block.kind == "tool-call":
            part = function_call(block, cut=cut_short(self.plan.reason), call="this call")
            return self._frame(self.maker.response([part]))
        signature = self.plan.signatures.get(block.ordinal)
        if block.kind == "reasoning" and signature is not None and block.ordinal not in self._signed:
            self._signed.add(block.ordinal)
            part = {"text": "", "thought": True, "thoughtSignature": wire_signature(signature)}
            return self._frame(self.maker.response([part]))
        return b""

    def on_finish(self, reason: dict[str, Any]) -> bytes:
        self._ended = True
        if reason.get("kind") == "error":
            return self.fail(*failure_of(reason))
        return self._last(reason)

    def _last(self, reason: dict[str, Any]) -> bytes:
        kind = reason.get("kind")
        finish = FINISH_REASONS.get(kind, "STOP") if isinstance(kind, str) else "STOP"
        out = self._frame(self.maker.response([], finish=finish, usage=self.usage))
        return out if self.sse else out + b"]"

    def close(self) -> bytes:
        """What ends a stream whose chunks ran out: a ``STOP`` response when none was recorded."""
        if self._ended:
            return b""
        self._ended = True
        return self.close_open() + self._last({"kind": "stop"})

    def fail(self, message: str, code: str) -> bytes:
        """The error event of a failure after the first byte (the stream then closes)."""
        self._ended = True
        out = self._frame(error_body(message, code, status_for_code(code)))
        return out if self.sse else out + b"]"


class GeminiAssembler(SignatureCollector):
    """Builds the ``:generateContent`` answer: one part per recorded block."""

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk into the answer."""
        self.feed(chunk)

    def result(self, model: str, *, call: str = "this call") -> dict[str, Any]:
        """The assembled response; ScriptedFailure for a recorded error finish,
        UnrepresentableCallError for tool arguments that are not a JSON object."""
        if not self.finished:
            self.close_open()
        reason = self.reason or {"kind": "stop"}
        if reason.get("kind") == "error":
            raise ScriptedFailure(*failure_of(reason))
        parts: list[dict[str, Any]] = []
        for block in self.blocks:
            if block.kind == "tool-call":
                parts.append(function_call(block, cut=cut_short(reason), call=call))
                continue
            part: dict[str, Any] = {"text": block.content}
            if block.kind == "reasoning":
                part["thought"] = True
                signature = self.signatures.get(block.ordinal)
                if signature is not None:
                    part["thoughtSignature"] = wire_signature(signature)
            parts.append(part)
        kind = reason.get("kind")
        finish = FINISH_REASONS.get(kind, "STOP") if isinstance(kind, str) else "STOP"
        return _ResponseMaker(model).response(parts, finish=finish, usage=self.usage)


class GeminiDialect(Dialect):
    """The Gemini API's ``generateContent`` and ``streamGenerateContent``, under v1beta and v1."""

    name = "gemini"
    routes = ROUTES

    def owns(self, path: str) -> bool:
        return path.startswith("/v1beta/") or _OWNED.match(path) is not None

    def request(self, body: dict[str, Any]) -> CallRequest:
        return CallRequest("replay", False, self.corpus(body))

    def read(self, body: dict[str, Any], route: RouteInfo) -> CallRequest:
        model = route.params.get("model") or "replay"
        stream = route.path.endswith(":" + STREAM_GENERATE)
        sse = route.query.get("alt") == "sse"
        return CallRequest(model, stream, self.corpus(body), {"sse": sse})

    def stream_media_type(self, call: CallRequest) -> bytes:
        return self.media_type if call.options.get("sse") else JSON_MEDIA_TYPE

    def encoder(self, call: CallRequest, entry: AnyEntry) -> GeminiStreamEncoder:
        return GeminiStreamEncoder(str(call.model), entry_chunks(entry),
                                   sse=bool(call.options.get("sse")))

    def assembler(self, call: CallRequest) -> GeminiAssembler:
        return GeminiAssembler()

    def answer(self, assembler: Any, call: CallRequest, label: str) -> dict[str, Any]:
        done: GeminiAssembler = assembler
        return done.result(str(call.model), call=label)

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return error_body(message, code, status)
