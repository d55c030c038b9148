"""``check_log``: validate a session log as the loader reads it, without keeping its chunks.

``dsh-replay validate`` uses it: it imports no pydantic and keeps no chunk, raises exactly the
error ``load_log`` would (same message, same line) and counts the calls it would derive.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ..chunkshape import TEXT_FIELDS
from .callkeys import (
    Undefined,
    bad_chunk_error,
    call_key,
    chunk_shape_problem,
    compaction_chunks,
    missing_chunk_error,
    unfinished_call_error,
)
from .generations import check_generation, read_generation
from .layout import generation_of
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    ensure_log_file,
    header_fields,
    too_deep_line_error,
    unreadable_log_error,
)
from .logscan import (
    CheckedEvent,
    LineEvent,
    Sink,
    checked_decoder,
    gc_paused,
    line_decoder,
    non_object_warning,
    packed_fields,
    raw_envelope_warnings,
    seed_start,
    slow_line,
)

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
        problem = chunk_shape_problem(chunk)
        if problem is not None:
            raise bad_chunk_error(self.file, key, line, problem)
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

    def call(self, key: str, chunks: list[dict[str, Any]], times: Any, first_line: int,
             last_line: int) -> None:
        """One whole call (a v2+ settlement): checked as ``Deriver.call`` keeps it."""
        self._close()
        for chunk in chunks:
            problem = chunk_shape_problem(chunk)
            if problem is not None:
                raise bad_chunk_error(self.file, key, first_line, problem)
        if chunks[-1].get("type") != "finish":
            raise unfinished_call_error(self.file, key, self.count, first_line, last_line)
        self.count += 1

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
    ensure_log_file(path, file)
    try:
        with open(path, "rb") as handle, gc_paused():
            return check_any(handle, file, seed_length, generation_of(file),
                             [] if warnings is None else warnings)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def check_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False,
                    generation: int | None = None,
                    warnings: list[str] | None = None) -> CheckedLog:
    """Check a log held in memory (same rules as ``check_log``)."""
    if generation is None:
        generation = generation_of(file or "")
    with gc_paused():
        return check_any(io.BytesIO(data), file, seed_length, generation,
                         [] if warnings is None else warnings)


def check_any(lines: Iterable[bytes], file: str | None, use_seed: bool, generation: int,
              warnings: list[str]) -> CheckedLog:
    """Check a log of any generation as ``derive_any`` reads it."""
    if generation < 2:
        return _check_lines(lines, file, use_seed, warnings, generation)
    checker = Checker(file)
    found = read_generation(lines, file, checker, child=use_seed, generation=generation)
    return CheckedLog(checker.finish(), found.event_count, found.inherited, warnings)


def _check_lines(
    lines: Iterable[bytes], file: str | None, use_seed: bool, warnings: list[str],
    generation: int = 0,
) -> CheckedLog:
    """``derive_fast.derive_lines`` without the chunks: the same decoders in the same order.

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
    decode = checked_decoder.decode
    text_field = TEXT_FIELDS.get
    keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
    event: CheckedEvent | LineEvent
    try:  # free until raised: a value nested past what call keys can read
        for raw in lines:
            number += 1
            if header is None:
                blank, value = decode_line(raw, file, number)
                if blank:
                    continue
                header = header_fields(value, file, number)
                check_generation(value, file, generation, number)
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
            except (msgspec.DecodeError, RecursionError):
                try:
                    event = line_decoder.decode(raw)
                except (msgspec.DecodeError, RecursionError):
                    checker.state = (open_key, first, last, count)
                    index = slow_line(raw, number, index, sink, file, warnings)
                    open_key, first, last, count = checker.state
                    direct = sink.pending is None and index >= start
                    continue
                raw_envelope_warnings(raw, file, number, warnings)
                loose = event.data
                if event.type == "assistant/chunk" and loose is not None and loose.chunk is not None:
                    problem = chunk_shape_problem(loose.chunk)
                    if problem is not None:
                        where = call_key(loose.turn, loose.step)
                        raise bad_chunk_error(file, where, number, problem) from None
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
                if direct:  # Checker.chunk, inlined
                    if chunk is None:
                        raise missing_chunk_error(file, key, number)
                    if key != open_key:
                        if open_key is not None:
                            raise unfinished_call_error(file, open_key, count, first, last)
                        open_key = key
                        first = number
                    last = number
                    ctype = chunk.get("type")  # chunk: an object (the decoder saw to it)
                    if ctype == "finish":
                        count += 1
                        open_key = None
                    elif type(ctype) is str:
                        field = text_field(ctype)
                        if field is not None and type(chunk.get(field, "")) is not str:
                            problem = str(chunk_shape_problem(chunk))
                            raise bad_chunk_error(file, key, number, problem)
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
                    plain = type(turn) is int and type(step) is int
                    key = f"{turn}/{step}" if plain else call_key(turn, step)
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
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    checker.state = (open_key, first, last, count)
    sink.flush(index)
    calls = checker.finish()
    seed = float(header.get("seedLength", 0)) if header else 0.0
    return CheckedLog(calls, index, seed, warnings)
