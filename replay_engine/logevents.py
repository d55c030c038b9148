"""The log event types that hold what a call was answering (its recorded context), shared by
the log readers (which hand those lines over with the calls) and ``context`` (which reads
them). Free of the models, so that ``validate`` never imports them."""

from __future__ import annotations

import json

CONTEXT_TYPES = {"user/message": "user", "tool/result": "tool"}
"""Event types holding a user message or a tool result, and the role each gives."""
ASSISTANT_MESSAGE = "assistant/message"
"""An assistant message: what came before it was answered."""
SAID_TYPES = frozenset({*CONTEXT_TYPES, ASSISTANT_MESSAGE})
"""Event types a log reader hands a feed besides calls (``CallFeed.said``)."""


def said_kind(raw: bytes) -> str | None:
    """The type of a line the fast decoders refused when it is one of ``SAID_TYPES``."""
    if not any(t.encode() in raw for t in SAID_TYPES):
        return None
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    kind = event.get("type") if isinstance(event, dict) else None
    return kind if isinstance(kind, str) and kind in SAID_TYPES else None
