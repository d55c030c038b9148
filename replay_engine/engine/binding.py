"""Binding: a live call claims a script (first call of a new session) or advances its cursor.

Also which entries need their ``{{fromRequest:…}}`` placeholders resolved, so calls to the
many entries without one skip the walk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ..errors import ScriptExhaustedError, UnrecordedSessionError
from ..jsonlimits import encode_json
from ..models import AnyEntry, ChunksEntry, HangEntry, ScriptEntry, SessionScript, ThrowEntry, entry_to_json
from . import events as ev
from .claims import claim_script, note_announcements
from .placeholders import MARKER, resolve_scripted_entry
from .state import Binding, Call, CallRecord, Run, session_label
from .tokens import TOKEN_MARKER, resolve_session_tokens

_MARKER_BYTES = MARKER.encode()
_TOKEN_BYTES = TOKEN_MARKER.encode()
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
        claim = claim_script(run, len(scripts), session_id)
        if claim is None:
            err = UnrecordedSessionError(
                f"a model call arrived from an unrecorded session (#{len(run.bindings) + 1}); "
                f"the scenario recorded only {len(scripts)} session(s) "
                f"[{session_label(session_id)}, run {run.name}]"
            )
            emit(ev.BindingFailed(run.name, session_id, err.code, err.message, retry, messages))
            raise err
        binding = Binding(session_id, claim[0], rule=claim[1])
        run.bindings[session_id] = binding
        if session_id is not None:
            run.live_ids[claim[0]] = session_id
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
    if len(scripts) > 1:
        note_announcements(run, len(scripts), messages)
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

    __slots__ = ("_plain", "_tokens")

    def __init__(self) -> None:
        self._plain: dict[int, AnyEntry] = {}
        self._tokens: dict[int, AnyEntry] = {}
        """Entries holding a ``{{session:N}}`` token, by identity."""

    def needs_resolving(self, entry: AnyEntry) -> bool:
        """Whether ``entry`` may hold a placeholder (never a hang: its readyFile is a path the
        request must not choose, so it is not resolved)."""
        if isinstance(entry, HangEntry):
            return False
        return not (self._plain.get(id(entry)) is entry or self._check(entry))

    def resolve(self, entry: AnyEntry, messages: Any, live_ids: Mapping[int, str]) -> AnyEntry:
        """Resolve session tokens and placeholders; entries known to hold none skip the walk."""
        if not self.needs_resolving(entry):
            return entry
        return resolve_scripted_entry(self.tokens(entry, live_ids), messages)

    def tokens(self, entry: AnyEntry, live_ids: Mapping[int, str]) -> AnyEntry:
        """``entry`` with its ``{{session:N}}`` tokens resolved (the fast part: no patterns)."""
        if id(entry) in self._tokens:
            return resolve_session_tokens(entry, live_ids)
        return entry

    def prepare(self, scripts: Sequence[SessionScript]) -> None:
        """Scan every entry now, so that no first call pays for the scan."""
        for script in scripts:
            for item in script.entries:
                if self._plain.get(id(item.entry)) is not item.entry:
                    self._check(item.entry)

    def clear(self) -> None:
        """Forget every entry (the scripts were replaced)."""
        self._plain.clear()
        self._tokens.clear()

    def _check(self, entry: AnyEntry) -> bool:
        if isinstance(entry, ChunksEntry | ThrowEntry):
            try:
                encoded = _encode(entry_to_json(entry))
            except (TypeError, msgspec.EncodeError):
                self._tokens[id(entry)] = entry
                return False
            if _TOKEN_BYTES in encoded:
                self._tokens[id(entry)] = entry
                return False
            if _MARKER_BYTES not in encoded:
                self._plain[id(entry)] = entry
                return True
        return False
