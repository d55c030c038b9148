"""Each wire dialect's reading of its requests, one module per dialect (the only places that
name a dialect's request keys), behind one seam: :class:`RequestReader`.

The server's dialects take their corpus from here, the recorder writes what ``conversation``
reads as each call's context, and the engine, the divergence check, binding by content and
the debugger's Request view compare what ``live_new_messages`` reads: one reading of every
request. The dialect modules are internal (an import-linter contract keeps them so).
"""

from __future__ import annotations

from typing import Any

from ..models import ContextItem
from . import anthropic as _anthropic
from . import gemini as _gemini
from . import openai_chat as _openai_chat
from . import responses as _responses
from .reading import RequestMessage, RequestReader, Role, content_text, said

__all__ = ["READERS", "RequestMessage", "RequestReader", "Role", "content_text",
           "conversation", "live_new_messages", "reader_of", "said"]

READERS: dict[str, RequestReader] = {
    "openai": _openai_chat.READER,
    "native": _openai_chat.READER,
    "anthropic": _anthropic.READER,
    "responses": _responses.READER,
    "gemini": _gemini.READER,
}
"""The reader of each dialect, by the name the journal records."""

_BY_SHAPE = (_gemini.READER, _responses.READER, _anthropic.READER, _openai_chat.READER)
"""Who claims a corpus of unknown dialect, most specific shape first."""


def reader_of(dialect: str | None, corpus: Any = None) -> RequestReader | None:
    """The reader of ``dialect``; for None (a caller that names no wire), the one whose
    shape ``corpus`` has (None: no dialect's)."""
    if dialect is not None:
        return READERS.get(dialect)
    return next((r for r in _BY_SHAPE if r.claims(corpus)), None)


def conversation(corpus: Any, dialect: str | None = None) -> list[RequestMessage]:
    """A request corpus (what the engine journals) as its dialect reads it, in order."""
    reader = reader_of(dialect, corpus)
    return reader.conversation(corpus) if reader is not None else []


def live_new_messages(messages: Any, dialect: str | None = None) -> list[ContextItem]:
    """The user texts and tool results a live request adds after the model's last turn, as
    the dialect it arrived on (``CallRecord.dialect``) reads them; without one, as the
    dialect whose shape ``messages`` has."""
    return said(conversation(messages, dialect))
