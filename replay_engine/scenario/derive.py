"""Derive one session's script of model calls from its events (SPEC section 3).

``Deriver`` holds the grouping rules once; the public ``derive_replay_script`` (events as
dicts, the reference path) and the streaming file loader in ``derive_fast`` both feed it.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from ..chunkshape import TEXT_FIELDS
from ..models import ChunksEntry, ScriptEntry
from .callkeys import (
    Undefined,
    bad_chunk_error,
    call_key,
    chunk_shape_problem,
    compaction_chunks,
    js_string,
    missing_chunk_error,
    unfinished_call_error,
)
from .logscan import NO_TIME

__all__ = ["Deriver", "call_key", "derive_replay_script", "js_string"]


_text_field = TEXT_FIELDS.get


class Deriver:
    """Groups chunk events into calls; ``finish()`` returns the script."""

    __slots__ = ("file", "entries", "lenient", "unfinished", "untimed", "_key", "_chunks",
                 "_times", "_first_line", "_last_line")

    def __init__(self, file: str | None = None, *, lenient: bool = False) -> None:
        self.file = file
        self.entries: list[ScriptEntry] = []
        self.lenient = lenient
        """Keep a call without a finish chunk as a chunks entry instead of raising (authoring)."""
        self.unfinished: list[int] = []
        """Indices in ``entries`` of the calls kept that way (lenient mode only)."""
        self.untimed = 0
        """Chunk events and packed rows that left their time out (projected log): they pace
        with no gap."""
        self._key: str | None = None
        self._chunks: list[dict[str, Any]] = []
        self._times: array[int] = array("q")
        self._first_line = 0
        self._last_line = 0

    def _close(self) -> None:
        key = self._key
        if key is None:
            return
        chunks = self._chunks
        if not chunks or not isinstance(chunks[-1], dict) or chunks[-1].get("type") != "finish":
            position = len(self.entries)
            if self.lenient:
                self.unfinished.append(position)
                self._add(key, chunks, self._times)
                return
            raise unfinished_call_error(
                self.file, key, position, self._first_line, self._last_line
            )
        self._add(key, chunks, self._times)

    def _add(self, key: str, chunks: list[dict[str, Any]], times: array[int]) -> None:
        entry = ChunksEntry.model_construct(kind="chunks", chunks=chunks)
        self.entries.append(
            ScriptEntry(
                entry=entry,
                origin="derived",
                call_key=key,
                lines=(self._first_line, self._last_line),
                times=times,
            )
        )
        self._key = None
        self._chunks = []
        self._times = array("q")

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None:
        """One ``assistant/chunk``: open or continue the group under ``key``."""
        if chunk is None:
            raise missing_chunk_error(self.file, key, line)
        if type(chunk) is not dict or (
            type(kind := chunk.get("type")) is str and (field := _text_field(kind)) is not None
            and type(chunk.get(field, "")) is not str
        ):
            raise bad_chunk_error(self.file, key, line, str(chunk_shape_problem(chunk)))
        if self._key != key:
            if self._key is not None:
                self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        self._chunks.append(chunk)
        self._times.append(time if type(time) is int and -(2**63) < time < 2**63 else self._time(time))
        if isinstance(chunk, dict) and chunk.get("type") == "finish":
            self._add(key, self._chunks, self._times)

    def _time(self, value: Any) -> int:
        """A time that is not a plain int64: a missing one is 0 and counted, others as SPEC says."""
        if value is NO_TIME:
            self.untimed += 1
            return 0
        return _as_time(value)

    def run(self, key: str, chunks: list[dict[str, Any]], times: array[int], line: int) -> None:
        """The delta chunks of one packed row at once (same as ``chunk`` per member; never a finish)."""
        if self._key != key:
            if self._key is not None:
                self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        if self._chunks:
            self._chunks.extend(chunks)
            self._times.extend(times)
        else:
            self._chunks = chunks
            self._times = times

    def call(self, key: str, chunks: list[dict[str, Any]], times: array[int],
             first_line: int, last_line: int) -> None:
        """One whole call (a v2+ settlement, SPEC 2b.5): its chunks must end with a finish."""
        self._close()
        for chunk in chunks:
            problem = chunk_shape_problem(chunk)
            if problem is not None:
                raise bad_chunk_error(self.file, key, first_line, problem)
        self._key, self._first_line, self._last_line = key, first_line, last_line
        self._chunks, self._times = chunks, times
        self._close()

    def compaction(self, data: Any, time: Any, line: int) -> None:
        """A ``compaction/summary`` event; a model call when ``llmStreamCall`` is true."""
        self._close()
        chunks = compaction_chunks(data, self.file, line)
        if chunks is None:
            return
        self._first_line = self._last_line = line
        t = _as_time(time)
        self._add("compaction", chunks, array("q", [t] * len(chunks)))

    def finish(self) -> list[ScriptEntry]:
        """Close the last group and return the derived entries."""
        self._close()
        return self.entries


def _as_time(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) < value < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return 0


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
