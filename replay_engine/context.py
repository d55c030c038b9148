"""What a recorded call was answering: the user and tool messages the log holds before it.

The debugger's context tab and the pytest plugin's failure report both compare a live
request's new messages with these, so a diverging agent shows where it left the recording.
"""

from __future__ import annotations

import io
import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from .chunkshape import ends_in_error_finish
from .excerpt import texts_match
from .models import ChunksEntry, ScriptEntry, SessionScript

CONTEXT_TYPES = {"user/message": "user", "tool/result": "tool"}
MAX_CONTEXT_LINES = 20_000


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
    """One message: its role, text and, for a tool result, the tool call it answers."""

    role: str
    text: str
    call_id: str | None = None


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


def context_event(raw: bytes | str) -> ContextItem | bool | None:
    """One log line as context: a user message or tool result, True for an assistant
    message (what came before it was answered), None for anything else."""
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    if kind == "assistant/message":
        return True
    role = CONTEXT_TYPES.get(str(kind))
    data = event.get("data")
    if role is None or not isinstance(data, dict):
        return None
    if role == "user":
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


def _log_lines(file: str | Path) -> Iterator[bytes]:
    """The lines of a log file, a persisted ``.jsonl.zstd`` session decompressed on the way."""
    if str(file).endswith(".zstd"):
        import zstandard

        with open(file, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(
                raw, read_across_frames=True) as reader:
            yield from io.BufferedReader(reader)
        return
    with open(file, "rb") as handle:
        yield from handle


def read_recorded_context(file: str | Path, first: int, last: int) -> list[ContextItem]:
    """User and tool messages the log holds on lines ``first..last`` (1-based, inclusive),
    after the last assistant message among them."""
    out: list[ContextItem] = []
    if last < first:
        return out
    last = min(last, first + MAX_CONTEXT_LINES)
    try:
        lines = _log_lines(file)
        for raw in islice(lines, first - 1, last):
            item = context_event(raw)
            if item is True:
                out.clear()
            elif isinstance(item, ContextItem):
                out.append(item)
    except zstd_errors() as exc:
        raise OSError(f"cannot decompress {file}: {exc}") from None
    return out


def zstd_errors() -> type[Exception]:
    """The decompressor's error type (imported only when a persisted session is read)."""
    import zstandard

    return zstandard.ZstdError


def recorded_context(script: SessionScript, call_index: int) -> list[ContextItem] | None:
    """The recorded messages before call ``call_index`` of ``script`` (None: not derived)."""
    lines = context_range(script, call_index)
    if lines is None or script.file is None:
        return None
    return read_recorded_context(script.file, *lines)


def script_contexts(script: SessionScript) -> list[tuple[ContextItem, ...] | None]:
    """``recorded_context`` of every call of ``script`` plus one past its end, in one pass
    over the log (what the engine compares each live request with)."""
    spans = [context_range(script, k) for k in range(len(script.entries) + 1)]
    out: list[tuple[ContextItem, ...] | None] = [None] * len(spans)
    if script.file is None or all(span is None for span in spans):
        return out
    numbers: list[int] = []
    items: list[ContextItem | bool] = []
    for number, raw in enumerate(_log_lines(script.file), start=1):
        if not any(marker in raw for marker in _CONTEXT_MARKERS):
            continue  # most lines are chunks: skip them without parsing
        item = context_event(raw)
        if item is not None:
            numbers.append(number)
            items.append(item)
    for k, span in enumerate(spans):
        if span is None:
            continue
        collected: list[ContextItem] = []
        for item in items[bisect_left(numbers, span[0]):bisect_right(numbers, span[1])]:
            if item is True:
                collected.clear()
            elif isinstance(item, ContextItem):
                collected.append(item)
        out[k] = tuple(collected)
    return out


_CONTEXT_MARKERS = (b'"assistant/message"', b'"user/message"', b'"tool/result"')


def live_new_messages(messages: Any) -> list[ContextItem]:
    """The messages of a live request after its last assistant turn (what is new).

    ``messages`` is what the engine journals for the call: a chat-completions ``messages``
    list, a Messages request's ``{"system", "messages"}``, a Responses request's
    ``{"instructions", "input"}`` or a Gemini request's ``{"systemInstruction", "contents"}``;
    each maps onto the same user and tool messages.
    """
    if isinstance(messages, dict):
        if "contents" in messages or "systemInstruction" in messages:
            return _gemini_new_parts(messages.get("contents"))
        if "input" in messages or "instructions" in messages:
            return _responses_new_items(messages.get("input"))
        if "messages" in messages:
            return _anthropic_new_messages(messages.get("messages"))
        return []
    if not isinstance(messages, list):
        return []
    start = 0
    for i, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            start = i + 1
    out = []
    for message in messages[start:]:
        if not isinstance(message, dict) or message.get("role") in ("system", "developer"):
            continue
        call_id = message.get("tool_call_id")
        out.append(ContextItem(str(message.get("role", "?")), content_text(message.get("content")),
                               call_id if isinstance(call_id, str) else None))
    return out


def _after_last(items: list[Any], is_model_turn: Callable[[Any], bool]) -> list[Any]:
    """The items after the last one the model produced."""
    start = 0
    for i, item in enumerate(items):
        if is_model_turn(item):
            start = i + 1
    return items[start:]


def _anthropic_new_messages(messages: Any) -> list[ContextItem]:
    """Messages API: the user messages' text and their ``tool_result`` blocks, in order."""
    if not isinstance(messages, list):
        return []
    out: list[ContextItem] = []
    for message in _after_last(messages, lambda m: isinstance(m, dict)
                               and m.get("role") == "assistant"):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            out.append(ContextItem("user", content_text(content)))
            continue
        texts: list[str] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                if texts:
                    out.append(ContextItem("user", "\n".join(texts)))
                    texts = []
                call_id = block.get("tool_use_id")
                out.append(ContextItem("tool", content_text(block.get("content")),
                                       call_id if isinstance(call_id, str) else None))
            elif isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
        if texts:
            out.append(ContextItem("user", "\n".join(texts)))
    return out


_RESPONSES_MODEL_ITEMS = {"function_call", "reasoning", "custom_tool_call"}
"""Responses input items the model produced (an assistant message too): what ends a turn."""


def _responses_new_items(items: Any) -> list[ContextItem]:
    """Responses API: ``input`` messages of role user and ``function_call_output`` items."""
    if isinstance(items, str):
        return [ContextItem("user", items)]
    if not isinstance(items, list):
        return []

    def model_turn(item: Any) -> bool:
        return isinstance(item, dict) and (item.get("type") in _RESPONSES_MODEL_ITEMS
                                           or item.get("role") == "assistant")

    out: list[ContextItem] = []
    for item in _after_last(items, model_turn):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            out.append(ContextItem("user", content_text(item.get("content"))))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = item.get("call_id")
            out.append(ContextItem("tool", content_text(item.get("output")),
                                   call_id if isinstance(call_id, str) else None))
    return out


def function_response_text(response: Any) -> str:
    """The text of a Gemini ``functionResponse.response``: the lone string it wraps
    (``{"output": "..."}``, as clients write a tool's result), else its JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return content_text(response)


def _gemini_new_parts(contents: Any) -> list[ContextItem]:
    """Gemini API: the user turns' text parts and their ``functionResponse`` parts, in order,
    each result with the id of the call it answers (``functionResponse.id``)."""
    if isinstance(contents, str):
        return [ContextItem("user", contents)]
    if not isinstance(contents, list):
        return []
    out: list[ContextItem] = []
    for content in _after_last(contents, lambda c: isinstance(c, dict) and c.get("role") == "model"):
        parts = content.get("parts") if isinstance(content, dict) else None
        texts: list[str] = []
        for part in parts if isinstance(parts, list) else []:
            answer = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(answer, dict):
                if texts:
                    out.append(ContextItem("user", "\n".join(texts)))
                    texts = []
                call_id = answer.get("id")
                out.append(ContextItem("tool", function_response_text(answer.get("response")),
                                       call_id if isinstance(call_id, str) else None))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        if texts:
            out.append(ContextItem("user", "\n".join(texts)))
    return out


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
