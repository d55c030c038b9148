"""Pure helpers behind the call pane: assembled output, recorded context and its diff.

Nothing here imports Textual, so it is cheap to test and reuse.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from replay_engine import ChunksEntry, HangEntry, ScriptEntry, SessionScript, ThrowEntry

CONTEXT_TYPES = {"user/message": "user", "tool/result": "tool"}
MAX_CONTEXT_LINES = 20_000


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
    """The chunks an entry serves (a hang serves none of its own)."""
    entry = item.entry
    return entry.chunks if isinstance(entry, ChunksEntry | ThrowEntry) else ()


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


def content_text(content: Any) -> str:
    """The text of a message or event ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
                elif isinstance(part.get("content"), str | list):
                    out.append(content_text(part["content"]))
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One message: its role and text."""

    role: str
    text: str


def context_range(script: SessionScript, call_index: int) -> tuple[int, int] | None:
    """The log lines between the previous call and this one (None for sidecar entries)."""
    item = script.entries[call_index]
    if item.lines is None or script.file is None:
        return None
    start = 1
    for previous in reversed(script.entries[:call_index]):
        if previous.lines is not None:
            start = previous.lines[1] + 1
            break
    return start, item.lines[0] - 1


def read_recorded_context(file: str | Path, first: int, last: int) -> list[ContextItem]:
    """User and tool messages the log holds on lines ``first..last`` (1-based, inclusive)."""
    out: list[ContextItem] = []
    if last < first:
        return out
    last = min(last, first + MAX_CONTEXT_LINES)
    with open(file, "rb") as handle:
        for raw in islice(handle, first - 1, last):
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            role = CONTEXT_TYPES.get(str(event.get("type")))
            data = event.get("data")
            if role is None or not isinstance(data, dict):
                continue
            out.append(ContextItem(role, content_text(data.get("content"))))
    return out


def live_new_messages(messages: Any) -> list[ContextItem]:
    """The messages of a live request after its last assistant message (what is new)."""
    if not isinstance(messages, list):
        return []
    start = 0
    for i, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            start = i + 1
    out = []
    for message in messages[start:]:
        if not isinstance(message, dict) or message.get("role") == "system":
            continue
        out.append(ContextItem(str(message.get("role", "?")), content_text(message.get("content"))))
    return out


DiffRow = tuple[str, "ContextItem | None", "ContextItem | None"]


def diff_context(live: Iterable[ContextItem], recorded: Iterable[ContextItem]) -> list[DiffRow]:
    """Pair live and recorded messages in order.

    Marks: ``=`` same text, ``≠`` different, ``+`` only live, ``-`` only recorded.
    """
    a, b = list(live), list(recorded)
    rows: list[DiffRow] = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None:
            mark = "-"
        elif y is None:
            mark = "+"
        else:
            mark = "=" if " ".join(x.text.split()) == " ".join(y.text.split()) else "≠"
        rows.append((mark, x, y))
    return rows
