"""What a recorded call was answering: the user and tool messages the log holds before it.

A log's ``user/message`` / ``tool/result`` lines (and its assistant messages, which close what
came before) are taken with its calls, in the same pass (``LogContext``, fed by the reader to
the deriver); the recorded context of each call is cut from that by line, in memory, each
line decoded (``said_item``) the first time a context needs it. The engine's divergence
check, the debugger's Request view and the pytest plugin's failure report compare a live
request's new messages with it; no file is read again.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Any

import msgspec

from .chunkshape import ends_in_error_finish
from .excerpt import texts_match
from .logevents import ASSISTANT_MESSAGE, CONTEXT_TYPES, SAID_TYPES
from .models import ChunksEntry, ContextItem, LogContext, ScriptEntry, SessionScript
from .requests import content_text, live_new_messages

__all__ = ["ASSISTANT_MESSAGE", "CONTEXT_TYPES", "SAID_TYPES", "ContextItem", "DiffRow",
           "content_text", "context_range", "diff_context", "diff_line", "live_new_messages",
           "recorded_context", "said_item", "script_contexts"]

def _answered(item: ScriptEntry) -> bool:
    """Whether a recorded call gave the agent an answer (an assistant turn it builds on): an
    error finish fails on every wire as a throw does, so the agent retries with what it sent."""
    return isinstance(item.entry, ChunksEntry) and not ends_in_error_finish(item.entry.chunks)


def context_range(script: SessionScript, call_index: int) -> tuple[int, int] | None:
    """The log lines holding what call ``call_index`` answered (None for sidecar entries).

    They run from the last call before it that was answered (a recorded failure or a hang
    (an error finish too) gave the agent nothing, so its retry still carries the same messages) to the call.
    ``call_index`` at or past the end of the script names the lines after its last
    derived call: what the recording holds where a live session asked for one call more.
    """
    if script.file is None:
        return None
    if call_index < len(script.entries):
        item = script.entries[call_index]
        if item.lines is None:
            return None
        last = item.lines[0] - 1
    else:
        last = 1 << 62
    start = 1
    for previous in reversed(script.entries[:call_index]):
        if previous.lines is not None and _answered(previous):
            start = previous.lines[1] + 1
            break
    return start, last


class _SaidData(msgspec.Struct, gc=False):
    content: Any = msgspec.UNSET
    callId: Any = msgspec.UNSET
    message: Any = None


class _SaidEvent(msgspec.Struct, gc=False):
    data: _SaidData | None = None


_said_decoder = msgspec.json.Decoder(_SaidEvent)


def said_item(kind: str, raw: bytes | str) -> ContextItem | None:
    """A ``user/message`` or ``tool/result`` line as context (None: it holds none). Only
    the fields read are decoded; a line the typed decoder refuses is read whole."""
    try:
        data = _said_decoder.decode(raw).data
    except (msgspec.DecodeError, RecursionError):
        return _said_item_slow(kind, raw)
    if data is None:
        return None
    if CONTEXT_TYPES[kind] == "user":
        return ContextItem("user", content_text(None if data.content is msgspec.UNSET
                                                else data.content))
    if data.callId is not msgspec.UNSET or data.content is not msgspec.UNSET:
        call_id = data.callId
        return ContextItem("tool", content_text(None if data.content is msgspec.UNSET
                                                else data.content),
                           call_id if isinstance(call_id, str) else None)
    return _tool_result({"message": data.message})


def _said_item_slow(kind: str, raw: bytes | str) -> ContextItem | None:
    """``said_item`` by the generic JSON reader (whatever the line holds)."""
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    data = event.get("data") if isinstance(event, dict) else None
    if not isinstance(data, dict):
        return None
    if CONTEXT_TYPES[kind] == "user":
        return ContextItem("user", content_text(data.get("content")))
    return _tool_result(data)


def _tool_result(data: dict[str, Any]) -> ContextItem:
    """A ``tool/result`` in any of the harness's shapes: ``{callId, content}``,
    ``{message: {toolCallId, content}}`` or ``{message: {content: [tool-result parts]}}``."""
    if "callId" in data or "content" in data:
        call_id = data.get("callId")
        return ContextItem("tool", content_text(data.get("content")),
                           call_id if isinstance(call_id, str) else None)
    message = data.get("message")
    if not isinstance(message, dict):
        return ContextItem("tool", "")
    call_id = message.get("toolCallId")
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool-result"
                                         for p in content):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "tool-result"]
        first = parts[0]
        call_id = call_id if isinstance(call_id, str) else first.get("toolCallId")
        content = first.get("content")
    if not isinstance(call_id, str):
        source = message.get("source")
        call_id = source.get("callId") if isinstance(source, dict) else None
    return ContextItem("tool", content_text(content), call_id if isinstance(call_id, str) else None)


def _cut(said: LogContext, first: int, last: int) -> tuple[ContextItem, ...]:
    """The user and tool messages on lines ``first..last`` after the last assistant message."""
    collected: list[ContextItem] = []
    items = said.items
    for k in range(bisect_left(said.lines, first), bisect_right(said.lines, last)):
        item = items[k]
        if type(item) is tuple:  # a line kept as read: decoded once, here
            item = items[k] = said_item(*item) or False
        if item is None:
            collected.clear()
        elif isinstance(item, ContextItem):
            collected.append(item)
    return tuple(collected)


def script_contexts(script: SessionScript) -> list[tuple[ContextItem, ...] | None]:
    """The recorded context of every call of ``script`` plus one past its end (what the
    engine compares each live request with), cut from what its log held when it was loaded;
    None for a sidecar entry, or every call of a script loaded without its log's context."""
    spans = [context_range(script, k) for k in range(len(script.entries) + 1)]
    said = script.said
    if said is None:
        return [None] * len(spans)
    return [None if span is None else _cut(said, *span) for span in spans]


def recorded_context(script: SessionScript, call_index: int) -> list[ContextItem] | None:
    """The recorded messages before call ``call_index`` of ``script`` (None: none recorded)."""
    span = context_range(script, call_index)
    if span is None or script.said is None:
        return None
    return list(_cut(script.said, *span))


DiffRow = tuple[str, "ContextItem | None", "ContextItem | None"]


def diff_context(live: Iterable[ContextItem], recorded: Iterable[ContextItem]) -> list[DiffRow]:
    """Pair live and recorded messages in order.

    Marks: ``=`` same text, ``≠`` different, ``+`` only live, ``-`` only recorded. A live
    text the journal cut matches by the whole text's digest (``texts_match``).
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
            mark = "=" if texts_match(x.text, y.text) else "≠"
        rows.append((mark, x, y))
    return rows


def _quote(item: ContextItem, width: int) -> str:
    text = " ".join(item.text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{item.role} {json.dumps(text, ensure_ascii=False)}"


def diff_line(rows: Iterable[DiffRow], width: int = 60) -> str | None:
    """The first difference of a context diff on one line (None when every row matches)."""
    for mark, live, recorded in rows:
        if mark == "≠" and live is not None and recorded is not None:
            return f"live {_quote(live, width)} ≠ recorded {_quote(recorded, width)}"
        if mark == "+" and live is not None:
            return f"live {_quote(live, width)}, which the recording does not have here"
        if mark == "-" and recorded is not None:
            return f"recorded {_quote(recorded, width)}, missing from the live request"
    return None
