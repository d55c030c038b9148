"""The one reading loop of a session log, whatever its generation and whatever is fed.

``read_log`` walks the lines once. Where the generations differ it decides per line: a v0/v1
log's ``assistant/chunk`` lines and packed rows (docs/format.md#session-logs and
#deriving-scripts) are grouped into calls, a v2+ log's settlement events carry whole calls
(docs/format.md#generations, read by ``generations``). Either way it feeds one ``feeds.CallFeed``: the
loader's ``Deriver`` (chunks kept, strict or lenient), or
``validate``'s ``Checker`` (calls counted, no chunk built), so loading, checking and
authoring read every line the same way and raise the same errors.

Lines are decoded into small Structs (payloads derivation ignores are skipped); a v0/v1
packed row's members are made a whole row at a time; anything unusual goes through
``logscan.slow_line`` (v0/v1) or the exact rules of ``generations`` (v2+).
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
    ShapeData,
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

__all__ = ["LogRead", "read_log"]

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


CHUNK = "assistant/chunk"


def read_log(lines: Iterable[bytes], file: str | None, feed: CallFeed, *, child: bool,
             generation: int, warnings: list[str] | None = None) -> LogRead:
    """Read a log of any generation (the file name's), feeding its calls to ``feed``; a child
    (``child``) from its seed or inherited cut on. ``warnings`` collects what a newer harness
    would refuse (``validate``, v0/v1 logs)."""
    st = _Reading(file, feed, child, generation, warnings)
    settled, decode = st.settled, st.decode
    said = feed.said if feed.wants_said else None
    unset, shape_data = msgspec.UNSET, ShapeData
    event: Any
    chunk: Any
    number = 0
    try:  # free until raised: a value nested past what call keys can read
        for raw in lines:
            number += 1
            if st.fields is None:
                st.header(raw, number)
                continue
            try:
                event = decode(raw)
            except (msgspec.DecodeError, RecursionError):
                if (event := st.undecoded(raw, number, said)) is None:
                    continue
            kind = event.type
            if settled is None:
                if kind == CHUNK:  # most of a v0/v1 log; most often the open call goes on
                    data = event.data
                    if (type(data) is shape_data and type(chunk := data.chunk) is ChunkShape
                            and data.turn == st.last_turn and data.step == st.last_step
                            and type(data.turn) is int and type(data.step) is int and st.direct
                            and feed.open_key is st.last_key and chunk.type != "finish"):
                        feed.last_line = number  # all ``CallFeed.shaped`` would do
                        st.index += 1
                    else:
                        st.chunk(event, raw, number)
                    continue
                if type(kind) is str and kind in _ROWS:
                    st.row(raw, kind, number)
                    continue
            else:
                if ((event.seq is unset) is not settled.projected
                        or (event.time is unset) is not settled.projected):
                    settled.envelope(event, number)
                if type(kind) is str and kind in settled.types:
                    settled.event(kind, event, raw, number, st.index)
            if said is not None and type(kind) is str and kind in SAID_TYPES:
                said(kind, number, raw)
            st.index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    return st.finish(number)


def _chunk_value(chunk: Any, raw: bytes) -> Any:
    """The chunk as the loader keeps it (a ``ChunkShape`` is decoded again, whole)."""
    if type(chunk) is not ChunkShape:
        return chunk
    data = line_decoder.decode(raw).data
    return data.chunk if data is not None else None


_ROWS = frozenset({*PACKED_CHUNK_TYPES, "compaction/summary"})
"""Event types ``_Reading.row`` reads: a packed row, or a compaction (the exact rules)."""




class _Reading:
    """What ``read_log`` keeps between lines: the header, the event index, a v0/v1 child's
    seed (``sink``, ``direct``), call keys, and a v2+ log's ``generations.Settled`` state."""

    __slots__ = ("file", "feed", "warnings", "child", "generation", "sink", "settled", "decode",
                 "header_value", "fields", "index", "start", "direct", "texts_seen", "keys",
                 "last_turn", "last_step", "last_key")

    def __init__(self, file: str | None, feed: CallFeed, child: bool, generation: int,
                 warnings: list[str] | None) -> None:
        self.file, self.feed, self.warnings = file, feed, warnings
        self.child, self.generation = child, generation
        self.sink = Sink(feed)
        self.settled: Any = None
        self.decode: Callable[[bytes], Any] = (checked_decoder if feed.keeps
                                               else shape_decoder).decode
        if generation >= 2:  # its decoders and modules are loaded only for a v2+ log
            from .generations import Settled

            self.settled = Settled(file, feed, child)
            self.decode = self.settled.decode
        self.header_value: Any = None
        self.fields: dict[str, Any] | None = None
        self.index = self.start = 0
        self.direct = True  # no seed to honour (or it is passed): feed, not the sink
        self.texts_seen: dict[str, str] = {}
        self.keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
        self.last_turn = self.last_step = -1  # integer turn and step of the last chunk line
        self.last_key = "-1/-1"  # the call key of that turn and step

    def header(self, raw: bytes, number: int) -> None:
        """The header line (a blank line before it is skipped) and, for a v0/v1 child, the
        index its feed starts at (its seed)."""
        if self.settled is not None:
            self.header_value, self.fields = self.settled.header(raw, number, self.generation)
            return
        blank, header = decode_line(raw, self.file, number)
        if blank:
            return
        self.header_value, self.fields = header, header_fields(header, self.file, number)
        check_generation(header, self.file, self.generation, number)
        if self.warnings is not None and header is not None and not isinstance(header, dict):
            self.warnings.append(non_object_warning(self.file, number, header))
        if self.child:
            start = self.sink.start = self.start = seed_start(
                float(self.fields.get("seedLength", 0)))
            if start < 0:
                self.sink.pending = []
            self.direct = start == 0

    def undecoded(self, raw: bytes, number: int,
                  said: Callable[[str, int, bytes], None] | None) -> Any:
        """A line the fast decoder refused: its event by the loose decoder (envelope checked),
        else None once the exact rules have read it (v0/v1) or it is blank (v2+)."""
        if self.settled is not None:
            return self.settled.undecoded(raw, number)
        try:
            event = line_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            if said is not None and (found_kind := said_kind(raw)) is not None:
                said(found_kind, number, raw)
            self.index = slow_line(raw, number, self.index, self.sink, self.file, self.warnings)
            self.direct = self.sink.pending is None and self.index >= self.start
            return None
        if self.warnings is not None:
            raw_envelope_warnings(raw, self.file, number, self.warnings)
        check_envelope(event.seq, event.time, self.file, number)
        return event

    def chunk(self, event: CheckedEvent | ShapeEvent | LineEvent, raw: bytes,
              number: int) -> None:
        """A v0/v1 ``assistant/chunk`` line: open, continue or finish its call."""
        data = event.data
        chunk: Any
        if data is None:
            turn = step = Undefined
            chunk = None
        else:
            turn, step, chunk = data.turn, data.step, data.chunk
        if type(turn) is not int or type(step) is not int:
            key = call_key(turn, step)
        elif turn == self.last_turn and step == self.last_step:  # the last line's call
            key = self.last_key
        else:
            self.last_turn, self.last_step = turn, step
            key = self.last_key = f"{turn}/{step}"
        shaped = type(chunk) is ChunkShape  # its decoding checked it: no look needed
        if len(raw) > KEPT_GATE and chunk is not None and not shaped and kept_may_fail(raw):
            check_kept(chunk, self.file, number, "$.data.chunk")
        if not self.direct:
            self.sink.put((self.index, 0, key, _chunk_value(chunk, raw), event.time, number))
            self.direct = self.sink.pending is None and self.index + 1 >= self.start
        elif shaped:
            self.feed.shaped(key, chunk.type == "finish", number)
        else:
            self.feed.chunk(key, chunk, event.time, number)
        self.index += 1

    def key(self, turn: Any, step: Any) -> str:
        """The call key of a chunk's turn and step (integer ones made once)."""
        if type(turn) is int and type(step) is int:
            made = self.keys.get((turn, step))
            if made is None:
                made = self.keys[turn, step] = f"{turn}/{step}"
            return made
        return call_key(turn, step)

    def row(self, raw: bytes, kind: str, number: int) -> None:
        """A v0/v1 packed row (its members a whole row at a time) or compaction; a row the
        typed decoder refuses goes the exact way."""
        found = packed_fields(raw, kind) if kind in PACKED_CHUNK_TYPES else None
        run: tuple[list[Any], Any] | None = None
        if found is not None:
            if self.feed.keeps:
                run = _packed_run(found, kind, self.texts_seen, self.feed)
            else:  # the checker needs only how many members there are
                members = len(found[1])
                run = [None] * members, array("q", bytes(8 * members))
        if run is None:
            self.index = slow_line(raw, number, self.index, self.sink, self.file)
        else:
            assert found is not None
            row_data = found[0].data
            key = self.key(row_data.turn, row_data.step)
            chunks, times = run
            if self.direct:
                self.feed.run(key, chunks, times, number)
            else:
                self.sink.put((self.index, 2, key, chunks, times, number))
            self.index += len(chunks)
        self.direct = self.sink.pending is None and self.index >= self.start

    def finish(self, number: int) -> LogRead:
        """What the reading found, once a v0/v1 child's held-back events are fed (or a v2+
        log's calls from its inherited cut on)."""
        warnings = [] if self.warnings is None else self.warnings
        if self.settled is not None:
            fields = self.settled.finish(self.header_value, self.fields, number)
            return LogRead(self.header_value, fields, self.index, warnings)
        self.sink.flush(self.index)
        return LogRead(self.header_value, self.fields or {}, self.index, warnings)
