"""Derive one session's script of model calls from its events (docs/format.md#deriving-scripts).

``Deriver`` is the feed that keeps each call (``feeds.CallFeed`` holds the grouping rules
once): the streaming reader (``reader.read_log``) feeds it a log's lines, the public
``derive_replay_script`` (events as dicts, the reference path) feeds it events.
"""

from __future__ import annotations

from typing import Any

from ..context import ASSISTANT_MESSAGE
from ..models import ChunksEntry, LogContext, ScriptEntry
from .callkeys import Undefined, call_key, js_string
from .feeds import CallFeed

__all__ = ["Deriver", "call_key", "derive_replay_script", "js_string"]


class Deriver(CallFeed):
    """Groups chunk events into calls; ``finish()`` returns the script."""

    __slots__ = ("entries", "context")
    wants_said = True

    def __init__(self, file: str | None = None, *, lenient: bool = False) -> None:
        super().__init__(file, lenient=lenient)
        self.entries: list[ScriptEntry] = []
        self.context = LogContext()
        """The log's user messages, tool results and assistant messages by line."""

    def said(self, kind: str, line: int, raw: bytes) -> None:
        """Keep a context line: an assistant message as the mark that closes what came
        before, a user or tool line as is (decoded when a context is first cut from it)."""
        self.context.lines.append(line)
        self.context.items.append(None if kind == ASSISTANT_MESSAGE else (kind, raw))

    def _keep(self, key: str, chunks: list[Any], times: Any) -> None:
        entry = ChunksEntry.model_construct(kind="chunks", chunks=chunks)
        self.entries.append(ScriptEntry(entry=entry, origin="derived", call_key=key,
                                        lines=(self._first_line, self.last_line), times=times))

    def finish(self) -> list[ScriptEntry]:
        """Close the last group and return the derived entries."""
        self._close()
        return self.entries


def _feed_event(deriver: Deriver, event: Any, line: int) -> None:
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    if kind == "assistant/chunk":
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        deriver.chunk(
            call_key(data.get("turn", Undefined), data.get("step", Undefined)),
            data.get("chunk"),
            event.get("time"),
            line,
        )
    elif kind == "compaction/summary":
        deriver.compaction(event.get("data"), event.get("time"), line)


def derive_replay_script(events: list[Any], file: str | None = None) -> list[ScriptEntry]:
    """Derive the calls of one session from its events (header excluded, rows expanded)."""
    deriver = Deriver(file)
    for index, event in enumerate(events):
        _feed_event(deriver, event, index + 1)
    return deriver.finish()
