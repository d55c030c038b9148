"""What every dialect's request reading gives: the request's conversation as typed messages.

A dialect's ``requests`` module (beside this one) is the only place that names its request
keys. It says which part of a body is the call's corpus (what the engine journals, what
``{{fromRequest}}`` searches, what the debugger's Request view shows) and reads that corpus
as :class:`RequestMessage` items in order; ``said`` keeps the new ones (after the model's last
turn) as the user texts and tool results a recording is compared with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..models import ContextItem

Role = Literal["user", "tool", "assistant", "system", "other"]
"""``user`` text, a ``tool`` result, the model's own turn (``assistant``), a ``system`` prompt,
or ``other`` (an item the comparison ignores, such as a Responses ``item_reference``)."""


@dataclass(frozen=True, slots=True)
class RequestMessage:
    """One message of a request's conversation, as the dialect reads it."""

    role: Role
    text: str = ""
    """A user message's text or a tool result's content as text (what is compared)."""
    call_id: str | None = None
    """For a tool result: the id of the tool call it answers (None when the client named none)."""
    raw: Any = None
    """The message exactly as the request sent it (the recorder compares these to find the
    messages a request adds to what its session sent last time)."""

    def item(self) -> ContextItem:
        """The message as the comparison takes it."""
        return ContextItem(self.role, self.text, self.call_id)


@dataclass(frozen=True, slots=True)
class RequestReader:
    """One dialect's reading of its requests (what each ``requests`` module exports)."""

    name: str
    corpus: Callable[[dict[str, Any]], Any]
    """The body's part the engine journals and ``{{fromRequest}}`` searches."""
    conversation: Callable[[Any], list[RequestMessage]]
    """The corpus as messages, in order."""
    claims: Callable[[Any], bool]
    """Whether a corpus of unknown dialect has this dialect's shape."""


def said(conversation: list[RequestMessage]) -> list[ContextItem]:
    """The user texts and tool results after the model's last turn, in order: what a request
    adds to the conversation (system prompts and other items never count)."""
    start = 0
    for i, message in enumerate(conversation):
        if message.role == "assistant":
            start = i + 1
    return [m.item() for m in conversation[start:] if m.role in ("user", "tool")]


def content_text(content: Any) -> str:
    """The text of a message or result ``content``: a string, or the texts of a list of parts
    (nested ``content`` lists too) joined by newlines; anything else as JSON."""
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


def text_id(value: Any) -> str | None:
    """A call id when it is a string (ids are untrusted input)."""
    return value if isinstance(value, str) else None
