"""The one reading loop of a session log, whatever is fed: ``read_log``.

A log of generation 2 or later is read by ``generations.read_generation``; a v0/v1 log by
``read_legacy`` here. Each feeds one ``feeds.CallFeed``: the loader's ``Deriver`` (chunks
kept, strict or lenient), or ``validate``'s ``Checker`` (calls counted, no chunk built), so
loading, checking and authoring read every line the same way and raise the same errors.

Lines are decoded into the small Structs of ``logscan`` (payloads derivation ignores are
skipped), packed rows become their chunks a whole row at a time, and anything unusual goes
through ``logscan.slow_line``, the exact generic rules.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import setitem
from typing import Any

import msgspec

from .callkeys import Undefined, call_key
from .feeds import CallFeed
from .kept import KEPT_GATE, check_envelope, check_kept, kept_may_fail
from .layout import check_generation
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    header_fields,
    too_deep_line_error,
)
from .logscan import (
    CheckedEvent,
    ChunkShape,
    LineEvent,
    PackedFields,
    ShapeEvent,
    Sink,
    checked_decoder,
    line_decoder,
    non_object_warning,
    packed_fields,
    raw_envelope_warnings,
    seed_start,
    shape_decoder,
    slow_line,
)

__all__ = ["LogRead", "read_legacy", "read_log"]

_SAFE_RUN = 1000
"""Packed rows up to this many members cannot reach the int64 limits (1000 * 2^53 < 2^63)."""
_INT64_MIN = -(2**63)
_SHARED_TEXTS = 4096
"""Distinct member texts shared per log (the most frequent tokens come early); a bigger table
no longer fits the CPU caches and costs more time than the memory it saves."""
_pack = struct.pack


@dataclass(slots=True)
class LogRead:
    """What reading a log found besides the calls it fed."""

    header: Any
    """The header line as decoded (None for an empty v0/v1 log)."""
    fields: dict[str, Any]
    """The header's facts (``logs.header_fields``), the seedLength a v2+ log's cut."""
    event_count: int
    warnings: list[str] = field(default_factory=list)


def read_log(lines: Iterable[bytes], file: str | None, feed: CallFeed, *, child: bool,
             generation: int, warnings: list[str] | None = None) -> LogRead:
    """Read a log of any generation (the file name's), feeding its calls to ``feed``; a child
    (``child``) from its inherited history on. ``warnings`` collects what a newer harness
    would refuse (``validate``)."""
    if generation < 2:
        return read_legacy(lines, file, feed, child, generation, warnings)
    from .generations import read_generation  # its decoders are built only for v2+ logs

    found = read_generation(lines, file, feed, child=child, generation=generation)
    return LogRead(found.header, found.fields, found.event_count,
                   [] if warnings is None else warnings)


def _packed_run(
    fields: PackedFields, kind: str, texts_seen: dict[str, str], feed: CallFeed
) -> tuple[list[dict[str, Any]], array[int]] | None:
    """The chunks and times of a well-formed, ordinary packed row; None sends it the slow way.

    Member texts repeat (they are model tokens): equal ones share one string object, through a
    table of the first texts seen, kept small so that looking texts up stays cheap.
    """
    share = texts_seen.setdefault if len(texts_seen) < _SHARED_TEXTS else texts_seen.get
    row, payload, ident, name = fields
    data = row.data
    count = len(payload)
    time0 = row.time0
    untimed = isinstance(time0, msgspec.UnsetType)  # a projected row: its members start at 0
    if untimed:
        time0 = 0
    try:  # struct packs faster than array() converts
        packed = _pack(f"{count}q", *accumulate(data.dt, initial=time0))
    except struct.error:  # a time beyond int64: the slow way records it as 0
        return None
    times = array("q")
    times.frombytes(packed)
    if count > _SAFE_RUN and min(times) == _INT64_MIN:  # also recorded as 0
        return None
    template: dict[str, Any] = {"type": PACKED_CHUNK_TYPES[kind], "index": data.index}
    if kind != "tool-call-chunks":
        text = "text"
    else:
        template["id"] = ident
        if not isinstance(name, msgspec.UnsetType):
            template["name"] = name
        text = "argumentsDelta"
    template[text] = None
    # One copy of the template per member, then its text set: C loops, no bytecode per member.
    chunks = list(map(dict.copy, repeat(template, count)))
    deque(map(setitem, chunks, repeat(text), map(share, payload, payload)), maxlen=0)
    if untimed:
        feed.untimed += 1
    return chunks, times


_NOTHING = object()
"""No chunk line read yet (a ``turn`` / ``step`` object no line holds)."""


def _chunk_value(chunk: Any, raw: bytes) -> Any:
    """The chunk as the loader keeps it (a ``ChunkShape`` is decoded again, whole)."""
    if type(chunk) is not ChunkShape:
        return chunk
    data = line_decoder.decode(raw).data
    return data.chunk if data is not None else None


def read_legacy(lines: Iterable[bytes], file: str | None, feed: CallFeed, use_seed: bool,
                generation: int = 0, warnings: list[str] | None = None) -> LogRead:
    """Read a v0/v1 log's lines (split on b"\\n"): the header is the first non-blank line, a
    child (``use_seed``) is fed from its ``seedLength`` on (docs/format.md#deriving-scripts)."""
    header: Any = None
    fields: dict[str, Any] | None = None
    sink = Sink(feed)
    put = sink.put
    add_chunk = feed.chunk
    add_run = feed.run
    keeps = feed.keeps
    start = 0
    direct = True  # no seed to honour (or it is passed): feed the feed, not the sink
    index = 0
    number = 0
    decode = (checked_decoder if keeps else shape_decoder).decode
    shape, kept_gate = ChunkShape, KEPT_GATE
    last_turn: Any = _NOTHING  # the turn and step objects of the last chunk line, and its key
    last_step: Any = _NOTHING
    last_key = ""
    texts_seen: dict[str, str] = {}
    keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
    # A feed that keeps no chunk has its state in these locals while chunk lines stream past
    # (``local``); it is handed back before anything else is fed.
    local = False
    open_key: str | None = None
    first = last = count = 0
    event: CheckedEvent | ShapeEvent | LineEvent
    chunk: Any
    try:  # free until raised: a value nested past what call keys can read
        for raw in lines:
            number += 1
            if fields is None:
                blank, header = decode_line(raw, file, number)
                if blank:
                    continue
                fields = header_fields(header, file, number)
                check_generation(header, file, generation, number)
                if warnings is not None and header is not None and not isinstance(header, dict):
                    warnings.append(non_object_warning(file, number, header))
                if use_seed:
                    start = sink.start = seed_start(float(fields.get("seedLength", 0)))
                    if start < 0:
                        sink.pending = []
                    direct = start == 0
                continue
            try:
                event = decode(raw)
            except (msgspec.DecodeError, RecursionError):
                try:
                    event = line_decoder.decode(raw)
                except (msgspec.DecodeError, RecursionError):
                    if local:
                        feed.state, local = (open_key, first, last, count), False
                    index = slow_line(raw, number, index, sink, file, warnings)
                    direct = sink.pending is None and index >= start
                    continue
                if warnings is not None:
                    raw_envelope_warnings(raw, file, number, warnings)
                check_envelope(event.seq, event.time, file, number)
            kind = event.type
            if kind == "assistant/chunk":
                data = event.data
                if data is None:
                    turn = step = Undefined
                    chunk = None
                else:
                    turn, step, chunk = data.turn, data.step, data.chunk
                if turn is last_turn and step is last_step:  # the same objects: small ints
                    key = last_key
                else:
                    if type(turn) is int and type(step) is int:
                        made = keys.get((turn, step))
                        key = keys[turn, step] = f"{turn}/{step}" if made is None else made
                    else:
                        key = call_key(turn, step)
                    last_turn, last_step, last_key = turn, step, key
                if (len(raw) > kept_gate and chunk is not None and type(chunk) is not shape
                        and kept_may_fail(raw)):  # a ChunkShape needs no such look
                    check_kept(chunk, file, number, "$.data.chunk")
                if not direct:
                    if local:
                        feed.state, local = (open_key, first, last, count), False
                    put((index, 0, key, _chunk_value(chunk, raw), event.time, number))
                    direct = sink.pending is None and index + 1 >= start
                elif keeps:
                    add_chunk(key, chunk, event.time, number)
                else:
                    if not local:
                        (open_key, first, last, count), local = feed.state, True
                    # ``CallFeed.chunk`` for a chunk that opens, continues or finishes a call
                    # (the common lines of a check: a ``ChunkShape`` fits by decoding);
                    # anything else is fed to it.
                    if type(chunk) is shape and (
                            open_key is key or open_key is None or open_key == key):
                        if open_key is None:
                            open_key, first = key, number
                        last = number
                        if chunk.type == "finish":
                            count += 1
                            open_key = None
                    else:
                        feed.state, local = (open_key, first, last, count), False
                        add_chunk(key, _chunk_value(chunk, raw), event.time, number)
                index += 1
            elif type(kind) is str and kind in PACKED_CHUNK_TYPES:
                if local:
                    feed.state, local = (open_key, first, last, count), False
                found = packed_fields(raw, kind)
                run: tuple[list[Any], Any] | None = None
                if found is not None:
                    if keeps:
                        run = _packed_run(found, kind, texts_seen, feed)
                    else:  # the checker needs only how many members there are
                        members = len(found[1])
                        run = [None] * members, array("q", bytes(8 * members))
                if run is None:
                    index = slow_line(raw, number, index, sink, file)
                else:
                    row_data = found[0].data  # type: ignore[index]
                    turn, step = row_data.turn, row_data.step
                    plain = type(turn) is int and type(step) is int
                    key = f"{turn}/{step}" if plain else call_key(turn, step)
                    chunks, times = run
                    if direct:
                        add_run(key, chunks, times, number)
                    else:
                        put((index, 2, key, chunks, times, number))
                    index += len(chunks)
                direct = sink.pending is None and index >= start
            elif kind == "compaction/summary":
                if local:
                    feed.state, local = (open_key, first, last, count), False
                index = slow_line(raw, number, index, sink, file)
                direct = sink.pending is None and index >= start
            else:
                index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    if local:
        feed.state = (open_key, first, last, count)
    sink.flush(index)
    return LogRead(header, fields or {}, index, [] if warnings is None else warnings)
