"""The fast path of derivation: stream a log file and derive its script in one pass.

Lines are decoded into the small Structs of ``logscan`` (payloads derivation ignores are
skipped), packed rows become their chunks a whole row at a time, and anything unusual goes
through ``logscan.slow_line``, the exact generic rules; ``Deriver`` groups the calls.
"""

from __future__ import annotations

import io
import struct
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import setitem
from pathlib import Path
from typing import Any

import msgspec

from ..models import ScriptEntry, SessionHeader
from .callkeys import Undefined, call_key
from .derive import Deriver
from .generations import check_generation, read_generation
from .layout import generation_of
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    ensure_log_file,
    header_from_value,
    too_deep_line_error,
    unreadable_log_error,
)
from .logscan import PackedFields, Sink, gc_paused, line_decoder, packed_fields, seed_start, slow_line

__all__ = ["DerivingSink", "LoadedLog", "derive_any", "derive_lines", "derive_log_bytes", "load_log"]

# --- the streaming loader ---------------------------------------------------------------
#
# The line Structs and the slow path are in ``logscan`` (shared with the check-only reader);
# here the chunks of packed rows are built a whole row at a time.

_SAFE_RUN = 1000
"""Packed rows up to this many members cannot reach the int64 limits (1000 * 2^53 < 2^63)."""
_INT64_MIN = -(2**63)
_SHARED_TEXTS = 4096
"""Distinct member texts shared per log (the most frequent tokens come early); a bigger table
no longer fits the CPU caches and costs more time than the memory it saves."""
_pack = struct.pack


@dataclass(slots=True)
class LoadedLog:
    """A parsed and derived session log."""

    header: SessionHeader
    entries: list[ScriptEntry]
    event_count: int
    untimed: int = 0
    """Chunk events and packed rows that left their time out (see ``Deriver.untimed``)."""
    unfinished: list[int] = field(default_factory=list)
    """Indices of the calls kept without a finish chunk (lenient reading only)."""


def load_log(path: str | Path, *, seed_length: bool = False, name: str | None = None,
             lenient: bool = False) -> LoadedLog:
    """Stream a log file from disk, derive its script; a child (``seed_length``) from its
    inherited history on. The file name's generation (``.vK``) says how it is read."""
    file = name or str(path)
    ensure_log_file(path, file)
    try:
        with open(path, "rb") as handle, gc_paused():
            return derive_any(handle, file, seed_length, generation_of(file), lenient=lenient)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def derive_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False,
                     generation: int | None = None, lenient: bool = False) -> LoadedLog:
    """Derive a log held in memory (same rules as ``load_log``)."""
    if generation is None:
        generation = generation_of(file or "")
    with gc_paused():
        return derive_any(io.BytesIO(data), file, seed_length, generation, lenient=lenient)


def derive_any(lines: Iterable[bytes], file: str | None, use_seed: bool, generation: int, *,
               lenient: bool = False) -> LoadedLog:
    """Derive a log of any generation: v2+ by settlements (SPEC 2b), v0/v1 by chunk events."""
    if generation < 2:
        return derive_lines(lines, file, use_seed, generation, lenient=lenient)
    deriver = Deriver(file, lenient=lenient)
    found = read_generation(lines, file, deriver, child=use_seed, generation=generation)
    entries = deriver.finish()
    header = header_from_value(found.header, file, 1)
    header = header.model_copy(update={"seedLength": found.inherited})
    return LoadedLog(header, entries, found.event_count, 0, deriver.unfinished)


class DerivingSink(Sink):
    """The sink of a deriver that keeps the chunks: finishing returns the script."""

    __slots__ = ()
    deriver: Deriver

    def finish(self, count: int) -> list[ScriptEntry]:
        """Apply what a negative seed held back, then finish the script."""
        self.flush(count)
        return self.deriver.finish()


def _packed_run(
    raw: bytes, kind: str, texts_seen: dict[str, str], deriver: Deriver
) -> tuple[str, list[dict[str, Any]], array[int]] | None:
    """A well-formed, ordinary packed row as (key, chunks, times); None sends it the slow way.

    Member texts repeat (they are model tokens): equal ones share one string object, through a
    table of the first texts seen, kept small so that looking texts up stays cheap.
    """
    share = texts_seen.setdefault if len(texts_seen) < _SHARED_TEXTS else texts_seen.get
    fields: PackedFields | None = packed_fields(raw, kind)
    if fields is None:
        return None
    row, payload, ident, name = fields
    data = row.data
    turn, step, index, dt = data.turn, data.step, data.index, data.dt
    count = len(payload)
    time0 = row.time0
    untimed = isinstance(time0, msgspec.UnsetType)  # a projected row: its members start at 0
    if untimed:
        time0 = 0
    try:  # struct packs faster than array() converts
        packed = _pack(f"{count}q", *accumulate(dt, initial=time0))
    except struct.error:  # a time beyond int64: the slow way records it as 0
        return None
    times = array("q")
    times.frombytes(packed)
    if count > _SAFE_RUN and min(times) == _INT64_MIN:  # also recorded as 0
        return None
    template: dict[str, Any] = {"type": PACKED_CHUNK_TYPES[kind], "index": index}
    if kind != "tool-call-chunks":
        field = "text"
    else:
        template["id"] = ident
        if not isinstance(name, msgspec.UnsetType):
            template["name"] = name
        field = "argumentsDelta"
    template[field] = None
    # One copy of the template per member, then its text set: C loops, no bytecode per member.
    chunks = list(map(dict.copy, repeat(template, count)))
    deque(map(setitem, chunks, repeat(field), map(share, payload, payload)), maxlen=0)
    key = f"{turn}/{step}" if type(turn) is int and type(step) is int else call_key(turn, step)
    if untimed:
        deriver.untimed += 1
    return key, chunks, times


def derive_lines(lines: Iterable[bytes], file: str | None, use_seed: bool, generation: int = 0,
                 *, lenient: bool = False) -> LoadedLog:
    """Derive from a v0/v1 log's lines (split on b"\\n"); the header is the first non-blank line."""
    header: SessionHeader | None = None
    deriver = Deriver(file, lenient=lenient)
    sink = DerivingSink(deriver)
    put = sink.put
    add_chunk = deriver.chunk
    add_run = deriver.run
    start = 0
    direct = True  # no seed to honour (or it is passed): feed the deriver, not the sink
    index = 0
    number = 0
    ev_decode = line_decoder.decode
    texts_seen: dict[str, str] = {}
    keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
    try:  # free until raised: a value nested past what call keys can read
        for raw in lines:
            number += 1
            if header is None:
                blank, value = decode_line(raw, file, number)
                if blank:
                    continue
                header = header_from_value(value, file, number)
                check_generation(value, file, generation, number)
                if use_seed:
                    seed = header.seedLength
                    start = sink.start = seed_start(seed)
                    if start < 0:
                        sink.pending = []
                    direct = start == 0
                continue
            try:
                event = ev_decode(raw)
            except (msgspec.DecodeError, RecursionError):
                index = slow_line(raw, number, index, sink, file)
                continue
            kind = event.type
            if kind == "assistant/chunk":
                data = event.data
                if data is None:
                    turn = step = Undefined
                    chunk = None
                else:
                    turn, step, chunk = data.turn, data.step, data.chunk
                if type(turn) is int and type(step) is int:
                    key = keys.get((turn, step))
                    if key is None:
                        key = keys[turn, step] = f"{turn}/{step}"
                else:
                    key = call_key(turn, step)
                if direct:
                    add_chunk(key, chunk, event.time, number)
                else:
                    put((index, 0, key, chunk, event.time, number))
                    direct = sink.pending is None and index + 1 >= start
                index += 1
            elif type(kind) is str and kind in PACKED_CHUNK_TYPES:
                run = _packed_run(raw, kind, texts_seen, deriver)
                if run is None:
                    index = slow_line(raw, number, index, sink, file)
                    direct = sink.pending is None and index >= start
                else:
                    key, chunks, times = run
                    if direct:
                        add_run(key, chunks, times, number)
                    else:
                        put((index, 2, key, chunks, times, number))
                    index += len(chunks)
                    direct = sink.pending is None and index >= start
            elif kind == "compaction/summary":
                index = slow_line(raw, number, index, sink, file)
                direct = sink.pending is None and index >= start
            else:
                index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    entries = sink.finish(index)
    return LoadedLog(header or SessionHeader(), entries, index, deriver.untimed, deriver.unfinished)
