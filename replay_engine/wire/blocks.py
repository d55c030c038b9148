"""Recorded chunks as a sequence of content blocks, for wires that frame every block.

The Anthropic Messages and OpenAI Responses wires both open, fill and close each
block explicitly, and both need a tool block's id and name when it opens, while
the recording may carry them only on a later delta or on the block-end. So a
``BlockWalker`` first walks the call's whole recorded chunk list (known when the
call binds) to learn each block's id, name and usage, then walks the chunks as
they are served and calls its renderer hooks: ``on_start``, ``on_delta``,
``on_end``, ``on_usage`` and ``on_finish``, each returning the bytes to send.

Blocks are numbered 0, 1, … in the order they open (a ``block-start``, or the
first chunk of an index that has none). A block whose content arrives only in
its ``block-end`` gets one delta with the whole content at that position. A
``finish`` closes the blocks still open, in order, before it is rendered.

The rules the block-framed wires share live here too: a reasoning block's recorded
signature (``SignatureCollector``) and a tool block's arguments as the one JSON object the
Messages and Gemini wires carry whole (``tool_arguments``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import UnrepresentableCallError
from ..models import AnyEntry, HangEntry

BLOCK_KINDS = frozenset({"text", "reasoning", "tool-call"})
"""Recorded block types the framed wires carry; blocks of other types are left out."""

_DELTA_KINDS = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


def entry_chunks(entry: AnyEntry) -> Sequence[dict[str, Any]]:
    """The recorded chunks of an entry (a hang entry has none of its own)."""
    return () if isinstance(entry, HangEntry) else entry.chunks


class Block:
    """One content block of a call as it goes out on the wire."""

    __slots__ = ("ordinal", "kind", "index", "call_id", "name", "parts", "had_delta", "wire")

    def __init__(self, ordinal: int, kind: str, index: Any) -> None:
        self.ordinal = ordinal
        """Position on the wire: 0, 1, … in opening order."""
        self.kind = kind
        """text, reasoning or tool-call."""
        self.index = index
        """The recorded ``index`` of its chunks."""
        self.call_id: str | None = None
        """A tool block's recorded id (first delta that has one, else its block-end)."""
        self.name: str | None = None
        """A tool block's recorded name (the same rule)."""
        self.parts: list[str] = []
        """The content sent so far (text, reasoning or argument pieces)."""
        self.had_delta = False
        """True once a delta chunk was recorded for it."""
        self.wire: Any = None
        """Whatever the renderer keeps per block (byte templates, item ids)."""

    @property
    def content(self) -> str:
        """Everything the block carried."""
        return "".join(self.parts)


def _meta_of(block: Block, source: dict[str, Any]) -> None:
    if block.call_id is None and isinstance(source.get("id"), str):
        block.call_id = source["id"]
    if block.name is None and isinstance(source.get("name"), str):
        block.name = source["name"]


class BlockWalker:
    """Walks one call's chunks block by block; subclasses render each step as bytes."""

    keep_parts = True
    """Whether blocks accumulate their content (renderers that never need it turn it off)."""

    def __init__(self, chunks: Sequence[dict[str, Any]] = ()) -> None:
        self._open: dict[Any, Block] = {}
        self._ignored: set[Any] = set()
        self.blocks: list[Block] = []
        """Every block opened so far, in wire order."""
        self.usage: dict[str, Any] | None = None
        """The recorded usage: the call's usage chunk, known from the start when chunks are given."""
        self.reason: dict[str, Any] | None = None
        """The recorded finish reason, once the finish chunk was walked."""
        self.finished = False
        self._metas: list[tuple[str | None, str | None]] = []
        if chunks:
            plan = BlockWalker()
            plan.keep_parts = False
            for chunk in chunks:
                plan.feed(chunk)
            self._metas = [(b.call_id, b.name) for b in plan.blocks]
            self.usage = plan.usage

    # -- renderer hooks -------------------------------------------------------------------

    def on_start(self, block: Block) -> bytes:
        """A block opens."""
        return b""

    def on_delta(self, block: Block, text: str) -> bytes:
        """A piece of a block's content (text, reasoning or tool arguments)."""
        return b""

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        """A block closes; ``whole`` is its recorded block-end block (None when none was)."""
        return b""

    def on_usage(self, usage: dict[str, Any]) -> bytes:
        """The usage chunk."""
        return b""

    def on_finish(self, reason: dict[str, Any]) -> bytes:
        """The finish chunk, after every open block was closed."""
        return b""

    # -- walking ----------------------------------------------------------------------------

    def _start(self, index: Any, kind: str, source: dict[str, Any] | None) -> tuple[Block, bytes]:
        block = Block(len(self.blocks), kind, index)
        if block.ordinal < len(self._metas):
            block.call_id, block.name = self._metas[block.ordinal]
        if source is not None and kind == "tool-call":
            _meta_of(block, source)
        self.blocks.append(block)
        self._open[index] = block
        return block, self.on_start(block)

    def _end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        del self._open[block.index]
        return self.on_end(block, whole)

    def feed(self, chunk: dict[str, Any]) -> bytes:
        """The bytes one recorded chunk maps to (``b""`` when it maps to nothing)."""
        kind = chunk.get("type")
        index = chunk.get("index")
        if isinstance(index, list | dict):  # a block is keyed by its index: make it hashable
            index = repr(index)
        delta_kind = _DELTA_KINDS.get(kind) if isinstance(kind, str) else None
        if delta_kind is not None:
            if index in self._ignored:
                return b""
            block = self._open.get(index)
            head = b""
            if block is None:
                block, head = self._start(index, delta_kind, chunk)
            if delta_kind == "tool-call":
                text = chunk.get("argumentsDelta", "")
                _meta_of(block, chunk)
            else:
                text = chunk.get("text", "")
            if not isinstance(text, str):
                text = ""
            block.had_delta = True
            if self.keep_parts:
                block.parts.append(text)
            return head + self.on_delta(block, text) if head else self.on_delta(block, text)
        if kind == "block-start":
            block_type = chunk.get("blockType")
            out = b""
            if index in self._open:
                out = self._end(self._open[index], None)
            if block_type not in BLOCK_KINDS:
                self._ignored.add(index)
                return out
            self._ignored.discard(index)
            return out + self._start(index, str(block_type), None)[1]
        if kind == "block-end":
            whole = chunk.get("block")
            whole = whole if isinstance(whole, dict) else None
            if index in self._ignored:
                self._ignored.discard(index)
                return b""
            block = self._open.get(index)
            out = b""
            if block is None:
                block_type = whole.get("type") if whole is not None else None
                if block_type not in BLOCK_KINDS:
                    return b""
                block, out = self._start(index, str(block_type), whole)
            if whole is not None:
                if block.kind == "tool-call":
                    _meta_of(block, whole)
                if not block.had_delta:
                    text = whole.get("arguments" if block.kind == "tool-call" else "text")
                    if isinstance(text, str) and text:
                        if self.keep_parts:
                            block.parts.append(text)
                        out += self.on_delta(block, text)
            return out + self._end(block, whole)
        if kind == "usage":
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                self.usage = usage
                return self.on_usage(usage)
            return b""
        if kind == "finish":
            out = self.close_open()
            reason = chunk.get("reason")
            self.reason = reason if isinstance(reason, dict) else {"kind": "stop"}
            self.finished = True
            return out + self.on_finish(self.reason)
        return b""

    def close_open(self) -> bytes:
        """Close every block still open, in wire order."""
        if not self._open:
            return b""
        return b"".join(self._end(b, None) for b in sorted(self._open.values(),
                                                              key=lambda b: b.ordinal))


def reasoning_signature(block: Block, whole: dict[str, Any] | None) -> str | None:
    """The signature a reasoning block's block-end recorded (None for other blocks or none)."""
    if block.kind != "reasoning" or whole is None:
        return None
    signature = whole.get("signature")
    return signature if isinstance(signature, str) and signature else None


class SignatureCollector(BlockWalker):
    """A walker keeping each reasoning block's recorded signature by its wire ordinal."""

    def __init__(self, chunks: Sequence[dict[str, Any]] = ()) -> None:
        self.signatures: dict[int, str] = {}
        """Reasoning blocks' signatures by ``Block.ordinal``."""
        super().__init__(chunks)

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        signature = reasoning_signature(block, whole)
        if signature is not None:
            self.signatures[block.ordinal] = signature
        return b""


def cut_short(reason: dict[str, Any] | None) -> bool:
    """Whether a recorded finish is max-tokens: the call's last tool arguments may be cut."""
    return reason is not None and reason.get("kind") == "max-tokens"


def tool_arguments(block: Block, *, cut: bool, call: str, carried_as: str) -> dict[str, Any]:
    """A tool block's arguments as the JSON object a wire carries whole (``carried_as``: the
    Messages wire's ``tool_use`` input, Gemini's ``functionCall`` args).

    No arguments are ``{}``. Arguments that are not a JSON object are ``{}`` in a call whose
    max-tokens finish cut them (``cut``), as the SDKs' own stream accumulators make them, and
    otherwise fail the call with an ``UnrepresentableCallError`` naming it (``call``).
    """
    arguments = block.content
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    if cut:
        return {}
    shown = arguments if len(arguments) <= 80 else arguments[:77] + "..."
    raise UnrepresentableCallError(
        f"{call}: tool call {block.call_id!r} ({block.name}) has arguments that are not a JSON "
        f"object ({shown!r}), so {carried_as} cannot carry them; the native route "
        "POST /replay/v1/stream serves this call unchanged")
