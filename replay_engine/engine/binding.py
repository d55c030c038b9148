"""Binding: a live call claims a script (first call of a new session) or advances its cursor.

Also which entries need their ``{{fromRequest:…}}`` placeholders resolved, so calls to the
many entries without one skip the walk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec

from ..errors import ScriptExhaustedError, UnrecordedSessionError
from ..jsonlimits import encode_json
from ..models import AnyEntry, ChunksEntry, HangEntry, ScriptEntry, SessionScript, ThrowEntry, entry_to_json
from . import events as ev
from .placeholders import MARKER, resolve_scripted_entry
from .state import Binding, Call, CallRecord, Run, session_label

_MARKER_BYTES = MARKER.encode()
_encode = encode_json


def bind_call(
    run: Run,
    scripts: Sequence[SessionScript],
    session_id: str | None,
    messages: Any,
    model: str | None,
    *,
    ids: Iterator[int],
    calls: dict[int, Call],
    emit: Callable[[ev.EngineEvent], None],
    retry: bool = False,
    dialect: str | None = None,
) -> Call:
    """Bind one call of ``session_id`` in ``run``: journal it, register it in ``calls``.

    Raises UnrecordedSessionError / ScriptExhaustedError (and emits BindingFailed) when
    the call has no recorded counterpart. ``retry`` marks a client library's retry;
    ``dialect`` names the wire the call arrived on (kept in the journal).
    """
    binding = run.bindings.get(session_id)
    if binding is None:
        if run.claimed >= len(scripts):
            err = UnrecordedSessionError(
                f"a model call arrived from an unrecorded session (#{len(run.bindings) + 1}); "
                f"the scenario recorded only {len(scripts)} session(s) "
                f"[{session_label(session_id)}, run {run.name}]"
            )
            emit(ev.BindingFailed(run.name, session_id, err.code, err.message, retry, messages))
            raise err
        binding = Binding(session_id, run.claimed)
        run.claimed += 1
        run.bindings[session_id] = binding
        emit(ev.SessionBound(run.name, session_id, binding.script_index))
    script = scripts[binding.script_index] if binding.script_index < len(scripts) else None
    length = len(script.entries) if script is not None else 0
    if script is None or binding.cursor >= length:
        err2 = ScriptExhaustedError(
            f"script exhausted — session requested model call #{binding.cursor + 1} but its "
            f"script has only {length} [{session_label(session_id)}, script "
            f"{binding.script_index}, run {run.name}]"
        )
        emit(ev.BindingFailed(run.name, session_id, err2.code, err2.message, retry, messages,
                             binding.script_index, binding.cursor))
        raise err2
    call_index = binding.cursor
    binding.cursor += 1
    scripted: ScriptEntry = script.entries[call_index]
    call_id = next(ids)
    record = CallRecord(
        call_id, run.name, session_id, binding.script_index, call_index, scripted.entry.kind,
        messages, model, time.time(), retry=retry, dialect=dialect,
    )
    if run.journal.maxlen is not None and len(run.journal) >= run.journal.maxlen:
        run.dropped += 1
        if run.dropped == 1:
            emit(ev.JournalTrimmed(run.name, run.journal.maxlen))
    run.journal.append(record)
    call = Call(
        call_id, run.name, session_id, binding.script_index, call_index, scripted.entry,
        scripted.times, record,
    )
    binding.call = call
    calls[call_id] = call
    emit(
        ev.CallStarted(run.name, session_id, binding.script_index, call_index, call_id,
                       scripted.entry.kind, retry, dialect)
    )
    return call


class PlaceholderScan:
    """Remembers the entries known to hold no placeholder, by identity."""

    __slots__ = ("_plain",)

    def __init__(self) -> None:
        self._plain: dict[int, AnyEntry] = {}

    def needs_resolving(self, entry: AnyEntry) -> bool:
        """Whether ``entry`` may hold a placeholder (never a hang: its readyFile is a path the
        request must not choose, so it is not resolved)."""
        if isinstance(entry, HangEntry):
            return False
        return not (self._plain.get(id(entry)) is entry or self._check(entry))

    def resolve(self, entry: AnyEntry, messages: Any) -> AnyEntry:
        """Resolve placeholders; entries known to hold none skip the (slow) walk."""
        return resolve_scripted_entry(entry, messages) if self.needs_resolving(entry) else entry

    def prepare(self, scripts: Sequence[SessionScript]) -> None:
        """Scan every entry now, so that no first call pays for the scan."""
        for script in scripts:
            for item in script.entries:
                if self._plain.get(id(item.entry)) is not item.entry:
                    self._check(item.entry)

    def clear(self) -> None:
        """Forget every entry (the scripts were replaced)."""
        self._plain.clear()

    def _check(self, entry: AnyEntry) -> bool:
        if isinstance(entry, ChunksEntry | ThrowEntry):
            try:
                plain = _MARKER_BYTES not in _encode(entry_to_json(entry))
            except (TypeError, msgspec.EncodeError):
                plain = False
            if plain:
                self._plain[id(entry)] = entry
                return True
        return False
