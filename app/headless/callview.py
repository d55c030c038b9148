"""Pure helpers behind the call pane: assembled output; the recorded context and its diff
live in the library (re-exported here).

Nothing here imports Textual, so it is cheap to test and reuse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replay_engine import HANG_PREFIX, ChunksEntry, HangEntry, ScriptEntry, ThrowEntry
from replay_engine import ContextItem as ContextItem
from replay_engine import DiffRow as DiffRow
from replay_engine import content_text as content_text
from replay_engine import context_range as context_range
from replay_engine import diff_context as diff_context
from replay_engine import live_new_messages as live_new_messages
from replay_engine import recorded_context as recorded_context


@dataclass(frozen=True, slots=True)
class Block:
    """One assembled content block of a call."""

    kind: str
    text: str
    name: str | None = None
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assembled:
    """What the agent ends up with after the whole call streamed."""

    blocks: tuple[Block, ...]
    usage: dict[str, Any] | None
    finish: str | None
    error: str | None


def entry_chunks(item: ScriptEntry) -> Sequence[dict[str, Any]]:
    """The chunks an entry serves (a hang: the short prefix it sends before it waits, which
    the agent receives as text)."""
    entry = item.entry
    return entry.chunks if isinstance(entry, ChunksEntry | ThrowEntry) else HANG_PREFIX


def assemble(item: ScriptEntry) -> Assembled:
    """Rebuild the blocks, usage and finish of one call from its chunks."""
    order: list[int] = []
    kinds: dict[int, str] = {}
    parts: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    ids: dict[int, str] = {}
    ended: dict[int, str] = {}
    usage: dict[str, Any] | None = None
    finish: str | None = None
    for chunk in entry_chunks(item):
        kind = chunk.get("type")
        index = chunk.get("index", 0)
        if not isinstance(index, int):
            index = 0
        if kind in ("block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end"):
            if index not in kinds:
                order.append(index)
                kinds[index] = "text"
                parts[index] = []
        if kind == "block-start":
            kinds[index] = str(chunk.get("blockType", "text"))
        elif kind in ("text-delta", "reasoning-delta"):
            kinds[index] = "reasoning" if kind == "reasoning-delta" else kinds[index]
            parts[index].append(str(chunk.get("text", "")))
        elif kind == "tool-call-delta":
            kinds[index] = "tool-call"
            parts[index].append(str(chunk.get("argumentsDelta", "")))
            if isinstance(chunk.get("name"), str):
                names[index] = chunk["name"]
            if isinstance(chunk.get("id"), str):
                ids[index] = chunk["id"]
        elif kind == "block-end":
            block = chunk.get("block")
            if isinstance(block, dict):
                kinds[index] = str(block.get("type", kinds[index]))
                content = block.get("arguments") if kinds[index] == "tool-call" else block.get("text")
                if isinstance(content, str):
                    ended[index] = content
                if isinstance(block.get("name"), str):
                    names[index] = block["name"]
                if isinstance(block.get("id"), str):
                    ids[index] = block["id"]
        elif kind == "usage" and isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        elif kind == "finish":
            reason = chunk.get("reason")
            finish = str(reason.get("kind")) if isinstance(reason, dict) else str(reason)
    blocks = []
    for index in order:
        text = "".join(parts[index]) or ended.get(index, "")
        blocks.append(Block(kinds[index], text, names.get(index), ids.get(index)))
    error = None
    if isinstance(item.entry, ThrowEntry):
        error = f"throws {item.entry.code}: {item.entry.message}"
    elif isinstance(item.entry, HangEntry):
        ready = f" (readyFile {item.entry.readyFile})" if item.entry.readyFile else ""
        error = "hangs until cancelled" + ready
    return Assembled(tuple(blocks), usage, finish, error)


def pretty_arguments(text: str) -> str:
    """Tool-call arguments indented when they are JSON, else as recorded."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text
