"""Loading a session log: stream the file through the one reading loop, keep its script.

``reader.read_log`` reads every generation (packed rows a whole row at a time, settlement
streams record by record, anything unusual by the exact generic rules); the ``Deriver`` fed
keeps each call's chunks. ``lenient`` keeps a call that never finished (authoring).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import BinaryIO

from ..models import LogContext, ScriptEntry, SessionHeader
from .derive import Deriver
from .layout import generation_of
from .logs import READ_BUFFER, ensure_log_file, unreadable_log_error
from .logscan import gc_paused
from .reader import read_log

__all__ = ["PROGRESS_BLOCK", "LoadedLog", "Progress", "derive_any", "derive_log_bytes", "load_log"]

PROGRESS_BLOCK = 4_000_000
"""Bytes read between two progress reports (the first report comes after a quarter of it)."""
Progress = Callable[[int, int, list[ScriptEntry]], None]
"""Told (bytes read, file size, the calls derived so far: a list the reader keeps appending
to, so the receiver copies what it keeps) between blocks of a log being loaded."""


@dataclass(slots=True)
class LoadedLog:
    """A parsed and derived session log."""

    header: SessionHeader
    entries: list[ScriptEntry]
    event_count: int
    untimed: int = 0
    """Chunk events and packed rows that left their time out (see ``CallFeed.untimed``)."""
    unfinished: list[int] = field(default_factory=list)
    """Indices of the calls kept without a finish chunk (lenient reading only)."""
    said: LogContext | None = None
    """The log's user messages and tool results, read with the calls (``context``)."""


def load_log(path: str | Path, *, seed_length: bool = False, name: str | None = None,
             lenient: bool = False, progress: Progress | None = None) -> LoadedLog:
    """Stream a log file from disk, derive its script; a child (``seed_length``) from its
    inherited history on. The file name's generation (``.vK``) says how it is read.
    ``progress`` is told how far the read got, block by block (see ``Progress``)."""
    file = name or str(path)
    ensure_log_file(path, file)
    try:
        with open(path, "rb", buffering=READ_BUFFER) as handle, gc_paused():
            if progress is None:  # the hot path: the file's own line iterator
                return derive_any(handle, file, seed_length, generation_of(file),
                                  lenient=lenient)
            deriver = Deriver(file, lenient=lenient)
            lines = chain.from_iterable(_blocks(handle, progress, deriver.entries))
            return derive_any(lines, file, seed_length, generation_of(file), deriver=deriver)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def derive_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False,
                     generation: int | None = None, lenient: bool = False) -> LoadedLog:
    """Derive a log held in memory (same rules as ``load_log``)."""
    if generation is None:
        generation = generation_of(file or "")
    with gc_paused():
        return derive_any(io.BytesIO(data), file, seed_length, generation, lenient=lenient)


def _blocks(handle: BinaryIO, progress: Progress,
            entries: list[ScriptEntry]) -> Iterator[io.BytesIO]:
    """The file as blocks of whole lines (each split by ``BytesIO`` exactly as the file's own
    iterator splits), ``progress`` told before each block after the first and at the end (a
    log read in one block is not reported: it is loaded as soon)."""
    total = os.fstat(handle.fileno()).st_size
    done = 0
    size = PROGRESS_BLOCK // 4
    first = 0
    while block := handle.read(size) + handle.readline():
        if done:
            progress(done, total, entries)
        done += len(block)
        first = first or done
        size = PROGRESS_BLOCK
        yield io.BytesIO(block)
    if done > first:
        progress(done, max(total, done), entries)


def derive_any(lines: Iterable[bytes], file: str | None, use_seed: bool, generation: int, *,
               lenient: bool = False, deriver: Deriver | None = None) -> LoadedLog:
    """Derive a log of any generation: v2+ by settlements (docs/format.md#generations), v0/v1 by chunk events
    (into ``deriver`` when given, else a new one)."""
    if deriver is None:
        deriver = Deriver(file, lenient=lenient)
    found = read_log(lines, file, deriver, child=use_seed, generation=generation)
    entries = deriver.finish()
    header = SessionHeader(**found.fields) if found.fields else SessionHeader()
    return LoadedLog(header, entries, found.event_count, deriver.untimed, deriver.unfinished,
                     deriver.context)
