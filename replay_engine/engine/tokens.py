"""``{{session:N}}`` tokens: a recorded session's id, replaced by the live id of the session
bound to script N (1 = the primary) when an entry is served (docs/format.md#session-tokens)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import SessionTokenError
from ..models import AnyEntry, ChunksEntry, HangEntry, ThrowEntry

TOKEN_MARKER = "{{session:"
_TOKEN = re.compile(r"\{\{session:([1-9][0-9]*)\}\}")


def _replace(text: str, live_ids: Mapping[int, str]) -> str:
    def live(match: re.Match[str]) -> str:
        ordinal = int(match.group(1))
        ident = live_ids.get(ordinal - 1)
        if ident is None:
            raise SessionTokenError(f"session token {{{{session:{ordinal}}}}} was used before "
                                    "that recorded session bound")
        return ident

    return _TOKEN.sub(live, text)


def _walk(value: Any, live_ids: Mapping[int, str]) -> Any:
    if isinstance(value, str):
        return _replace(value, live_ids) if TOKEN_MARKER in value else value
    if isinstance(value, dict):
        return {k: _walk(v, live_ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, live_ids) for v in value]
    return value


def resolve_session_tokens(entry: AnyEntry, live_ids: Mapping[int, str]) -> AnyEntry:
    """``entry`` with every ``{{session:N}}`` made the live id bound to script N-1 (raises
    ``SessionTokenError`` for one not bound yet); a hang is served unchanged."""
    if isinstance(entry, HangEntry):
        return entry
    chunks = _walk(entry.chunks, live_ids)
    if isinstance(entry, ThrowEntry):
        return ThrowEntry.model_construct(
            kind="throw", chunks=chunks, message=_walk(entry.message, live_ids),
            code=_walk(entry.code, live_ids), accepted=entry.accepted)
    return ChunksEntry.model_construct(kind="chunks", chunks=chunks)
