"""What a log reader feeds: the grouping of chunks into model calls, once
(docs/format.md#deriving-scripts, #deriving-v2).

``read_log`` (``reader``) walks a log of any generation and feeds one ``CallFeed``: the
loader's ``Deriver`` (``derive``) keeps each call's chunks, ``Checker`` (here, free of the
models, for ``dsh-replay validate``) only counts the calls. Both close calls by the same
rules and raise the same errors; ``lenient`` keeps a call without a finish chunk instead of
raising (authoring a sidecar for it).
"""

from __future__ import annotations

from array import array
from typing import Any

from ..chunkshape import TEXT_FIELDS
from ..jsonnumbers import as_time
from .callkeys import (
    bad_chunk_error,
    chunk_shape_problem,
    compaction_chunks,
    missing_chunk_error,
    unfinished_call_error,
)
from .kept import check_kept
from .logscan import NO_TIME

_text_field = TEXT_FIELDS.get
_INT64 = 2**63


class CallFeed:
    """Groups fed chunks into calls; a subclass says what is kept of each call (``_keep``)."""

    __slots__ = ("file", "lenient", "unfinished", "untimed", "count", "open_key", "_chunks",
                 "_times", "_first_line", "last_line")
    keeps = True
    """Whether the reader must build every chunk (False: packed members are placeholders)."""
    wants_said = False
    """Whether the reader hands over the log's context lines (``said``)."""

    def __init__(self, file: str | None = None, *, lenient: bool = False) -> None:
        self.file = file
        self.lenient = lenient
        """Keep a call without a finish chunk instead of raising (authoring)."""
        self.unfinished: list[int] = []
        """Positions of the calls kept without a finish chunk (lenient only)."""
        self.untimed = 0
        """Chunk events and packed rows that left their time out (a projected log): they pace
        with no gap."""
        self.count = 0
        """Calls so far."""
        self.open_key: str | None = None
        """The key of the open call (one without its finish chunk yet), else None; a reader
        that sees a chunk line continue it (same key object, no finish) may only move
        ``last_line``."""
        self._chunks: list[Any] = []
        self._times: Any = array("q")
        self._first_line = 0
        self.last_line = 0
        """The line of the open call's last chunk (its errors name it)."""

    def _keep(self, key: str, chunks: list[Any], times: Any) -> None:
        """Keep one closed call (the subclass's part)."""
        raise NotImplementedError

    def _store(self, key: str, chunks: list[Any], times: Any) -> None:
        self._keep(key, chunks, times)
        self.count += 1
        self.open_key = None
        self._chunks = []
        self._times = array("q")

    def _close(self) -> None:
        """Close the open call: it must end with a finish chunk (else it threw live)."""
        key = self.open_key
        if key is None:
            return
        chunks = self._chunks
        last = chunks[-1] if chunks else None
        if type(last) is not dict or last.get("type") != "finish":
            if not self.lenient:
                raise unfinished_call_error(self.file, key, self.count, self._first_line,
                                            self.last_line)
            self.unfinished.append(self.count)
        self._store(key, chunks, self._times)

    def _continue(self, key: str, line: int) -> None:
        """Go on with the call under ``key`` at ``line``, closing another open call first."""
        if self.open_key != key:
            if self.open_key is not None:
                self._close()
            self.open_key = key
            self._first_line = line
        self.last_line = line

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None:
        """One ``assistant/chunk``: open or continue the call under ``key``."""
        if chunk is None:
            raise missing_chunk_error(self.file, key, line)
        if type(chunk) is not dict or (
            type(kind := chunk.get("type")) is str and (field := _text_field(kind)) is not None
            and type(chunk.get(field, "")) is not str
        ):
            raise bad_chunk_error(self.file, key, line, str(chunk_shape_problem(chunk)))
        self._continue(key, line)
        self._chunks.append(chunk)
        self._times.append(time if type(time) is int and -_INT64 < time < _INT64
                           else self._time(time))
        if kind == "finish":
            self._store(key, self._chunks, self._times)

    def shaped(self, key: str, finish: bool, line: int) -> None:
        """A chunk line whose decoding already checked its chunk (a ``logscan.ChunkShape``,
        read for a feed that keeps no chunk): ``chunk`` without the look or the keeping;
        ``finish``: it is the call's finish chunk."""
        self._continue(key, line)
        if finish:
            self._store(key, self._chunks, self._times)

    def _time(self, value: Any) -> int:
        """A time that is not a plain int64: a missing one is 0 and counted (docs/format.md#session-logs)."""
        if value is NO_TIME:
            self.untimed += 1
            return 0
        return as_time(value)

    def run(self, key: str, chunks: list[Any], times: Any, line: int) -> None:
        """The delta chunks of one packed row at once (as ``chunk`` per member; never a
        finish)."""
        self._continue(key, line)
        if self._chunks:
            self._chunks.extend(chunks)
            self._times.extend(times)
        else:
            self._chunks = chunks
            self._times = times

    def call(self, key: str, chunks: Any, times: Any, line: int, finished: bool) -> None:
        """One whole call (a v2+ settlement, docs/format.md#deriving-v2) read from ``line``: it must have
        ended with a finish chunk (``finished``); a feed that keeps no chunk may get None for the
        chunks and times."""
        if self.open_key is not None:
            self._close()
        self._first_line = self.last_line = line
        if not finished:
            if not self.lenient:
                raise unfinished_call_error(self.file, key, self.count, line, line)
            self.unfinished.append(self.count)
        self._keep(key, chunks, times)
        self.count += 1

    def said(self, kind: str, line: int, raw: bytes) -> None:
        """A ``user/message``, ``tool/result`` or ``assistant/message`` line (``kind``): what
        the calls after it were answering (only a feed that ``wants_said`` is handed them)."""

    def compaction(self, data: Any, time: Any, line: int, suspect: bool = True) -> None:
        """A ``compaction/summary`` event; a model call when ``llmStreamCall`` is true.
        ``suspect``: its line may hold what a sidecar refuses (``logs.kept_may_fail``)."""
        self._close()
        chunks = compaction_chunks(data, self.file, line)
        if chunks is None:
            return
        for chunk in chunks if suspect else ():  # kept as read: they must fit a sidecar too
            check_kept(chunk, self.file, line, "a compaction chunk")
        self._first_line = self.last_line = line
        self._store("compaction", chunks, array("q", [as_time(time)] * len(chunks)))


class Checker(CallFeed):
    """A feed that keeps no chunk: ``finish()`` gives the number of calls (``validate``)."""

    __slots__ = ()
    keeps = False

    def _keep(self, key: str, chunks: list[Any], times: Any) -> None:
        return None

    def finish(self) -> int:
        """Close the last call; the number of calls."""
        self._close()
        return self.count
