"""Reading a session log line by line, without the models: call keys, the line Structs, the
derivation errors, and ``check_log``, which validates a log without keeping its chunks.

``derive`` builds the script on top of this; ``dsh-replay validate`` uses ``check_log``, which
imports no pydantic and keeps no chunk: it raises exactly the error ``load_log`` would (same
message, same line) and counts the calls it would derive.
"""

from __future__ import annotations

import gc
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

import msgspec

from .errors import UNFINISHED_CALL, DerivationError
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    expand_packed_row,
    header_fields,
    null_event_error,
    unreadable_log_error,
)


class _UndefinedType:
    def __repr__(self) -> str:
        return "undefined"


_Undefined: Any = _UndefinedType()
"""A key absent from an event (JavaScript's ``undefined``)."""

_NO_TIME: Any = msgspec.UNSET
"""The ``time`` of an event that leaves it out (a projected log): recorded as 0 and counted."""

_FINISH_STOP = {"kind": "stop"}


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


# --- the derivation errors (one wording, whether the chunks are kept or only checked) -------


def unfinished_call_error(
    file: str | None, key: str, position: int, first_line: int, last_line: int
) -> DerivationError:
    """A call closed without a finish chunk: the stream threw while it was recorded."""
    where = f"{file or '<log>'}:{first_line}-{last_line}"
    return DerivationError(
        f"{where}: model call {key} (call #{position} of the script) ended "
        "without a finish chunk: the stream threw while it was recorded, so the call "
        "cannot be derived. This scenario needs a replay.override.json sidecar holding "
        "a bare list of entries that replaces the derived script, with a throw or hang "
        "entry for that call (a patches sidecar cannot help: derivation fails first). "
        f"Quickest fix: dsh-replay override SCENARIO --at {position} --throw MESSAGE "
        "--code CODE (or --hang) writes it, every other call as recorded.",
        call_key=key,
        file=file,
        line=last_line,
        code=UNFINISHED_CALL,
    )


def child_unfinished_error(exc: DerivationError) -> DerivationError:
    """An unfinished call in a child log: a sidecar cannot help there (it is the primary's)."""
    head = exc.message.split(" This scenario needs", 1)[0]
    return DerivationError(
        f"{head} This is a child (subagent) log and replay.override.json applies only to "
        "the primary session, so re-record the scenario or end that call in the child log "
        'with a finish chunk (e.g. {"type":"finish","reason":{"kind":"error"}}).',
        call_key=exc.call_key,
        file=exc.file,
        line=exc.line,
        code=exc.code,
    )


def missing_chunk_error(file: str | None, key: str, line: int) -> DerivationError:
    """An ``assistant/chunk`` event without ``data.chunk`` (or with a null one)."""
    return DerivationError(
        f"{file or '<log>'}:{line}: assistant/chunk event of call {key} has no "
        "data.chunk; restore the chunk or remove the event.",
        call_key=key,
        file=file,
        line=line,
    )


def compaction_chunks(data: Any, file: str | None, line: int) -> list[dict[str, Any]] | None:
    """The chunks of a ``compaction/summary`` that was a model call (None when it was not)."""
    where = f"{file or '<log>'}:{line}"
    if not isinstance(data, dict):
        raise DerivationError(
            f"{where}: compaction/summary event has no data object; restore it or remove "
            "the event.",
            file=file,
            line=line,
        )
    if data.get("llmStreamCall") is not True:
        return None
    raw = data.get("rawOutput")
    if not isinstance(raw, list):
        raise DerivationError(
            f"{where}: compaction/summary with llmStreamCall true needs data.rawOutput "
            "(a list of content blocks); restore it or set llmStreamCall to false.",
            file=file,
            line=line,
        )
    chunks: list[dict[str, Any]] = []
    for i, block in enumerate(raw):
        if block is None:
            raise DerivationError(
                f"{where}: compaction/summary rawOutput[{i}] is null; every block must be "
                "an object.",
                file=file,
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
    return chunks


# --- the line Structs ----------------------------------------------------------------------
#
# Each line is decoded once into a small Struct holding only what derivation reads (type,
# time, data.turn/step/chunk): the payloads of the events it ignores are skipped, never
# built. Packed rows are checked by a strict Struct. Anything unusual on a line (blank, not an
# object, malformed, an odd packed row, a compaction) goes through ``slow_line``: the exact
# rules of ``parse_session_log`` and ``derive_replay_script``, so results and errors (naming
# the line) are the same. One difference: inside the payloads derivation ignores, only JSON
# syntax is checked, so invalid UTF-8 or a number beyond double range there is not an error
# (JavaScript reads both).

_MAX_SAFE = 2**53 - 1


class _ChunkData(msgspec.Struct, gc=False):
    turn: Any = _Undefined
    step: Any = _Undefined
    chunk: Any = None


class LineEvent(msgspec.Struct, gc=False):
    """What derivation reads of a line; other keys (and other events' payloads) are skipped."""

    type: Any = None
    time: Any = _NO_TIME
    data: _ChunkData | None = None


_Number = int | float | msgspec.UnsetType


class _CheckedEvent(msgspec.Struct, gc=False):
    """``LineEvent`` whose ``seq`` and ``time``, when present, are numbers.

    It decodes a subset of the lines ``LineEvent`` decodes, to the same values: a line it
    refuses is decoded again by ``LineEvent`` (and the envelope warned about), so checking and
    loading take the same path for every line.
    """

    type: Any = None
    seq: _Number = msgspec.UNSET
    time: _Number = _NO_TIME
    data: _ChunkData | None = None


class _Envelope(msgspec.Struct, gc=False):
    """The raw JSON of a line's ``seq`` and ``time``, for the warnings."""

    seq: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    time: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_SafeInt = Annotated[int, msgspec.Meta(ge=-_MAX_SAFE, le=_MAX_SAFE)]


class _PackedData(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    dt: list[_SafeInt]
    texts: list[str] | msgspec.UnsetType = msgspec.UNSET
    id: str | msgspec.UnsetType = msgspec.UNSET
    name: str | msgspec.UnsetType = msgspec.UNSET
    args: list[str] | msgspec.UnsetType = msgspec.UNSET


class PackedRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A packed row as SPEC section 2 allows it (integers given as floats go the slow way).

    A projected row leaves ``seq0`` and/or ``time0`` out: ``seq0`` is never read here (only
    ``parse_session_log`` reports it) and a missing ``time0`` is 0. A present ``null`` or
    string fails to decode, so the row goes the slow way, which names the error.
    """

    type: str
    data: _PackedData
    seq0: Annotated[int, msgspec.Meta(ge=0, le=_MAX_SAFE)] = 0
    time0: _SafeInt | msgspec.UnsetType = msgspec.UNSET


line_decoder = msgspec.json.Decoder(LineEvent)
_checked_decoder = msgspec.json.Decoder(_CheckedEvent)
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_packed_decoder = msgspec.json.Decoder(PackedRow)

PackedFields = tuple[PackedRow, list[str], str | msgspec.UnsetType, str | msgspec.UnsetType]


def packed_fields(raw: bytes, kind: str) -> PackedFields | None:
    """A well-formed, ordinary packed row as (row, payload, id, name); None sends it the slow
    way (which either names its error or expands it member by member)."""
    try:
        row = _packed_decoder.decode(raw)
    except msgspec.DecodeError:
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
    """What the line readers feed: a deriver that keeps the chunks, or one that checks them."""

    file: str | None
    untimed: int

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None: ...
    def run(self, key: str, chunks: Any, times: Any, line: int) -> None: ...
    def compaction(self, data: Any, time: Any, line: int) -> None: ...


Item = tuple[int, int, Any, Any, Any, int]
"""(event index, what, ...): 0 = chunk (key, chunk, time), 1 = compaction (data, time, -),
2 = packed run (key, chunks, times); then the line."""


class Sink:
    """Feeds the deriver the events at or after the seed index (SPEC section 3, children)."""

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
        deriver.compaction(a, b, line)
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
            if name in value and not _is_json_number(value[name]):
                warnings.append(envelope_warning(file, number, name, _json_kind(value[name])))
    kind = value.get("type")
    if isinstance(kind, str) and kind in PACKED_CHUNK_TYPES:
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
        key = call_key(data.get("turn", _Undefined), data.get("step", _Undefined))
        sink.put((index, 0, key, data.get("chunk"), value.get("time", _NO_TIME), number))
    elif kind == "compaction/summary":
        sink.put((index, 1, value.get("data"), value.get("time"), None, number))
    return index + 1


# --- warnings: what the SPEC accepts but a newer harness refuses ----------------------------


def _is_json_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a number"


_RAW_KINDS = {ord('"'): "a string", ord("["): "a list", ord("{"): "an object", ord("t"): "true",
              ord("f"): "false", ord("n"): "null"}


def non_object_warning(file: str | None, line: int, value: Any) -> str:
    """A line that is a JSON value but not an object (SPEC 4a: ignored like an unknown event)."""
    return (
        f"{file or '<log>'}:{line}: the line is {_json_kind(value)}, not a JSON object; it is "
        "ignored like an unknown event, but newer harness versions refuse such a log. Remove "
        "the line."
    )


def envelope_warning(file: str | None, line: int, name: str, kind: str) -> str:
    """An event whose present ``seq`` or ``time`` is not a number (kept as given, SPEC 2)."""
    return (
        f"{file or '<log>'}:{line}: the event's {name} is {kind}, not a number; it is kept as "
        f"given, but newer harness versions refuse such a log. Make {name} a number or remove it."
    )


def _raw_envelope_warnings(raw: bytes, file: str | None, line: int, warnings: list[str]) -> None:
    """The envelope warnings of a line that ``LineEvent`` decodes (so ``_Envelope`` does too)."""
    envelope = _envelope_decoder.decode(raw)
    for name, value in (("seq", envelope.seq), ("time", envelope.time)):
        if isinstance(value, msgspec.Raw):
            kind = _RAW_KINDS.get(bytes(value)[0])
            if kind is not None:
                warnings.append(envelope_warning(file, line, name, kind))


# --- checking without keeping ---------------------------------------------------------------


class Checker:
    """Groups chunk events into calls like ``Deriver`` (strict), keeping only the count."""

    __slots__ = ("file", "count", "untimed", "_key", "_first_line", "_last_line")

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.count = 0
        """Calls derived so far."""
        self.untimed = 0
        self._key: str | None = None
        """The key of the open call (one without its finish chunk yet), else None."""
        self._first_line = 0
        self._last_line = 0

    @property
    def state(self) -> tuple[str | None, int, int, int]:
        """(open call's key, its first and last line, calls so far), for a caller that keeps
        them in locals while it checks the common lines itself."""
        return self._key, self._first_line, self._last_line, self.count

    @state.setter
    def state(self, value: tuple[str | None, int, int, int]) -> None:
        self._key, self._first_line, self._last_line, self.count = value

    def _close(self) -> None:
        if self._key is not None:  # every open call lacks its finish chunk
            raise unfinished_call_error(
                self.file, self._key, self.count, self._first_line, self._last_line
            )

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None:
        """One ``assistant/chunk``: open or continue the call under ``key``."""
        if chunk is None:
            raise missing_chunk_error(self.file, key, line)
        if self._key != key:
            self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        if isinstance(chunk, dict) and chunk.get("type") == "finish":
            self.count += 1
            self._key = None

    def run(self, key: str, chunks: Any, times: Any, line: int) -> None:
        """The members of one packed row (never a finish)."""
        if self._key != key:
            self._close()
            self._key = key
            self._first_line = line
        self._last_line = line

    def compaction(self, data: Any, time: Any, line: int) -> None:
        """A ``compaction/summary`` event; a model call when ``llmStreamCall`` is true."""
        self._close()
        if compaction_chunks(data, self.file, line) is not None:
            self.count += 1

    def finish(self) -> int:
        """Close the last call; the number of calls."""
        self._close()
        return self.count


@dataclass(slots=True)
class CheckedLog:
    """What checking a log found: it derives ``calls`` calls; ``warnings`` are not errors."""

    calls: int
    event_count: int
    seed_length: float = 0
    warnings: list[str] = field(default_factory=list)


def check_log(
    path: str | Path,
    *,
    seed_length: bool = False,
    name: str | None = None,
    warnings: list[str] | None = None,
) -> CheckedLog:
    """Check a log file as ``load_log`` loads it (the same error, or the same call count),
    keeping no chunk, and list what a newer harness would refuse as warnings.

    The warnings go to ``warnings`` when given, so those found before an error are kept.
    """
    file = name or str(path)
    try:
        with open(path, "rb") as handle, gc_paused():
            return _check_lines(handle, file, seed_length, [] if warnings is None else warnings)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def check_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False) -> CheckedLog:
    """Check a log held in memory (same rules as ``check_log``)."""
    with gc_paused():
        return _check_lines(io.BytesIO(data), file, seed_length, [])


def _check_lines(
    lines: Iterable[bytes], file: str | None, use_seed: bool, warnings: list[str]
) -> CheckedLog:
    """``derive._derive_lines`` without the chunks: the same decoders in the same order.

    The checker's state lives in locals while the chunk lines stream past (the common case,
    inlined); it is handed to the checker around every call that feeds it.
    """
    header: dict[str, Any] | None = None
    checker = Checker(file)
    sink = Sink(checker)
    put = sink.put
    open_key, first, last, count = checker.state
    start = 0
    direct = True  # no seed to honour (or it is passed): feed the checker, not the sink
    index = 0
    number = 0
    decode = _checked_decoder.decode
    keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
    event: _CheckedEvent | LineEvent
    for raw in lines:
        number += 1
        if header is None:
            blank, value = decode_line(raw, file, number)
            if blank:
                continue
            header = header_fields(value, file, number)
            if value is not None and not isinstance(value, dict):
                warnings.append(non_object_warning(file, number, value))
            if use_seed:
                start = sink.start = seed_start(float(header.get("seedLength", 0)))
                if start < 0:
                    sink.pending = []
                direct = start == 0
            continue
        try:
            event = decode(raw)
        except msgspec.DecodeError:
            try:
                event = line_decoder.decode(raw)
            except msgspec.DecodeError:
                checker.state = (open_key, first, last, count)
                index = slow_line(raw, number, index, sink, file, warnings)
                open_key, first, last, count = checker.state
                direct = sink.pending is None and index >= start
                continue
            _raw_envelope_warnings(raw, file, number, warnings)
        kind = event.type
        if kind == "assistant/chunk":
            data = event.data
            if data is None:
                turn = step = _Undefined
                chunk = None
            else:
                turn, step, chunk = data.turn, data.step, data.chunk
            if type(turn) is int and type(step) is int:
                key = keys.get((turn, step))
                if key is None:
                    key = keys[turn, step] = f"{turn}/{step}"
            else:
                key = call_key(turn, step)
            if direct:  # Checker.chunk, inlined
                if chunk is None:
                    raise missing_chunk_error(file, key, number)
                if key != open_key:
                    if open_key is not None:
                        raise unfinished_call_error(file, open_key, count, first, last)
                    open_key = key
                    first = number
                last = number
                if type(chunk) is dict and chunk.get("type") == "finish":
                    count += 1
                    open_key = None
            else:
                checker.state = (open_key, first, last, count)
                put((index, 0, key, chunk, None, number))
                open_key, first, last, count = checker.state
                direct = sink.pending is None and index + 1 >= start
            index += 1
        elif type(kind) is str and kind in PACKED_CHUNK_TYPES:
            checker.state = (open_key, first, last, count)
            fields = packed_fields(raw, kind)
            if fields is None:
                index = slow_line(raw, number, index, sink, file)
            else:
                row, payload = fields[0], fields[1]
                turn, step = row.data.turn, row.data.step
                key = f"{turn}/{step}" if type(turn) is int and type(step) is int else call_key(turn, step)
                members: Sequence[int] = range(len(payload))
                if direct:
                    checker.run(key, members, members, number)
                else:
                    put((index, 2, key, members, members, number))
                index += len(payload)
            open_key, first, last, count = checker.state
            direct = sink.pending is None and index >= start
        elif kind == "compaction/summary":
            checker.state = (open_key, first, last, count)
            index = slow_line(raw, number, index, sink, file)
            open_key, first, last, count = checker.state
            direct = sink.pending is None and index >= start
        else:
            index += 1
    checker.state = (open_key, first, last, count)
    sink.flush(index)
    calls = checker.finish()
    seed = float(header.get("seedLength", 0)) if header else 0.0
    return CheckedLog(calls, index, seed, warnings)
