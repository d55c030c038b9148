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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import setitem
from typing import Any

import msgspec

from ..logevents import SAID_TYPES, said_kind
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
    child (``use_seed``) is fed from its ``seedLength`` on (docs/format.md#deriving-scripts). Chunk
    lines, most of a log, are read here; header, packed rows and anything unusual by the helpers below."""
    st = _Legacy(file, feed, warnings)
    header: Any = None
    fields: dict[str, Any] | None = None
    sink, add_chunk, keeps = st.sink, feed.chunk, feed.keeps
    said = feed.said if feed.wants_said else None
    decode = (checked_decoder if keeps else shape_decoder).decode
    shape, kept_gate = ChunkShape, KEPT_GATE
    direct, start, index, number = True, 0, 0, 0  # direct: no seed to honour (or it is passed)
    last_turn: Any = _NOTHING  # the turn and step objects of the last chunk line, and its key
    last_step: Any = _NOTHING
    key = ""
    # A feed that keeps no chunk has its state in these locals while chunk lines stream past
    # (``local``); it is handed back before anything else is fed.
    local, open_key, first, last, count = False, None, 0, 0, 0
    event: CheckedEvent | ShapeEvent | LineEvent | None
    chunk: Any
    try:  # free until raised: a value nested past what call keys can read
        for raw in lines:
            number += 1
            if fields is None:
                header, fields, start = st.header(raw, number, generation, use_seed)
                direct = start == 0
                continue
            try:
                event = decode(raw)
            except (msgspec.DecodeError, RecursionError):
                if local:
                    feed.state, local = (open_key, first, last, count), False
                event, index = st.undecoded(raw, number, index, said)
                if event is None:
                    direct = sink.pending is None and index >= start
                    continue
            kind = event.type
            if kind == "assistant/chunk":
                data = event.data
                if data is None:
                    turn = step = Undefined
                    chunk = None
                else:
                    turn, step, chunk = data.turn, data.step, data.chunk
                if turn is not last_turn or step is not last_step:  # else: the same small ints
                    last_turn, last_step, key = turn, step, st.key(turn, step)
                if (len(raw) > kept_gate and chunk is not None and type(chunk) is not shape
                        and kept_may_fail(raw)):  # a ChunkShape needs no such look
                    check_kept(chunk, file, number, "$.data.chunk")
                if not direct:
                    if local:
                        feed.state, local = (open_key, first, last, count), False
                    sink.put((index, 0, key, _chunk_value(chunk, raw), event.time, number))
                    direct = sink.pending is None and index + 1 >= start
                elif keeps:
                    add_chunk(key, chunk, event.time, number)
                else:  # ``CallFeed.chunk`` in locals for a chunk that opens, continues or
                    if not local:  # finishes a call (a ``ChunkShape`` fits by decoding)
                        (open_key, first, last, count), local = feed.state, True
                    if type(chunk) is shape and (
                            open_key is key or open_key is None or open_key == key):
                        if open_key is None:
                            open_key, first = key, number
                        last = number
                        if chunk.type == "finish":
                            count, open_key = count + 1, None
                    else:  # anything else is fed to it
                        feed.state, local = (open_key, first, last, count), False
                        add_chunk(key, _chunk_value(chunk, raw), event.time, number)
                index += 1
            elif type(kind) is str and kind in _ROWS:  # packed rows, compaction
                if local:
                    feed.state, local = (open_key, first, last, count), False
                index = st.row(raw, kind, number, index, direct)
                direct = sink.pending is None and index >= start
            else:
                if said is not None and type(kind) is str and kind in SAID_TYPES:
                    said(kind, number, raw)
                index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    if local:
        feed.state = (open_key, first, last, count)
    sink.flush(index)
    return LogRead(header, fields or {}, index, [] if warnings is None else warnings)


_ROWS = frozenset({*PACKED_CHUNK_TYPES, "compaction/summary"})
"""Event types ``_Legacy.row`` reads: a packed row, or a compaction (the exact rules)."""


class _Legacy:
    """What ``read_legacy`` needs only now and then: the header, lines its fast decoder
    refused, packed rows and compactions, call keys."""

    __slots__ = ("file", "feed", "sink", "warnings", "texts_seen", "keys")

    def __init__(self, file: str | None, feed: CallFeed, warnings: list[str] | None) -> None:
        self.file, self.feed, self.warnings = file, feed, warnings
        self.sink = Sink(feed)
        self.texts_seen: dict[str, str] = {}
        self.keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once

    def header(self, raw: bytes, number: int, generation: int,
               use_seed: bool) -> tuple[Any, dict[str, Any] | None, int]:
        """The header line (None facts: a blank line before it) and the index the feed
        starts at (a child's seed)."""
        blank, header = decode_line(raw, self.file, number)
        if blank:
            return None, None, 0
        fields = header_fields(header, self.file, number)
        check_generation(header, self.file, generation, number)
        if self.warnings is not None and header is not None and not isinstance(header, dict):
            self.warnings.append(non_object_warning(self.file, number, header))
        if not use_seed:
            return header, fields, 0
        start = self.sink.start = seed_start(float(fields.get("seedLength", 0)))
        if start < 0:
            self.sink.pending = []
        return header, fields, start

    def undecoded(self, raw: bytes, number: int, index: int,
                  said: Callable[[str, int, bytes], None] | None) -> tuple[LineEvent | None, int]:
        """A line the fast decoder refused: its event by the loose decoder (envelope checked),
        else None and the next index once the exact generic rules have read it."""
        try:
            event = line_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            if said is not None and (found_kind := said_kind(raw)) is not None:
                said(found_kind, number, raw)
            return None, slow_line(raw, number, index, self.sink, self.file, self.warnings)
        if self.warnings is not None:
            raw_envelope_warnings(raw, self.file, number, self.warnings)
        check_envelope(event.seq, event.time, self.file, number)
        return event, index

    def key(self, turn: Any, step: Any) -> str:
        """The call key of a chunk's turn and step (integer ones made once)."""
        if type(turn) is int and type(step) is int:
            made = self.keys.get((turn, step))
            if made is None:
                made = self.keys[turn, step] = f"{turn}/{step}"
            return made
        return call_key(turn, step)

    def row(self, raw: bytes, kind: str, number: int, index: int, direct: bool) -> int:
        """A packed row (its members a whole row at a time) or a compaction; the next index."""
        found = packed_fields(raw, kind) if kind in PACKED_CHUNK_TYPES else None
        run: tuple[list[Any], Any] | None = None
        if found is not None:
            if self.feed.keeps:
                run = _packed_run(found, kind, self.texts_seen, self.feed)
            else:  # the checker needs only how many members there are
                members = len(found[1])
                run = [None] * members, array("q", bytes(8 * members))
        if run is None:
            return slow_line(raw, number, index, self.sink, self.file)
        assert found is not None
        row_data = found[0].data
        turn, step = row_data.turn, row_data.step
        key = f"{turn}/{step}" if type(turn) is int and type(step) is int else call_key(turn, step)
        chunks, times = run
        if direct:
            self.feed.run(key, chunks, times, number)
        else:
            self.sink.put((index, 2, key, chunks, times, number))
        return index + len(chunks)
