"""The recorder's OpenAI / DeepSeek chat-completions dialect (docs/format.md#wire-openai-chat read backwards).

:class:`ChatRebuilder` is the DeepSeek-style client of docs/format.md#wire-openai-chat: blocks in first-seen
order (one reasoning, one text, one per tool index), a tool block stamping the last id and name it saw
on each of its deltas, block ends, usage and finish at ``[DONE]``. A ``stream: false``
answer is read as the one-event stream that carries it.
"""

from __future__ import annotations

from typing import Any

from ..jsonnumbers import count
from .dialect import (
    Block,
    Chunk,
    RequestMessage,
    SseEvent,
    as_dict,
    as_list,
    conversation_of,
    impossible_usage,
    key_of,
    malformed,
    stream_error,
    upstream_error_message,
    upstream_json,
)

_COUNTERS = ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens",
             "prompt_cache_miss_tokens", "prompt_tokens_details.cached_tokens",
             "completion_tokens_details.reasoning_tokens")
_FINISH_BACK = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def usage_back(wire: dict[str, Any]) -> dict[str, Any]:
    """Recorded usage of chat-completions usage: only the counters the wire carried."""
    prompt = count(wire.get("prompt_tokens"))
    hit = wire.get("prompt_cache_hit_tokens")
    details = wire.get("prompt_tokens_details")
    if hit is None and isinstance(details, dict):
        hit = details.get("cached_tokens")
    miss = wire.get("prompt_cache_miss_tokens")
    usage: dict[str, Any] = {
        "inputTokens": count(miss) if miss is not None else prompt - count(hit),
        "outputTokens": count(wire.get("completion_tokens")),
    }
    if hit is not None:
        usage["cacheReadTokens"] = count(hit)
    completion = wire.get("completion_tokens_details")
    if isinstance(completion, dict) and completion.get("reasoning_tokens") is not None:
        usage["reasoningTokens"] = count(completion["reasoning_tokens"])
    return usage


def finish_back(reason: str | None) -> dict[str, Any]:
    """A recorded finish reason of a wire ``finish_reason`` (unknown ones are error codes)."""
    if reason is None:
        return {"kind": "stop"}
    kind = _FINISH_BACK.get(reason)
    return {"kind": kind} if kind else {"kind": "error", "failure": {"code": reason.upper()}}


class ChatRebuilder:
    """The DeepSeek-style client of docs/format.md#wire-openai-chat: blocks in first-seen order (one
    reasoning, one text, one per tool index); a tool block stamps the last id and name it saw on each of its
    deltas; block ends, usage and finish come at ``[DONE]``."""

    def __init__(self) -> None:
        self.ended = False
        self._blocks: list[Block] = []
        self._by_kind: dict[str, Block] = {}
        self._tools: dict[Any, Block] = {}
        self._usage: dict[str, Any] | None = None
        self._finish: str | None = None

    def _open(self, kind: str, out: list[Chunk]) -> Block:
        block = Block(kind, len(self._blocks))
        self._blocks.append(block)
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        return block

    def feed(self, event: SseEvent) -> list[Chunk]:
        data = event.data.strip()
        if data == "[DONE]":
            self.ended = True
            return []
        chunk = upstream_json(data)
        if not isinstance(chunk, dict):
            raise malformed("a chunk", chunk)
        if "error" in chunk and not as_list(chunk.get("choices")):
            raise stream_error(chunk["error"])
        out: list[Chunk] = []
        if chunk.get("usage"):
            self.take_usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list | None):
            raise malformed("a chunk's choices", choices)
        for choice in choices or []:
            self.fold_choice(choice, out)
        return out

    def fold_choice(self, choice: object, out: list[Chunk], *, field: str = "delta") -> None:
        """Fold one wire ``choice`` (its delta and finish reason) into ``out``; StreamFailure
        INVALID_RESPONSE when a part of it is not of its wire type (a reader of the wire
        would fail on it, so a recording of it would replay what never streamed)."""
        if not isinstance(choice, dict):
            raise malformed("a choice", choice)
        delta = choice.get(field)
        if not isinstance(delta, dict | None):
            raise malformed(f"a choice's {field}", delta)
        delta = delta or {}
        for name in ("content", "reasoning_content"):
            if not isinstance(delta.get(name), str | None):
                raise malformed(f"a {field}'s {name}", delta.get(name))
        if not isinstance(delta.get("tool_calls"), list | None):
            raise malformed(f"a {field}'s tool_calls", delta.get("tool_calls"))
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, dict) or not isinstance(call.get("function"), dict | None):
                raise malformed(f"a {field}'s tool call", call)
        if "role" in delta and delta.get("content") == "":
            delta = {k: v for k, v in delta.items() if k not in ("role", "content")}
        for wire_field, kind in (("reasoning_content", "reasoning"), ("content", "text")):
            value = delta.get(wire_field)
            if isinstance(value, str):
                block = self._by_kind.get(kind) or self._open(kind, out)
                self._by_kind[kind] = block
                block.parts.append(value)
                out.append({"type": f"{kind}-delta", "index": block.index, "text": value})
        for call in delta.get("tool_calls") or []:
            self._tool_delta(call, out)
        reason = choice.get("finish_reason")
        if not isinstance(reason, str | None):
            raise malformed("a choice's finish_reason", reason)
        if reason:
            self._finish = reason

    def _tool_delta(self, call: dict[str, Any], out: list[Chunk]) -> None:
        key = key_of(call.get("index"))
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call", out)
        function = as_dict(call.get("function"))
        if isinstance(call.get("id"), str):
            block.id = call["id"]
        if isinstance(function.get("name"), str):
            block.name = function["name"]
        rebuilt: Chunk = {"type": "tool-call-delta", "index": block.index, "id": block.id}
        if block.name is not None:
            rebuilt["name"] = block.name
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        block.parts.append(arguments)
        rebuilt["argumentsDelta"] = arguments
        out.append(rebuilt)

    def take_usage(self, usage: object) -> None:
        """Keep the answer's usage (the last one sent wins), recorded at the end."""
        self._usage = usage if isinstance(usage, dict) else self._usage

    def end(self) -> list[Chunk]:
        out: list[Chunk] = [{"type": "block-end", "index": b.index, "block": b.whole()}
                            for b in self._blocks]
        if isinstance(self._usage, dict) and not impossible_usage(self._usage, _COUNTERS):
            out.append({"type": "usage", "usage": usage_back(self._usage)})
        out.append({"type": "finish", "reason": finish_back(self._finish)})
        return out


class OpenAIChat:
    """The OpenAI / DeepSeek chat-completions wire (docs/format.md#wire-openai-chat)."""

    name: str = "openai"
    routes: tuple[str, ...] = ("/v1/chat/completions",)

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation as the chat request reading has it."""
        return conversation_of(self.name, body)

    def rebuilder(self) -> ChatRebuilder:
        return ChatRebuilder()

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """One block per content kind, each with one delta, as a one-event stream rebuilds
        (StreamFailure INVALID_RESPONSE for a malformed completion)."""
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            raise ValueError("not a chat.completion")
        rebuilder = ChatRebuilder()
        out: list[Chunk] = []
        if body["choices"]:
            choice = body["choices"][0]
            if not isinstance(choice, dict):
                raise malformed("a choice", choice)
            rebuilder.fold_choice(choice, [], field="message")  # checks it, nothing kept
            message = choice.get("message") or {}
            delta: dict[str, Any] = {k: message.get(k) for k in ("reasoning_content", "content")}
            delta["tool_calls"] = [
                {"index": k, "id": c.get("id"), "function": c.get("function") or {}}
                for k, c in enumerate(message.get("tool_calls") or [])]
            rebuilder = ChatRebuilder()
            rebuilder.fold_choice({"delta": delta, "finish_reason": choice.get("finish_reason")},
                                  out)
        if isinstance(body.get("usage"), dict):
            rebuilder.take_usage(body["usage"])
        return out + rebuilder.end()

    def error_message(self, status: int, body: bytes) -> str:
        return upstream_error_message(status, body)


OPENAI_CHAT = OpenAIChat()
"""The chat-completions dialect."""
