"""Binding: a live call claims a script (first call of a new session) or advances its cursor.

Also which entries need their ``{{fromRequest:…}}`` placeholders resolved, so calls to the
many entries without one skip the walk.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ..context import ContextItem
from ..divergence import divergence, same_content
from ..errors import BindingError, GoneLiveError, ScriptExhaustedError, UnrecordedSessionError
from ..excerpt import EXCERPT_TEXT, excerpt
from ..jsonlimits import encode_json
from ..models import AnyEntry, ChunksEntry, HangEntry, ScriptEntry, SessionScript, ThrowEntry, entry_to_json
from ..requests import live_new_messages
from . import events as ev
from .claims import BindMode, claim_script, note_announcements
from .placeholders import MARKER, resolve_scripted_entry
from .recorded import Context, RecordedContexts
from .state import Binding, Call, CallRecord, GoLive, Run, session_label
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
    contexts: RecordedContexts | None = None,
    bind: BindMode = "content",
) -> Call:
    """Bind one call of ``session_id`` in ``run``: journal it, register it in ``calls``.

    Raises UnrecordedSessionError / ScriptExhaustedError (and emits BindingFailed, journals the
    refusal) when the call has no recorded counterpart. ``retry`` marks a client library's
    retry; ``dialect`` names the wire the call arrived on (kept in the journal). With
    ``contexts``, the request's new content is compared with the recorded context of the call
    it takes (``CallRecord.divergence``), retries are seen, and ``bind="content"`` lets a new
    session claim the script whose first call it matches.
    """
    if contexts is not None and messages is not None:
        live = tuple(live_new_messages(run.scrub(messages) if run.scrub else messages, dialect))
    else:
        live = None
    binding = run.bindings.get(session_id)
    if binding is None:
        matches = None
        # a request with no new message says nothing of which script it is: order decides
        if bind == "content" and live and contexts is not None and len(scripts) > 1:
            def matches(index: int) -> bool:
                first = contexts.at(index, 0)
                return first is not None and divergence(live, first) is None
        claim = claim_script(run, len(scripts), session_id, matches=matches)
        if claim is None:
            # the wording of docs/format.md#binding counts from 1; the debugger's index is given beside it
            err = UnrecordedSessionError(
                f"a model call arrived from an unrecorded session (#{len(run.bindings) + 1}); "
                f"the scenario recorded only {len(scripts)} session(s) "
                f"[{session_label(session_id)}, run {run.name}; counting from 0 as the debugger "
                f"does: session #{len(run.bindings)}, past {_numbered(len(scripts), 'script')}]"
            )
            if dialect not in run.overflow:
                _refuse(run, ids, err, session_id, None, None, messages, model, retry, dialect)
                emit(ev.BindingFailed(run.name, session_id, err.code, err.message, retry,
                                      messages, dialect=dialect))
            try:
                raise err
            finally:  # the error's traceback holds this frame: no cycle through the local
                del err
        binding = Binding(session_id, claim[0], rule=claim[1])
        run.bindings[session_id] = binding
        if session_id is not None:
            run.live_ids[claim[0]] = session_id
        emit(ev.SessionBound(run.name, session_id, binding.script_index, binding.rule))
    script = scripts[binding.script_index] if binding.script_index < len(scripts) else None
    length = len(script.entries) if script is not None else 0
    if script is None or binding.cursor >= length:
        where = f"[{session_label(session_id)}, script {binding.script_index}, run {run.name}"
        retried = retry or _retries_failure(binding, live)
        if retried and binding.cursor > 0:
            last = binding.cursor - 1
            err2 = ScriptExhaustedError(
                f"a retry of call #{last} — the client retried model call #{last} after its "
                f"scripted failure, and the recording holds no call after it (no such retry "
                f"was recorded): turn the client's retries off {where}]")
        else:  # the wording of docs/format.md#binding counts from 1; the debugger's index is beside it
            err2 = ScriptExhaustedError(
                f"script exhausted — session requested model call #{binding.cursor + 1} but "
                f"its script has only {length} {where}; counting from 0 as the debugger does: "
                f"call #{binding.cursor}, past {_numbered(length, 'call')}]")
        if dialect not in run.overflow:
            _refuse(run, ids, err2, session_id, binding.script_index, binding.cursor, messages,
                    model, retried, dialect, bound_by=binding.rule)
            emit(ev.BindingFailed(run.name, session_id, err2.code, err2.message, retried, messages,
                                 binding.script_index, binding.cursor, dialect=dialect))
        err2.script_index = binding.script_index
        try:
            raise err2
        finally:  # as above: no cycle keeping the messages until the collector runs
            del err2
    call_index = binding.cursor
    if run.go_live is not None and dialect in run.overflow:
        _maybe_go_live(run.go_live, binding, call_index, length, live, contexts, session_id,
                       run.name)
    binding.cursor += 1
    if len(scripts) > 1:
        note_announcements(run, len(scripts), messages)
    scripted: ScriptEntry = script.entries[call_index]
    call_id = next(ids)
    record = _kept(CallRecord(
        call_id, run.name, session_id, binding.script_index, call_index, scripted.entry.kind,
        None, model, time.time(), retry=retry, dialect=dialect, bound_by=binding.rule,
    ), messages)
    if live is not None and contexts is not None:
        _compare(binding, record, live, contexts, retry)
    _journal(run, record, emit)
    call = Call(
        call_id, run.name, session_id, binding.script_index, call_index, scripted.entry,
        scripted.times, record,
    )
    binding.call = call
    calls[call_id] = call
    emit(
        ev.CallStarted(run.name, session_id, binding.script_index, call_index, call_id,
                       scripted.entry.kind, retry or record.retry_detected, dialect)
    )
    return call


def _numbered(count: int, what: str) -> str:
    """``calls #0 to #2``: what a count holds, numbered from 0 (``no call`` for none)."""
    if count == 0:
        return f"no {what}"
    return f"{what} #0" if count == 1 else f"{what}s #0 to #{count - 1}"


def _retries_failure(binding: Binding, live: Context | None) -> bool:
    """The call repeats the session's previous request, which ended in a scripted failure (a
    client library's retry the server sees without a retry header)."""
    previous = binding.last_live
    return (binding.last_failed and live is not None and previous is not None
            and same_content(kept_live(live), previous))


def _maybe_go_live(go_live: GoLive, binding: Binding, call_index: int, length: int,
                   live: Context | None, contexts: RecordedContexts | None,
                   session_id: str | None, run: str) -> None:
    """Raise GoneLiveError when ``go_live`` sends this call upstream: the session's cursor then
    stands past its script, so every later call of it overflows upstream too."""
    recorded = contexts.at(binding.script_index, call_index) if contexts is not None else None
    found = divergence(live, recorded) if live is not None and recorded is not None else None
    if not go_live(binding.script_index, call_index, found):
        return
    binding.cursor = length
    binding.live_from = call_index
    err = GoneLiveError(f"the session goes live from call #{call_index} "
                        f"[{session_label(session_id)}, script {binding.script_index}, run {run}]")
    err.script_index = binding.script_index
    err.call_index = call_index
    raise err


def _compare(binding: Binding, record: CallRecord, live: Context, contexts: RecordedContexts,
             retry: bool) -> None:
    """Fill ``record``'s divergence and retry facts and the binding's lists."""
    assert record.script_index is not None and record.call_index is not None
    si, ci = record.script_index, record.call_index
    recorded = contexts.at(si, ci)
    if recorded is not None:
        record.divergence = divergence(live, recorded)
        if record.divergence is not None:
            binding.diverged.append((ci, record.divergence, record.call_id))
    kept = kept_live(live)
    record.retry_detected = _retries_failure(binding, live)
    if retry or record.retry_detected:
        before = contexts.at(si, ci - 1) if ci > 0 else None
        in_recording = recorded is not None and before is not None \
            and same_content(recorded, before)
        binding.retries.append((ci, in_recording))
    binding.last_live = kept
    binding.last_failed = False


def kept_live(live: Context) -> Context:
    """A request's new content as its binding keeps it until the next call (to see a retry):
    texts longer than ``EXCERPT_TEXT`` by their digest, so a session holds no 25 MB text.
    An SDK's retry resends the same bytes, which the digest tells apart."""
    if all(len(item.text) <= EXCERPT_TEXT for item in live):
        return live
    return tuple(item if len(item.text) <= EXCERPT_TEXT else ContextItem(
        item.role, "sha256 " + hashlib.sha256(item.text.encode("utf-8", "surrogatepass"))
        .hexdigest(), item.call_id) for item in live)


def _journal(run: Run, record: CallRecord, emit: Callable[[ev.EngineEvent], None]) -> None:
    if run.journal.maxlen is not None and len(run.journal) >= run.journal.maxlen:
        run.dropped += 1
        if run.dropped == 1:
            emit(ev.JournalTrimmed(run.name, run.journal.maxlen))
    run.journal.append(record)


def _kept(record: CallRecord, messages: Any) -> CallRecord:
    """``record`` holding what the journal keeps of ``messages``: a bounded excerpt and the
    digest of the whole (a run keeps its calls as long as it lives)."""
    if messages is not None:
        kept = excerpt(messages)
        record.messages, record.messages_cut = kept.value, kept.cut
        record.messages_digest, record.messages_bytes = kept.digest, kept.size
    return record


REFUSALS_KEPT = 1_000
"""Refused calls a run keeps for its verdict (beyond it only the count grows)."""


def _refuse(run: Run, ids: Iterator[int], err: BindingError, session_id: str | None,
            script_index: int | None, call_index: int | None, messages: Any, model: str | None,
            retry: bool, dialect: str | None, *, bound_by: str | None = None) -> None:
    """Journal a call the engine refused (409) and keep it for the verdict."""
    now = time.time()
    record = _kept(CallRecord(next(ids), run.name, session_id, script_index, call_index,
                              "refused", None, model, now, outcome="refused", code=err.code,
                              message=err.message, ended_at=now, retry=retry, dialect=dialect,
                              bound_by=bound_by), messages)
    _journal(run, record, lambda event: None)
    if len(run.refused) < REFUSALS_KEPT:
        run.refused.append(record)
    run.refused_count += 1


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
