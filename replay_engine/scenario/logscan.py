"""Reading a session log line by line, without the models: the line Structs, the packed-row
check, the slow path for unusual lines, the seedLength sink, and the validate warnings.

``derive_fast`` (keeping the chunks) and ``logcheck`` (counting the calls) both read logs with
these pieces, so their results and errors agree line for line.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Protocol

import msgspec

from ..chunkshape import TEXT_FIELDS
from ..jsonlimits import ShallowJson
from ..jsonnumbers import MAX_SAFE_INTEGER, is_number, json_kind
from .callkeys import Undefined, call_key
from .kept import KEPT_GATE, check_envelope, check_kept, kept_may_fail
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    expand_packed_row,
    null_event_error,
)

NO_TIME: Any = msgspec.UNSET
"""The ``time`` of an event that leaves it out (a projected log): recorded as 0 and counted."""

# --- the line Structs ----------------------------------------------------------------------
#
# Each line is decoded once into a small Struct holding only what derivation reads (type,
# time, data.turn/step/chunk): the payloads of the events it ignores are skipped, never
# built. Packed rows are checked by a strict Struct. Anything unusual on a line (blank, not an
# object, malformed, an odd packed row, a compaction) goes through ``slow_line``: the exact
# rules of ``parse_session_log`` and ``derive_replay_script``, so results and errors (naming
# the line) are the same. One difference: inside the payloads derivation ignores, only JSON
# syntax is checked, so invalid UTF-8, a number beyond double range or deep nesting there is
# not an error (JavaScript reads all three); what a log keeps (chunks, packed rows, the
# header, every seq and time) is checked like a sidecar (``logs.check_kept``).


class _ChunkData(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    chunk: Any = None


class LineEvent(msgspec.Struct, gc=False):
    """What derivation reads of a line; other keys (and other events' payloads) are skipped.
    ``seq`` is decoded only to be checked (a number no double holds is refused)."""

    type: Any = None
    seq: Any = msgspec.UNSET
    time: Any = NO_TIME
    data: _ChunkData | None = None


_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63) + 1, le=2**63 - 1)]
"""An integer the fast path takes as is (a bigger one goes the way that checks it)."""
_Number = _Int64 | float | msgspec.UnsetType


class _CheckedChunkData(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    chunk: dict[str, Any] | None = None
    """An object or nothing: any other chunk is decoded again by ``LineEvent`` and checked."""


class CheckedEvent(msgspec.Struct, gc=False):
    """``LineEvent`` whose ``seq`` and ``time``, when present, are numbers.

    It decodes a subset of the lines ``LineEvent`` decodes, to the same values: a line it
    refuses is decoded again by ``LineEvent`` (and the envelope warned about), so checking and
    loading take the same path for every line. ``seq`` is never read: a double holds it.
    """

    type: Any = None
    seq: float | msgspec.UnsetType = msgspec.UNSET
    time: _Number = NO_TIME
    data: _CheckedChunkData | None = None


_Scalar = Annotated[int, msgspec.Meta(ge=-(2**63) + 1, le=2**63 - 1)] | float
ChunkShape: Any = msgspec.defstruct(
    "ChunkShape",
    [("type", str, msgspec.UNSET), ("index", _Scalar, msgspec.UNSET),
     *((name, str, msgspec.UNSET) for name in ("id", "name", "blockType",
                                               *sorted(set(TEXT_FIELDS.values())))),
     *((name, ShallowJson, msgspec.UNSET) for name in ("block", "usage", "reason",
                                                       "replayState"))],
    forbid_unknown_fields=True, gc=False)
"""A recorded chunk as a reader that keeps no chunk decodes it, when it is the usual kind: the
keys of the sidecar's chunk types, docs/format.md#override-sidecar (and the harness's
``replayState``), its text fields strings (``chunkshape.TEXT_FIELDS``), its values nested and
numbered as a sidecar takes them (``jsonlimits.ShallowJson``). Decoding so, it needs no further
check, and no dict is built; any other chunk is read as a dict and checked the exact way."""


class ShapeData(msgspec.Struct, gc=False):
    """A chunk line's ``data`` as ``ShapeEvent`` reads it."""

    turn: Any = Undefined
    step: Any = Undefined
    chunk: ChunkShape | None = None


class ShapeEvent(msgspec.Struct, gc=False):
    """``CheckedEvent`` for a reader that keeps no chunk: the chunk's shape only, ``time`` any
    double (it is not read). A line it refuses is decoded again by ``LineEvent``."""

    type: Any = None
    seq: float | msgspec.UnsetType = msgspec.UNSET
    time: float | msgspec.UnsetType = msgspec.UNSET
    data: ShapeData | None = None


_SafeInt = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]


class _PackedData(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: _Int64 | float
    step: _Int64 | float
    index: _Int64 | float
    dt: list[_SafeInt]
    texts: list[str] | msgspec.UnsetType = msgspec.UNSET
    id: str | msgspec.UnsetType = msgspec.UNSET
    name: str | msgspec.UnsetType = msgspec.UNSET
    args: list[str] | msgspec.UnsetType = msgspec.UNSET


class PackedRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A packed row as docs/format.md#session-logs allows it (integers given as floats go the slow way).

    A projected row leaves ``seq0`` and/or ``time0`` out: ``seq0`` is never read here (only
    ``parse_session_log`` reports it) and a missing ``time0`` is 0. A present ``null`` or
    string fails to decode, so the row goes the slow way, which names the error.
    """

    type: str
    data: _PackedData
    seq0: Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)] = 0
    time0: _SafeInt | msgspec.UnsetType = msgspec.UNSET


class _Envelope(msgspec.Struct, gc=False):
    """The raw JSON of a line's ``seq`` and ``time``, for the warnings."""

    seq: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    time: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


line_decoder = msgspec.json.Decoder(LineEvent)
checked_decoder = msgspec.json.Decoder(CheckedEvent)
shape_decoder = msgspec.json.Decoder(ShapeEvent)
_packed_decoder = msgspec.json.Decoder(PackedRow)
_envelope_decoder = msgspec.json.Decoder(_Envelope)

PackedFields = tuple[PackedRow, list[str], str | msgspec.UnsetType, str | msgspec.UnsetType]


def packed_fields(raw: bytes, kind: str) -> PackedFields | None:
    """A well-formed, ordinary packed row as (row, payload, id, name); None sends it the slow
    way (which either names its error or expands it member by member)."""
    try:
        row = _packed_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if row.type != kind:  # a repeated "type" key: the last one counts
        return None
    data = row.data
    if kind == "tool-call-chunks":
        payload, ident, name = data.args, data.id, data.name
        if (
            isinstance(payload, msgspec.UnsetType)
            or isinstance(ident, msgspec.UnsetType)
            or not isinstance(data.texts, msgspec.UnsetType)
        ):
            return None
    else:
        payload, ident, name = data.texts, msgspec.UNSET, msgspec.UNSET
        if (
            isinstance(payload, msgspec.UnsetType)
            or not isinstance(data.args, msgspec.UnsetType)
            or not isinstance(data.id, msgspec.UnsetType)
            or not isinstance(data.name, msgspec.UnsetType)
        ):
            return None
    count = len(payload)
    if not count or len(data.dt) != count - 1:
        return None
    return row, payload, ident, name


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collecting while millions of kept objects are allocated is most of the cost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- feeding a deriver, honouring a child's seedLength ---------------------------------------


class Feed(Protocol):
    """What the line readers feed (``feeds.CallFeed``): a deriver that keeps the chunks, or a
    checker that counts the calls."""

    file: str | None
    untimed: int
    keeps: bool

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None: ...
    def run(self, key: str, chunks: Any, times: Any, line: int) -> None: ...
    def call(self, key: str, chunks: Any, times: Any, line: int, finished: bool) -> None: ...
    def compaction(self, data: Any, time: Any, line: int, suspect: bool = True) -> None: ...


Item = tuple[int, int, Any, Any, Any, int]
"""(event index, what, ...): 0 = chunk (key, chunk, time), 1 = compaction (data, time,
whether its line may hold what a sidecar refuses),
2 = packed run (key, chunks, times); then the line."""


class Sink:
    """Feeds the deriver the events at or after the seed index (docs/format.md#deriving-scripts, children)."""

    __slots__ = ("deriver", "start", "pending")

    def __init__(self, deriver: Feed) -> None:
        self.deriver = deriver
        self.start = 0
        self.pending: list[Item] | None = None
        """Events kept until the end when a negative seed counts from the end."""

    def put(self, item: Item) -> None:
        """Apply the item now, keep it for later, or drop it (before the seed index)."""
        if self.pending is not None:
            self.pending.append(item)
        elif item[0] + (len(item[3]) if item[1] == 2 else 1) > self.start:
            _apply(self.deriver, item, self.start)

    def flush(self, count: int) -> None:
        """Apply what a negative seed held back (the last ``-seed`` events)."""
        if self.pending is not None:
            first = max(0, count + self.start)
            for item in self.pending:
                if item[0] + (len(item[3]) if item[1] == 2 else 1) > first:
                    _apply(self.deriver, item, first)


def seed_start(seed: float) -> int:
    """The index a child's events start at (a list slice's start; non-finite is 0)."""
    return int(seed) if math.isfinite(seed) else 0


def _apply(deriver: Feed, item: Item, first: int) -> None:
    """Feed one item, skipping the members of a packed run before index ``first``."""
    index, what, a, b, c, line = item
    if what == 0:
        deriver.chunk(a, b, c, line)
    elif what == 1:
        deriver.compaction(a, b, line, c)
    else:
        skip = first - index
        if skip > 0:
            b, c = b[skip:], c[skip:]
        deriver.run(a, b, c, line)


def slow_line(
    raw: bytes,
    number: int,
    index: int,
    sink: Sink,
    file: str | None,
    warnings: list[str] | None = None,
) -> int:
    """One line by the exact generic rules; returns the next event index.

    With ``warnings``, what a newer harness would refuse on the line is added to it.
    """
    blank, value = decode_line(raw, file, number)
    if blank:
        return index
    if value is None:
        raise null_event_error(file, number)
    if not isinstance(value, dict):
        if warnings is not None:
            warnings.append(non_object_warning(file, number, value))
        return index + 1
    if warnings is not None:
        for name in ("seq", "time"):
            if name in value and not is_number(value[name]):
                warnings.append(envelope_warning(file, number, name, json_kind(value[name])))
    check_envelope(value.get("seq"), value.get("time"), file, number)
    kind = value.get("type")
    if isinstance(kind, str) and kind in PACKED_CHUNK_TYPES:
        if len(raw) > KEPT_GATE and kept_may_fail(raw):
            check_kept(value, file, number, "$")
        for turn, step, t, chunk in expand_packed_row(value, file, number, index):
            sink.put((index, 0, call_key(turn, step), chunk, t, number))
            index += 1
        if "time0" not in value:
            sink.deriver.untimed += 1
        return index
    if kind == "assistant/chunk":
        data = value.get("data")
        if not isinstance(data, dict):
            data = {}
        key = call_key(data.get("turn", Undefined), data.get("step", Undefined))
        held = data.get("chunk")
        if held is not None and len(raw) > KEPT_GATE and kept_may_fail(raw):
            check_kept(held, file, number, "$.data.chunk")
        sink.put((index, 0, key, held, value.get("time", NO_TIME), number))
    elif kind == "compaction/summary":
        suspect = len(raw) > KEPT_GATE and kept_may_fail(raw)
        sink.put((index, 1, value.get("data"), value.get("time"), suspect, number))
    return index + 1


# --- warnings: what the scenario format (docs/format.md) accepts but a newer harness refuses --


_RAW_KINDS = {ord('"'): "a string", ord("["): "a list", ord("{"): "an object",
              ord("t"): "a boolean", ord("f"): "a boolean", ord("n"): "null"}
"""``jsonnumbers.json_kind`` of a raw JSON value that is not a number, by its first byte."""


def non_object_warning(file: str | None, line: int, value: Any) -> str:
    """A line that is a JSON value but not an object (docs/format.md#edge-cases: ignored like an unknown
    event)."""
    return (
        f"{file or '<log>'}:{line}: the line is {json_kind(value)}, not a JSON object; it is "
        "ignored like an unknown event, but newer harness versions refuse such a log. Remove "
        "the line."
    )


def envelope_warning(file: str | None, line: int, name: str, kind: str) -> str:
    """An event whose present ``seq`` or ``time`` is not a number (kept as given,
    docs/format.md#session-logs)."""
    return (
        f"{file or '<log>'}:{line}: the event's {name} is {kind}, not a number; it is kept as "
        f"given, but newer harness versions refuse such a log. Make {name} a number or remove it."
    )


def raw_envelope_warnings(raw: bytes, file: str | None, line: int, warnings: list[str]) -> None:
    """The envelope warnings of a line that ``LineEvent`` decodes (so ``_Envelope`` does too)."""
    envelope = _envelope_decoder.decode(raw)
    for name, value in (("seq", envelope.seq), ("time", envelope.time)):
        if isinstance(value, msgspec.Raw):
            kind = _RAW_KINDS.get(bytes(value)[0])
            if kind is not None:
                warnings.append(envelope_warning(file, line, name, kind))
