"""What a recorded call was answering: the user and tool messages the log holds before it.

The debugger's context tab and the pytest plugin's failure report both compare a live
request's new messages with these, so a diverging agent shows where it left the recording.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from .models import SessionScript

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
    """One message: its role and text."""

    role: str
    text: str


def context_range(script: SessionScript, call_index: int) -> tuple[int, int] | None:
    """The log lines between the previous call and this one (None for sidecar entries).

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
        if previous.lines is not None:
            start = previous.lines[1] + 1
            break
    return start, last


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


def recorded_context(script: SessionScript, call_index: int) -> list[ContextItem] | None:
    """The recorded messages before call ``call_index`` of ``script`` (None: not derived)."""
    lines = context_range(script, call_index)
    if lines is None or script.file is None:
        return None
    return read_recorded_context(script.file, *lines)


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
