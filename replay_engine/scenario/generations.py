"""Reading a log of format generation 2 or later (docs/format.md#generations), whatever is fed.

Every model call of such a log is one settlement event (``assistant/message`` or
``assistant/attempt``) whose ``data.stream`` holds the call's chunks as compact records
(``streams``); a forked child's inherited history ends at its last ``session/end-seed
{inherited: true}`` marker. ``read_generation`` checks every line and feeds each call whole
to a ``feeds.CallFeed``: the loader's ``Deriver`` (keeping the chunks, strict or lenient) or
the validator's ``Checker`` (counting them), so loading, ``validate`` and authoring read one
way (``reader.read_log`` is where they start).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import LogParseError
from ..logevents import SAID_TYPES
from .callkeys import Undefined, call_key
from .feeds import CallFeed
from .kept import KEPT_GATE, check_envelope, kept_may_fail
from .layout import check_generation, log_error
from .logs import (
    decode_line,
    header_fields,
    too_deep_line_error,
)
from .streams import CheckedRecord, Record, expand_stream, fast_stream

MESSAGE, ATTEMPT = "assistant/message", "assistant/attempt"
SETTLEMENTS = frozenset({MESSAGE, ATTEMPT})
END_SEED = "session/end-seed"
COMPACTION = "compaction/summary"


@dataclass(slots=True)
class GenerationLog:
    """What a v2+ log's reading found besides its calls."""

    header: dict[str, Any]
    """The header line as decoded (an object)."""
    fields: dict[str, Any]
    """Its facts (``logs.header_fields``), ``seedLength`` the inherited count."""
    inherited: int
    """The inherited-event count (docs/format.md#inherited-cut): reported as the log's ``seedLength``."""
    event_count: int
    warnings: list[str] = field(default_factory=list)


_Envelope = float | str | bool | None | list[Any] | dict[str, Any] | msgspec.UnsetType
"""``seq`` / ``time`` as the fast path takes them: any JSON value (they are not otherwise
checked, docs/format.md#v2-logs); a number as a double, so one no double holds goes the way that names
it."""


class _Data(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    stream: list[Record] | msgspec.UnsetType = msgspec.UNSET
    inherited: Any = None


class _Event(msgspec.Struct, gc=False):
    """What the loader needs of an event line; other payloads are skipped, never built."""

    type: Any = None
    seq: _Envelope = msgspec.UNSET
    time: _Envelope = msgspec.UNSET
    data: _Data | None = None


class _CheckedData(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    stream: list[CheckedRecord] | msgspec.UnsetType = msgspec.UNSET
    inherited: Any = None


class _CheckedEvent(msgspec.Struct, gc=False):
    """``_Event`` for a feed that keeps no chunk (chunks read as their shape)."""

    type: Any = None
    seq: _Envelope = msgspec.UNSET
    time: _Envelope = msgspec.UNSET
    data: _CheckedData | None = None


class _LooseData(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    stream: Any = msgspec.UNSET
    inherited: Any = None


class _LooseEvent(msgspec.Struct, gc=False):
    """An event line the fast decoder refused, as read by the exact rules."""

    type: Any = None
    seq: Any = msgspec.UNSET
    time: Any = msgspec.UNSET
    data: _LooseData | None = None


_NOTHING = object()
"""No settlement read yet (a ``turn`` / ``step`` object no line holds)."""


@functools.cache
def _decoder(keeps: bool) -> msgspec.json.Decoder[Any]:
    """The event decoder of a feed that keeps chunks, or not (built on first use: a v0/v1
    log never needs one)."""
    return msgspec.json.Decoder(_Event if keeps else _CheckedEvent)


def read_generation(lines: Iterable[bytes], file: str | None, feed: CallFeed, *,
                    child: bool, generation: int) -> GenerationLog:
    """Read a v2+ log, feeding its calls (a child's from its inherited cut on) to ``feed``;
    its header's ``version`` must be the file name's ``generation``."""
    header: dict[str, Any] | None = None
    fields: dict[str, Any] = {}
    header_line = index = number = first_of_kind = 0
    projected: bool | None = None
    markers: list[tuple[int, int]] = []  # (event index, line) of inherited end-seed markers
    pending: list[tuple[int, Any]] = []  # a child's calls until its cut is known
    keeps = feed.keeps
    said = feed.said if feed.wants_said else None
    decode = _decoder(keeps).decode
    unset = msgspec.UNSET
    keys = _Keys()
    event: _Event | _CheckedEvent | _LooseEvent | None
    try:
        for raw in lines:
            number += 1
            if header is None:
                if (read := _header(raw, file, number, generation)) is not None:
                    (header, fields), header_line = read, number
                continue
            try:
                event = decode(raw)
            except (msgspec.DecodeError, RecursionError):
                if (event := _loose_event(raw, file, number)) is None:
                    continue
            untimed = event.seq is unset
            if untimed is not (event.time is unset) or projected is not untimed:
                if projected is None and untimed is (event.time is unset):
                    projected, first_of_kind = untimed, number
                else:
                    raise _envelope_error(event, projected, first_of_kind, file, number)
            kind = event.type
            item: Any = None
            if kind == MESSAGE or kind == ATTEMPT:
                item = _settlement_call(event, raw, file, number, keeps, keys)
            elif kind == COMPACTION:
                item = (_full_data(raw, file, number), 0 if projected else event.time, number,
                        len(raw) > KEPT_GATE and kept_may_fail(raw))
            elif kind == END_SEED and event.data is not None and event.data.inherited is True:
                markers.append((index, number))
            if item is not None:
                if child:
                    pending.append((index, item))
                else:
                    _feed_item(feed, item)
            if said is not None and type(kind) is str and kind in SAID_TYPES:
                said(kind, number, raw)
            index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    inherited = _inherited_cut(header, header_line, markers, file, number)
    for at, item in pending:
        if at >= inherited:
            _feed_item(feed, item)
    assert header is not None
    fields["seedLength"] = inherited
    return GenerationLog(header, fields, inherited, index)


def _header(raw: bytes, file: str | None, line: int,
            generation: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The header line, checked, and its facts (None: a blank line before it)."""
    blank, value = decode_line(raw, file, line)
    if blank:
        return None
    if not isinstance(value, dict):
        raise log_error(file, line, "the header is not a JSON object",
                        'the first line must be the session header {"type":'
                        '"session","version":K,"id":…,"createdAt":…}')
    fields = header_fields(value, file, line)
    check_generation(value, file, generation, line)
    return value, fields


def _envelope_error(event: _Event | _CheckedEvent | _LooseEvent, projected: bool | None,
                    first_of_kind: int, file: str | None, line: int) -> LogParseError:
    """An event with ``seq`` but no ``time`` (or the reverse), or a projected event in a
    complete log (or the reverse)."""
    has_seq = event.seq is not msgspec.UNSET
    if has_seq is (event.time is msgspec.UNSET):
        return log_error(file, line, f"the event has {'seq' if has_seq else 'time'} "
                         f"but no {'time' if has_seq else 'seq'}", "an event carries "
                         "both seq and time, or (in a projected log) neither")
    kinds = ("projected", "complete") if projected else ("complete", "projected")
    return log_error(file, line, f"a {kinds[1]} event in a {kinds[0]} log (its "
                     f"first event, line {first_of_kind}, is {kinds[0]})",
                     "write every event with seq and time, or every event without")


class _Keys:
    """Call keys of settlements, the last one kept (turn and step are the same small ints)."""

    __slots__ = ("turn", "step", "key")

    def __init__(self) -> None:
        self.turn: Any = _NOTHING
        self.step: Any = _NOTHING
        self.key = ""

    def of(self, turn: Any, step: Any) -> str:
        if turn is not self.turn or step is not self.step:
            self.turn, self.step, self.key = turn, step, call_key(turn, step)
        return self.key


def _settlement_call(event: _Event | _CheckedEvent | _LooseEvent, raw: bytes, file: str | None,
                     line: int, keeps: bool, keys: _Keys) -> Call | None:
    """A settlement's call by its typed records, or by the exact rules when in doubt (None:
    an empty stream)."""
    data = event.data
    found = None
    key = keys.key
    if data is not None:
        key = keys.of(data.turn, data.step)
        if type(data) is not _LooseData and type(data.stream) is list:
            found = fast_stream(data.stream, keeps)
    if found is None:  # any doubt: the exact rules, which name the problem
        return _settlement(event, raw, file, line, keeps, key)
    return (key, found[0], found[1], line, found[3]) if found[2] else None


def _feed_item(feed: CallFeed, item: tuple[Any, ...]) -> None:
    """Feed one call (five fields) or compaction (four) read from the log."""
    if len(item) == 5:
        feed.call(*item)
    else:
        feed.compaction(*item)


def _inherited_cut(header: dict[str, Any] | None, header_line: int,
                   markers: list[tuple[int, int]], file: str | None, last_line: int) -> int:
    """The inherited-event count: the index of the last inherited end-seed marker (0 without
    one); the header's ``isSeeded`` must agree."""
    if header is None:
        raise log_error(file, max(last_line, 1), "the log is empty", "a v2+ session log starts "
                        "with its session header line")
    seeded = header.get("isSeeded") is True
    if seeded and not markers:
        raise log_error(file, header_line, "the header says isSeeded but the log has no "
                        "session/end-seed {inherited: true} marker", "restore the marker that "
                        "ends the inherited history, or set isSeeded to false")
    if markers and not seeded:
        raise log_error(file, markers[0][1], "a session/end-seed {inherited: true} marker in a "
                        "log whose header is not seeded", "set isSeeded to true in the header, "
                        "or remove the marker")
    return markers[-1][0] if markers else 0


_loose_decoder = msgspec.json.Decoder(_LooseEvent)


def _loose_event(raw: bytes, file: str | None, line: int) -> _LooseEvent | None:
    """An event line the fast decoder refused, by the exact rules (None: a blank line)."""
    blank, value = decode_line(raw, file, line)
    if blank:
        return None
    if not isinstance(value, dict):
        raise log_error(file, line, "the line is not a JSON object",
                        "every line of a v2+ session log is one event object; fix or remove "
                        "the line")
    check_envelope(value.get("seq"), value.get("time"), file, line)
    data = value.get("data")
    fields = _LooseData()
    if isinstance(data, dict):
        fields = _LooseData(data.get("turn", Undefined), data.get("step", Undefined),
                            data.get("stream", msgspec.UNSET), data.get("inherited"))
    return _LooseEvent(value.get("type"), value.get("seq", msgspec.UNSET),
                       value.get("time", msgspec.UNSET),
                       fields if isinstance(data, dict) else None)


def _full_data(raw: bytes, file: str | None, line: int) -> Any:
    """The whole ``data`` of an event (compaction reads its raw output)."""
    _, value = decode_line(raw, file, line)
    return value.get("data") if isinstance(value, dict) else None


Call = tuple[str, Any, Any, int, bool]


def _settlement(event: _Event | _CheckedEvent | _LooseEvent, raw: bytes, file: str | None,
                line: int, keeps: bool, key: str) -> Call | None:
    """A settlement's call (key, chunks, times, line, finished) by the exact rules, or None for
    an empty stream (the typed records were refused, or are in doubt)."""
    data = event.data
    if data is None:
        raise log_error(file, line, f"the {event.type} settlement has no data object",
                        "restore its data (turn, step, stream)")
    if type(data) is not _LooseData:
        loose = _loose_event(raw, file, line)
        assert loose is not None and loose.data is not None
        data = loose.data
    if data.stream is msgspec.UNSET or not isinstance(data.stream, list):
        raise log_error(file, line, f"the {event.type} settlement's data.stream is not a list",
                        "restore the call's stream records (docs/format.md#settlement-streams)")
    chunks, times = expand_stream(data.stream, file, line, key, raw,
                                  len(raw) > KEPT_GATE and kept_may_fail(raw))
    if not chunks:
        return None
    return key, chunks, times, line, chunks[-1].get("type") == "finish"
