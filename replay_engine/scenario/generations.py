"""Reading a log of format generation 2 or later (docs/format.md#generations), whatever is fed.

Every model call of such a log is one settlement event (``assistant/message`` or
``assistant/attempt``) whose ``data.stream`` holds the call's chunks as compact records
(``streams``); a forked child's inherited history ends at its last ``session/end-seed
{inherited: true}`` marker. ``Settled`` is such a log's part of the one reading loop
(``reader.read_log``): it checks each line the loop hands it and feeds each call whole to the
loop's ``feeds.CallFeed``, the loader's ``Deriver`` (keeping the chunks, strict or lenient)
or the validator's ``Checker`` (counting them), so loading, ``validate`` and authoring read
one way.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from ..errors import LogParseError
from .callkeys import Undefined, call_key
from .feeds import CallFeed
from .kept import KEPT_GATE, check_envelope, kept_may_fail
from .layout import check_generation, log_error
from .logs import decode_line, header_fields
from .streams import CheckedRecord, Record, expand_stream, fast_stream

MESSAGE, ATTEMPT = "assistant/message", "assistant/attempt"
SETTLEMENTS = frozenset({MESSAGE, ATTEMPT})
END_SEED = "session/end-seed"
COMPACTION = "compaction/summary"
SETTLED_TYPES = frozenset({*SETTLEMENTS, END_SEED, COMPACTION})
"""The event types a v2+ log's reading acts on (``Settled.event``); others are skipped."""


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


class Settled:
    """A v2+ log's part of the one reading loop (``reader.read_log``): its header, envelope
    kinds, settlements, compactions and inherited end-seed markers, a child's calls held
    until its cut is known."""

    __slots__ = ("file", "feed", "child", "keeps", "decode", "projected", "first_of_kind",
                 "header_line", "markers", "pending", "keys")
    types = SETTLED_TYPES

    def __init__(self, file: str | None, feed: CallFeed, child: bool) -> None:
        self.file, self.feed, self.child, self.keeps = file, feed, child, feed.keeps
        self.decode = _decoder(feed.keeps).decode
        self.projected: bool | None = None
        """Whether the events leave seq and time out (None: no event read yet)."""
        self.first_of_kind = self.header_line = 0
        self.markers: list[tuple[int, int]] = []  # (event index, line) of inherited markers
        self.pending: list[tuple[int, Any]] = []  # a child's calls until its cut is known
        self.keys = _Keys()

    def header(self, raw: bytes, line: int,
               generation: int) -> tuple[Any, dict[str, Any] | None]:
        """The header line and its facts (None, None: a blank line before it)."""
        read = _header(raw, self.file, line, generation)
        if read is None:
            return None, None
        self.header_line = line
        return read

    def undecoded(self, raw: bytes, line: int) -> _LooseEvent | None:
        """An event line the fast decoder refused, by the exact rules (None: blank)."""
        return _loose_event(raw, self.file, line)

    def envelope(self, event: _Event | _CheckedEvent | _LooseEvent, line: int) -> None:
        """The first event's envelope kind (complete or projected); any other is an error."""
        untimed = event.seq is msgspec.UNSET
        if self.projected is None and untimed is (event.time is msgspec.UNSET):
            self.projected, self.first_of_kind = untimed, line
        else:
            raise _envelope_error(event, self.projected, self.first_of_kind, self.file, line)

    def event(self, kind: str, event: _Event | _CheckedEvent | _LooseEvent, raw: bytes,
              line: int, index: int) -> None:
        """A settlement or compaction (fed, or held for a child), or an end-seed marker."""
        if kind == COMPACTION:
            item: Any = (_full_data(raw, self.file, line), 0 if self.projected else event.time,
                         line, len(raw) > KEPT_GATE and kept_may_fail(raw))
        elif kind == END_SEED:
            if event.data is not None and event.data.inherited is True:
                self.markers.append((index, line))
            return
        else:
            item = _settlement_call(event, raw, self.file, line, self.keeps, self.keys)
        if item is None:
            return
        if self.child:
            self.pending.append((index, item))
        else:
            _feed_item(self.feed, item)

    def finish(self, header: Any, fields: dict[str, Any] | None, last_line: int
               ) -> dict[str, Any]:
        """Feed a child's calls from its inherited cut on; the header's facts, ``seedLength``
        that cut."""
        inherited = _inherited_cut(header, self.header_line, self.markers, self.file,
                                   last_line)
        for at, item in self.pending:
            if at >= inherited:
                _feed_item(self.feed, item)
        assert fields is not None
        fields["seedLength"] = inherited
        return fields


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
