"""Derive one session's script of model calls from its events (SPEC section 3).

``Deriver`` holds the grouping rules once; both the public
``derive_replay_script`` (events as dicts) and the streaming file loader feed it.
"""

from __future__ import annotations

import gc
import math
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .errors import DerivationError, LogParseError
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    expand_packed_row,
    header_from_value,
    null_event_error,
)
from .models import ChunksEntry, ScriptEntry, SessionHeader

_FINISH_STOP = {"kind": "stop"}


class _UndefinedType:
    def __repr__(self) -> str:
        return "undefined"


_Undefined: Any = _UndefinedType()
"""A key absent from an event (JavaScript's ``undefined``)."""


def js_string(value: Any) -> str:
    """Render a JSON value the way JavaScript's ``String()`` does, for call keys."""
    if value is _Undefined:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


def call_key(turn: Any, step: Any) -> str:
    """``turn/step`` compared as text (``1``, ``1.0`` and ``"1"`` are one key)."""
    return f"{js_string(turn)}/{js_string(step)}"


class Deriver:
    """Groups chunk events into calls; ``finish()`` returns the script."""

    __slots__ = ("file", "entries", "_key", "_chunks", "_times", "_first_line", "_last_line")

    def __init__(self, file: str | None = None) -> None:
        self.file = file
        self.entries: list[ScriptEntry] = []
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
            where = f"{self.file or '<log>'}:{self._first_line}-{self._last_line}"
            raise DerivationError(
                f"{where}: model call {key} (call #{len(self.entries)} of the script) ended "
                "without a finish chunk: the stream threw while it was recorded, so the call "
                "cannot be derived. This scenario needs a replay.override.json sidecar holding "
                "a bare list of entries that replaces the derived script, with a throw or hang "
                "entry for that call (a patches sidecar cannot help: derivation fails first).",
                call_key=key,
                file=self.file,
                line=self._last_line,
                code="UNFINISHED_CALL",
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
            raise DerivationError(
                f"{self.file or '<log>'}:{line}: assistant/chunk event of call {key} has no "
                "data.chunk; restore the chunk or remove the event.",
                call_key=key,
                file=self.file,
                line=line,
            )
        if self._key != key:
            if self._key is not None:
                self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        self._chunks.append(chunk)
        self._times.append(_as_time(time))
        if isinstance(chunk, dict) and chunk.get("type") == "finish":
            self._add(key, self._chunks, self._times)

    def compaction(self, data: Any, time: Any, line: int) -> None:
        """A ``compaction/summary`` event; a model call when ``llmStreamCall`` is true."""
        self._close()
        where = f"{self.file or '<log>'}:{line}"
        if not isinstance(data, dict):
            raise DerivationError(
                f"{where}: compaction/summary event has no data object; restore it or remove "
                "the event.",
                file=self.file,
                line=line,
            )
        if data.get("llmStreamCall") is not True:
            return
        raw = data.get("rawOutput")
        if not isinstance(raw, list):
            raise DerivationError(
                f"{where}: compaction/summary with llmStreamCall true needs data.rawOutput "
                "(a list of content blocks); restore it or set llmStreamCall to false.",
                file=self.file,
                line=line,
            )
        chunks: list[dict[str, Any]] = []
        for i, block in enumerate(raw):
            if block is None:
                raise DerivationError(
                    f"{where}: compaction/summary rawOutput[{i}] is null; every block must be "
                    "an object.",
                    file=self.file,
                    line=line,
                )
            start: dict[str, Any] = {"type": "block-start", "index": i}
            if isinstance(block, dict) and "type" in block:
                start["blockType"] = block["type"]
            chunks.append(start)
            chunks.append({"type": "block-end", "index": i, "block": block})
        if "usage" in data:
            chunks.append({"type": "usage", "usage": data["usage"]})
        chunks.append({"type": "finish", "reason": dict(_FINISH_STOP)})
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
            call_key(data.get("turn", _Undefined), data.get("step", _Undefined)),
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


# --- the streaming loader ---------------------------------------------------------------


class _Event(msgspec.Struct, gc=False):
    type: Any = None
    time: Any = None
    data: msgspec.Raw = msgspec.Raw(b"")


class _ChunkData(msgspec.Struct, gc=False):
    turn: Any = _Undefined
    step: Any = _Undefined
    chunk: Any = None


_event_decoder = msgspec.json.Decoder(_Event)
_chunk_decoder = msgspec.json.Decoder(_ChunkData)
_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Collecting while millions of kept objects are allocated is most of the cost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(slots=True)
class LoadedLog:
    """A parsed and derived session log."""

    header: SessionHeader
    entries: list[ScriptEntry]
    event_count: int


def load_log(path: str | Path, *, seed_length: bool = False, name: str | None = None) -> LoadedLog:
    """Stream a log file from disk, derive its script; slice by the header's seedLength if asked."""
    file = name or str(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise LogParseError(f"{file}: cannot read the session log ({exc.strerror}).", file=file) from None
    with handle, _gc_paused():
        return _derive_lines(enumerate(handle, 1), file, seed_length)


def derive_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False) -> LoadedLog:
    """Derive a log held in memory (same rules as ``load_log``)."""
    with _gc_paused():
        return _derive_lines(enumerate(data.split(b"\n"), 1), file, seed_length)


def _derive_lines(lines: Any, file: str | None, use_seed: bool) -> LoadedLog:
    header: SessionHeader | None = None
    # Events before the header is known are kept as (index, kind, a, b, c, line) items.
    pending: list[tuple[int, int, Any, Any, Any, int]] | None = None
    item: tuple[int, int, Any, Any, Any, int]
    deriver = Deriver(file)
    start = 0
    index = 0
    ev_decode = _event_decoder.decode
    chunk_decode = _chunk_decoder.decode
    for number, raw in lines:
        if header is None:
            blank, value = decode_line(raw, file, number)
            if blank:
                continue
            header = header_from_value(value, file, number)
            if use_seed:
                seed = int(header.seedLength) if math.isfinite(header.seedLength) else 0
                if seed < 0:
                    pending = []
                    start = seed
                else:
                    start = seed
            continue
        try:
            event = ev_decode(raw)
        except msgspec.ValidationError:
            blank, value = decode_line(raw, file, number)
            if blank:
                continue
            if value is None:
                raise null_event_error(file, number) from None
            index += 1
            continue
        except msgspec.DecodeError:
            blank, value = decode_line(raw, file, number)
            if blank:
                continue
            raise AssertionError("decode_line accepted a line msgspec rejected") from None
        kind = event.type
        if kind == "assistant/chunk":
            try:
                data = chunk_decode(event.data) if len(event.data) else _ChunkData()
            except msgspec.ValidationError:
                data = _ChunkData()
            item = (index, 0, call_key(data.turn, data.step), data.chunk, event.time, number)
            index += 1
        elif kind == "compaction/summary":
            payload = _any_decoder.decode(event.data) if len(event.data) else None
            item = (index, 1, payload, event.time, None, number)
            index += 1
        elif kind in PACKED_CHUNK_TYPES:
            row = _any_decoder.decode(raw)
            for turn, step, t, chunk in expand_packed_row(row, file, number):
                key = call_key(turn, step)
                if pending is not None:
                    pending.append((index, 0, key, chunk, t, number))
                elif index >= start:
                    deriver.chunk(key, chunk, t, number)
                index += 1
            continue
        else:
            index += 1
            continue
        if pending is not None:
            pending.append(item)
        elif item[0] >= start:
            _apply(deriver, item)
    if pending is not None:
        first = max(0, index + start)
        for item in pending:
            if item[0] >= first:
                _apply(deriver, item)
    return LoadedLog(header or SessionHeader(), deriver.finish(), index)


def _apply(deriver: Deriver, item: tuple[int, int, Any, Any, Any, int]) -> None:
    _, kind, a, b, c, line = item
    if kind == 0:
        deriver.chunk(a, b, c, line)
    else:
        deriver.compaction(a, b, line)
