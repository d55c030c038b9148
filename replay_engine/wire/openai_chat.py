"""Recorded chunks on the OpenAI / DeepSeek chat-completions wire, ``POST /v1/chat/completions``
(docs/format.md#wire-openai-chat), and ``ChatDialect``, which puts it behind the server's dialect seam.

``ChatStreamEncoder`` turns one call's chunks into pre-encoded ``data: ...`` SSE
events (the hot path: text and reasoning deltas are spliced into byte
templates); ``CompletionAssembler`` builds the ``stream: false`` answer from
the same chunks. Both are pure: no I/O, no engine.

A recorded error finish ends the call like a throw after its prefix (one error event, no
``[DONE]``; ``stream: false`` an HTTP error), since no OpenAI-style client knows a failure
code as a finish reason; ``WireOptions.chat_error_finish = "reason"`` sends the code in lower
case as ``finish_reason`` instead, as DeepSeek's own clients read it. An error finish's usage
has no place on the wire then.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ..errors import ScriptedFailure
from ..jsonnumbers import count
from ..models import AnyEntry
from .dialect import (
    CallRequest,
    ChatErrorFinish,
    Dialect,
    failure_of,
    is_error_finish,
    openai_error_body,
)
from .dialect import status_for_code as status_for_code
from .jsonbytes import encode as encode_json

DONE_EVENT = b"data: [DONE]\n\n"
FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}
_encode = encode_json


def error_event(message: str, code: str) -> bytes:
    """The SSE event that ends a stream failing after its first byte (no ``[DONE]`` follows)."""
    return b"data: " + _encode({"error": {"message": message, "code": code}}) + b"\n\n"


def finish_reason(reason: object) -> str:
    """Wire ``finish_reason`` of a recorded finish reason (error: its failure code in lower
    case, the ``--chat-error-finish reason`` form)."""
    if not isinstance(reason, dict):
        return "stop"
    kind = reason.get("kind")
    if kind == "error":
        return failure_of(reason)[1].lower()
    if isinstance(kind, str):
        return FINISH_REASONS.get(kind, kind)
    return "stop"


def usage_to_wire(usage: object) -> dict[str, Any]:
    """DeepSeek usage of a recorded usage; counters the recording lacks stay off the wire.

    No recorded usage at all gives the four base counters as 0 (what ``stream: false``
    answers, since every client expects usage there).
    """
    if not isinstance(usage, dict):
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                "prompt_cache_miss_tokens": 0}
    inp = count(usage.get("inputTokens"))
    out = count(usage.get("outputTokens"))
    cache = count(usage.get("cacheReadTokens"))
    wire: dict[str, Any] = {
        "prompt_tokens": inp + cache,
        "completion_tokens": out,
        "total_tokens": inp + cache + out,
        "prompt_cache_miss_tokens": inp,
    }
    if "cacheReadTokens" in usage:
        wire["prompt_cache_hit_tokens"] = cache
        wire["prompt_tokens_details"] = {"cached_tokens": cache}
    if "reasoningTokens" in usage:
        wire["completion_tokens_details"] = {"reasoning_tokens": count(usage.get("reasoningTokens"))}
    return wire


def new_completion_id() -> str:
    """A fresh ``chatcmpl-...`` id."""
    return "chatcmpl-" + uuid.uuid4().hex[:24]


class _Blocks:
    """Per-call block bookkeeping shared by the stream encoder and the assembler."""

    __slots__ = ("types", "tool_ordinal", "had_delta", "sent")

    def __init__(self) -> None:
        self.types: dict[Any, str] = {}
        self.tool_ordinal: dict[Any, int] = {}
        self.had_delta: set[Any] = set()
        self.sent: dict[Any, tuple[Any, Any]] = {}
        """Per tool block: the id and name its deltas last put on the wire."""

    def tool_index(self, block: Any) -> int:
        ordinal = self.tool_ordinal.get(block)
        if ordinal is None:
            ordinal = self.tool_ordinal[block] = len(self.tool_ordinal)
        return ordinal

    def delta_for(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """The wire ``delta`` a content chunk maps to (None for framing chunks)."""
        kind = chunk.get("type")
        index = chunk.get("index")
        if isinstance(index, list | dict):  # a block is keyed by its index: make it hashable
            index = repr(index)
        if kind == "text-delta":
            self.had_delta.add(index)
            return {"content": chunk.get("text", "")}
        if kind == "reasoning-delta":
            self.had_delta.add(index)
            return {"reasoning_content": chunk.get("text", "")}
        if kind == "tool-call-delta":
            self.had_delta.add(index)
            return {"tool_calls": [self._tool(index, chunk.get("id"), chunk.get("name"),
                                              chunk.get("argumentsDelta", ""), "name" in chunk)]}
        if kind == "block-start":
            self.types[index] = str(chunk.get("blockType"))
            if chunk.get("blockType") == "tool-call":
                self.tool_index(index)
            return None
        if kind == "block-end" and index not in self.had_delta:
            return self._whole_block(index, chunk.get("block"))
        return None

    def _tool(self, index: Any, call_id: Any, name: Any, arguments: Any,
              with_name: bool) -> dict[str, Any]:
        """One tool-call delta: ``id``, ``type`` and ``name`` only where the block's value is new.

        Stream accumulators concatenate every string they receive, so a repeated id or
        name would arrive doubled (OpenAI sends them once, on the block's first delta).
        """
        call: dict[str, Any] = {"index": self.tool_index(index)}
        first = index not in self.sent
        last_id, last_name = self.sent.get(index, (None, None))
        if call_id is not None and (first or call_id != last_id):
            call["id"] = call_id
            last_id = call_id
        if first or "id" in call:
            call["type"] = "function"
        function: dict[str, Any] = {}
        if with_name and name is not None and (first or name != last_name):
            function["name"] = name
            last_name = name
        function["arguments"] = arguments if isinstance(arguments, str) else ""
        call["function"] = function
        self.sent[index] = (last_id, last_name)
        return call

    def _whole_block(self, index: Any, block: object) -> dict[str, Any] | None:
        """A block recorded only as its block-end goes out as one delta with all its content."""
        if not isinstance(block, dict):
            return None
        self.had_delta.add(index)
        kind = block.get("type", self.types.get(index))
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            return {"content": block["text"]}
        if kind == "reasoning" and isinstance(block.get("text"), str) and block["text"]:
            return {"reasoning_content": block["text"]}
        if kind == "tool-call":
            return {"tool_calls": [self._tool(index, block.get("id"), block.get("name"),
                                              block.get("arguments", ""), "name" in block)]}
        return None


class ChatStreamEncoder:
    """Encodes one call's recorded chunks as ``chat.completion.chunk`` SSE events.

    ``include_usage`` (the request's ``stream_options.include_usage``) sends usage the way
    OpenAI does then: ``"usage": null`` on every chunk, and the usage on one extra
    ``choices: []`` chunk after the finish chunk. ``error_finish`` says how a recorded error
    finish ends the stream (``WireOptions.chat_error_finish``).
    """

    def __init__(self, model: str, completion_id: str | None = None,
                 created: int | None = None, *, include_usage: bool = False,
                 error_finish: ChatErrorFinish = "error") -> None:
        self.completion_id = completion_id or new_completion_id()
        self.created = int(time.time()) if created is None else created
        self.model = model
        self.include_usage = include_usage
        self.error_finish = error_finish
        self._blocks = _Blocks()
        self._usage: dict[str, Any] | None = None
        self._finished = False
        self._failed = False
        head = (b'data: {"id":' + _encode(self.completion_id)
                + b',"object":"chat.completion.chunk","created":' + str(self.created).encode()
                + b',"model":' + _encode(model))
        self._head = head
        self._choice = head + b',"choices":[{"index":0,"delta":'
        self._end = b',"usage":null}\n\n' if include_usage else b"}\n\n"
        self._tail = b',"finish_reason":null}]' + self._end
        self._content = self._choice + b'{"content":'
        self._reasoning = self._choice + b'{"reasoning_content":'
        self._delta_end = b"}" + self._tail
        self._had_delta = self._blocks.had_delta

    def opening(self) -> bytes:
        """The role chunk every stream starts with (sent as soon as the call is bound)."""
        return self._choice + b'{"role":"assistant","content":""}' + self._tail

    def _usage_event(self, wire: dict[str, Any]) -> bytes:
        return self._head + b',"choices":[],"usage":' + _encode(wire) + b"}\n\n"

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        """The SSE event(s) for one recorded chunk, or None when it maps to nothing."""
        if self._failed:
            return None
        kind = chunk.get("type")
        if kind == "text-delta":
            self._had_delta.add(chunk.get("index"))
            return b"".join((self._content, _encode(chunk.get("text", "")), self._delta_end))
        if kind == "reasoning-delta":
            self._had_delta.add(chunk.get("index"))
            return b"".join((self._reasoning, _encode(chunk.get("text", "")), self._delta_end))
        if kind == "usage":
            wire = usage_to_wire(chunk.get("usage"))
            if self._finished:
                return self._usage_event(wire)
            self._usage = wire
            return None
        if kind == "finish":
            self._finished = True
            recorded = chunk.get("reason")
            if self.error_finish == "error" and is_error_finish(recorded):
                return self.fail(*failure_of(recorded))
            reason = _encode(finish_reason(recorded))
            finish = self._choice + b'{},"finish_reason":' + reason + b"}]"
            usage, self._usage = self._usage, None
            if self.include_usage:
                event = finish + self._end
                return event + self._usage_event(usage) if usage is not None else event
            if usage is not None:
                return finish + b',"usage":' + _encode(usage) + b"}\n\n"
            return finish + b"}\n\n"
        delta = self._blocks.delta_for(chunk)
        if delta is None:
            return None
        return self._choice + _encode(delta) + self._tail

    def close(self) -> bytes:
        """What ends a completed stream: a pending usage (no finish was recorded), then [DONE]
        (nothing after an error finish, which ended the stream already)."""
        if self._failed:
            return b""
        if self._usage is not None:
            usage, self._usage = self._usage, None
            return self._usage_event(usage) + DONE_EVENT
        return DONE_EVENT

    def fail(self, message: str, code: str) -> bytes:
        """The error event ending a stream that fails after its first byte (no ``[DONE]``)."""
        self._failed = True
        return error_event(message, code)


class CompletionAssembler:
    """Builds the ``stream: false`` ``chat.completion`` from a call's chunks (``error_finish``:
    how a recorded error finish answers, ``WireOptions.chat_error_finish``)."""

    def __init__(self, *, error_finish: ChatErrorFinish = "error") -> None:
        self._blocks = _Blocks()
        self.error_finish = error_finish
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.tools: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.failure: tuple[str, str] | None = None
        """Message and code of a recorded error finish that fails the call."""
        self.usage: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk into the answer."""
        kind = chunk.get("type")
        if kind == "usage":
            self.usage = usage_to_wire(chunk.get("usage"))
            return
        if kind == "finish":
            recorded = chunk.get("reason")
            if self.error_finish == "error" and is_error_finish(recorded):
                self.failure = failure_of(recorded)
            self.finish = finish_reason(recorded)
            return
        delta = self._blocks.delta_for(chunk)
        if delta is None:
            return
        if "content" in delta:
            self.content.append(delta["content"])
        elif "reasoning_content" in delta:
            self.reasoning.append(delta["reasoning_content"])
        else:
            for call in delta["tool_calls"]:
                slot = self.tools.setdefault(
                    call["index"], {"id": None, "type": "function",
                                    "function": {"name": None, "arguments": ""}})
                if call.get("id") is not None:
                    slot["id"] = call["id"]
                function = call["function"]
                if function.get("name") is not None:
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] += function.get("arguments", "")

    def result(self, model: str, completion_id: str | None = None,
               created: int | None = None) -> dict[str, Any]:
        """The assembled ``chat.completion`` object; ``ScriptedFailure`` for an error finish
        (answered as the HTTP error a throw after its prefix gets)."""
        if self.failure is not None:
            raise ScriptedFailure(*self.failure)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
        }
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tools:
            message["tool_calls"] = [self.tools[k] for k in sorted(self.tools)]
        out: dict[str, Any] = {
            "id": completion_id or new_completion_id(),
            "object": "chat.completion",
            "created": int(time.time()) if created is None else created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish or "stop"}],
        }
        out["usage"] = self.usage if self.usage is not None else usage_to_wire(None)
        return out


class ChatDialect(Dialect):
    """``POST /v1/chat/completions``: OpenAI / DeepSeek chat completions, streamed or not."""

    name = "openai"
    routes = ("/v1/chat/completions",)

    def __init__(self, *, error_finish: ChatErrorFinish = "error") -> None:
        self.error_finish: ChatErrorFinish = error_finish
        """How a recorded error finish ends a call (``WireOptions.chat_error_finish``)."""

    def request(self, body: dict[str, Any]) -> CallRequest:
        model = body.get("model")
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return CallRequest(model if isinstance(model, str) else "replay", body.get("stream") is True,
                           self.corpus(body), {"include_usage": include_usage})

    def encoder(self, call: CallRequest, entry: AnyEntry) -> ChatStreamEncoder:
        return ChatStreamEncoder(str(call.model), error_finish=self.error_finish,
                                 include_usage=bool(call.options.get("include_usage")))

    def assembler(self, call: CallRequest) -> CompletionAssembler:
        return CompletionAssembler(error_finish=self.error_finish)

    def answer(self, assembler: Any, call: CallRequest, label: str) -> dict[str, Any]:
        done: CompletionAssembler = assembler
        return done.result(str(call.model))

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return openai_error_body(message, code, refused=refused)

