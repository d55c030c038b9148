"""Recorded chunks on the OpenAI Responses wire, ``POST /v1/responses`` (docs/format.md#wire-responses), and
``ResponsesDialect``, which puts it behind the server's dialect seam.

``ResponsesStreamEncoder`` turns one call's chunks into ``event: <type>`` SSE events numbered
by ``sequence_number`` from 0 (given the entry's chunks when the call binds, so each function
call's item opens with its call_id and name); ``ResponseAssembler`` builds the
``stream: false`` answer, the same final response object the stream ends with. An error
finish is not an HTTP error: it is a ``failed`` response, streamed or not; errors otherwise
have the chat-completions status and body.

Reasoning goes out as a ``summary_text`` part with the ``reasoning_summary_*`` events, as
OpenAI's reasoning models send it and all that some clients read, or, with
``WireOptions.responses_reasoning = "content"``, as ``reasoning_text`` content (the
open-weight models' form); never both, so no client shows it twice. A request's
``previous_response_id`` is echoed; serving stays positional. Every builder renders its
response as it stands (``snapshot``), which ``GET /v1/responses/{id}`` answers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from ..jsonnumbers import count
from ..models import AnyEntry
from .blocks import Block, BlockWalker, entry_chunks
from .dialect import (
    CallRequest,
    Dialect,
    Kept,
    ResponsesReasoning,
    failure_of,
    openai_error_body,
)
from .jsonbytes import encode as encode_json

_encode = encode_json


def usage_to_wire(usage: dict[str, Any] | None) -> dict[str, Any]:
    """Responses usage of a recorded usage (counters the recording lacks are 0)."""
    usage = usage or {}
    cache = count(usage.get("cacheReadTokens"))
    inp = count(usage.get("inputTokens")) + cache
    out = count(usage.get("outputTokens"))
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cache},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": count(usage.get("reasoningTokens"))},
            "total_tokens": inp + out}


def new_response_id() -> str:
    """A fresh ``resp_...`` id."""
    return "resp_" + uuid.uuid4().hex


def _failure(message: str, code: str) -> dict[str, str]:
    """A failed response's ``error`` (``type`` too: ``@ai-sdk/openai`` requires one)."""
    return {"code": code, "message": message, "type": "replay_error"}


_ITEM_PREFIX = {"text": "msg", "reasoning": "rs", "tool-call": "fc"}


class _ResponseBuilder(BlockWalker):
    """Output items and the response object; ``emit`` False builds them without SSE bytes."""

    emit = True

    def __init__(self, model: str, chunks: Sequence[dict[str, Any]] = (), *,
                 response_id: str | None = None, created_at: int | None = None,
                 reasoning: ResponsesReasoning = "summary",
                 previous: str | None = None) -> None:
        super().__init__(chunks)
        self.model = model
        self.response_id = response_id or new_response_id()
        self.created_at = int(time.time()) if created_at is None else created_at
        self.reasoning = reasoning
        self.previous = previous
        """The request's ``previous_response_id``, echoed."""
        self.sequence = 0
        self.items: dict[int, dict[str, Any]] = {}
        self.failure: tuple[str, str] | None = None
        """Message and code of a failure after the first byte (a throw, an abort)."""
        self._stem = self.response_id.removeprefix("resp_")[:24]

    def _event(self, kind: str, fields: dict[str, Any]) -> bytes:
        if not self.emit:
            return b""
        data = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + _encode(data) + b"\n\n"

    def response(self, status: str, output: list[dict[str, Any]],
                 usage: dict[str, Any] | None) -> dict[str, Any]:
        """The response object in a given status."""
        return {
            "id": self.response_id, "object": "response", "created_at": self.created_at,
            "status": status, "error": None, "incomplete_details": None, "instructions": None,
            "max_output_tokens": None, "metadata": {}, "model": self.model, "output": output,
            "parallel_tool_calls": True, "previous_response_id": self.previous,
            "temperature": None, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
            "tools": [], "top_p": None, "truncation": "disabled", "usage": usage,
        }

    def _output(self) -> list[dict[str, Any]]:
        return [self.items[k] for k in sorted(self.items)]

    def final_response(self) -> dict[str, Any]:
        """The response the call ends with: completed, incomplete or failed, with usage."""
        reason = self.reason or {"kind": "stop"}
        kind = reason.get("kind")
        status = {"max-tokens": "incomplete", "error": "failed"}.get(
            kind if isinstance(kind, str) else "", "completed")
        out = self.response(status, self._output(), usage_to_wire(self.usage))
        if status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens"}
        elif status == "failed":
            out["error"] = _failure(*failure_of(reason))
        return out

    def snapshot(self) -> dict[str, Any]:
        """The response as it stands: final once finished, failed after a failure, else in
        progress with the items done so far."""
        if self.failure is not None:
            out = self.response("failed", self._output(), None)
            out["error"] = _failure(*self.failure)
            return out
        if self.finished:
            return self.final_response()
        return self.response("in_progress", self._output(), None)

    def _item(self, block: Block, status: str) -> dict[str, Any]:
        item_id = block.wire
        if block.kind == "reasoning":
            if self.reasoning == "content":
                return {"id": item_id, "type": "reasoning", "summary": [],
                        "content": [{"type": "reasoning_text", "text": block.content}]}
            summary = ([{"type": "summary_text", "text": block.content}]
                       if status == "completed" else [])
            return {"id": item_id, "type": "reasoning", "summary": summary}
        if block.kind == "text":
            content = ([{"type": "output_text", "text": block.content, "annotations": []}]
                       if status == "completed" else [])
            return {"id": item_id, "type": "message", "status": status, "role": "assistant",
                    "content": content}
        return {"id": item_id, "type": "function_call", "status": status,
                "arguments": block.content, "call_id": block.call_id or "",
                "name": block.name or ""}

    def _summary(self, block: Block) -> dict[str, Any]:
        return {"item_id": block.wire, "output_index": block.ordinal, "summary_index": 0}

    def on_start(self, block: Block) -> bytes:
        block.wire = f"{_ITEM_PREFIX[block.kind]}_{self._stem}_{block.ordinal}"
        out = self._event("response.output_item.added",
                          {"output_index": block.ordinal, "item": self._item(block, "in_progress")})
        if block.kind == "text":
            out += self._event("response.content_part.added", {
                "item_id": block.wire, "output_index": block.ordinal, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}})
        elif block.kind == "reasoning" and self.reasoning == "summary":
            out += self._event("response.reasoning_summary_part.added", {
                **self._summary(block), "part": {"type": "summary_text", "text": ""}})
        return out

    def on_delta(self, block: Block, text: str) -> bytes:
        if not self.emit:
            return b""
        if block.kind == "text":
            return self._event("response.output_text.delta", {
                "item_id": block.wire, "output_index": block.ordinal, "content_index": 0,
                "delta": text, "logprobs": []})
        if block.kind == "reasoning":
            if self.reasoning == "summary":
                return self._event("response.reasoning_summary_text.delta",
                                   {**self._summary(block), "delta": text})
            return self._event("response.reasoning_text.delta", {
                "item_id": block.wire, "output_index": block.ordinal, "content_index": 0,
                "delta": text})
        return self._event("response.function_call_arguments.delta", {
            "item_id": block.wire, "output_index": block.ordinal, "delta": text})

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        item = self.items[block.ordinal] = self._item(block, "completed")
        if not self.emit:
            return b""
        where = {"item_id": block.wire, "output_index": block.ordinal}
        if block.kind == "text":
            part = item["content"][0]
            out = (self._event("response.output_text.done", {
                       **where, "content_index": 0, "text": block.content, "logprobs": []})
                   + self._event("response.content_part.done",
                                 {**where, "content_index": 0, "part": part}))
        elif block.kind == "reasoning" and self.reasoning == "summary":
            out = (self._event("response.reasoning_summary_text.done",
                               {**self._summary(block), "text": block.content})
                   + self._event("response.reasoning_summary_part.done",
                                 {**self._summary(block), "part": item["summary"][0]}))
        elif block.kind == "reasoning":
            out = self._event("response.reasoning_text.done",
                              {**where, "content_index": 0, "text": block.content})
        else:
            out = self._event("response.function_call_arguments.done",
                              {**where, "name": item["name"], "arguments": block.content})
        return out + self._event("response.output_item.done",
                                 {"output_index": block.ordinal, "item": item})


class ResponsesStreamEncoder(_ResponseBuilder):
    """Encodes one call's recorded chunks as Responses SSE events."""

    def __init__(self, model: str, chunks: Sequence[dict[str, Any]] = (), *,
                 response_id: str | None = None, created_at: int | None = None,
                 reasoning: ResponsesReasoning = "summary", previous: str | None = None) -> None:
        super().__init__(model, chunks, response_id=response_id, created_at=created_at,
                         reasoning=reasoning, previous=previous)
        self._ended = False

    def opening(self) -> bytes:
        """``response.created`` and ``response.in_progress``, sent as soon as the call is bound."""
        return b"".join(self._event(kind, {"response": self.response("in_progress", [], None)})
                        for kind in ("response.created", "response.in_progress"))

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        """The SSE event(s) of one recorded chunk, or None when it maps to nothing."""
        if self._ended:
            return None
        return self.feed(chunk) or None

    def on_finish(self, reason: dict[str, Any]) -> bytes:
        self._ended = True
        final = self.final_response()
        kind = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
            final["status"], "response.completed")
        return self._event(kind, {"response": final})

    def close(self) -> bytes:
        """What ends a completed stream: ``response.completed`` when no finish was recorded."""
        if self._ended:
            return b""
        out = self.close_open()
        self._ended = True
        self.finished = True
        return out + self._event("response.completed", {"response": self.final_response()})

    def fail(self, message: str, code: str) -> bytes:
        """The ``event: error`` of a failure after the first byte (the stream then closes)."""
        self._ended = True
        self.failure = (message, code)
        return self._event("error", {"code": code, "message": message, "param": None})


class ResponseAssembler(_ResponseBuilder):
    """Builds the ``stream: false`` response object from a call's chunks."""

    emit = False

    def __init__(self, model: str = "", *, reasoning: ResponsesReasoning = "summary",
                 previous: str | None = None) -> None:
        super().__init__(model, reasoning=reasoning, previous=previous)

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk into the answer."""
        self.feed(chunk)

    def result(self, model: str | None = None, *, response_id: str | None = None,
               created_at: int | None = None) -> dict[str, Any]:
        """The final response object (completed, incomplete or failed)."""
        if model is not None:
            self.model = model
        if response_id is not None:
            self.response_id = response_id
        if created_at is not None:
            self.created_at = created_at
        if not self.finished:
            self.close_open()
            self.finished = True
        return self.final_response()


class ResponsesDialect(Dialect):
    """``POST /v1/responses``: the OpenAI Responses API, streamed or not (``reasoning``: the
    form reasoning items take, ``WireOptions.responses_reasoning``)."""

    name = "responses"
    routes = ("/v1/responses",)

    def __init__(self, *, reasoning: ResponsesReasoning = "summary") -> None:
        self.reasoning: ResponsesReasoning = reasoning

    def request(self, body: dict[str, Any]) -> CallRequest:
        model = body.get("model")
        previous = body.get("previous_response_id")
        return CallRequest(model if isinstance(model, str) else "replay", body.get("stream") is True,
                           self.corpus(body),
                           {"previous": previous if isinstance(previous, str) else None})

    def encoder(self, call: CallRequest, entry: AnyEntry) -> ResponsesStreamEncoder:
        return ResponsesStreamEncoder(str(call.model), entry_chunks(entry), reasoning=self.reasoning,
                                      previous=call.options.get("previous"))

    def assembler(self, call: CallRequest) -> ResponseAssembler:
        return ResponseAssembler(str(call.model), reasoning=self.reasoning,
                                 previous=call.options.get("previous"))

    def answer(self, assembler: Any, call: CallRequest, label: str) -> dict[str, Any]:
        done: ResponseAssembler = assembler
        return done.result()

    def kept(self, made: object) -> Kept | None:
        """Every response can be fetched again by its id while the run keeps it."""
        if isinstance(made, _ResponseBuilder):
            return Kept(made.response_id, made.snapshot)
        return None

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return openai_error_body(message, code, refused=refused)
