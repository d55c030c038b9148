"""The recorder's scenario writer: one log per live session, appended and flushed per call.

Logs take the harness's shape (docs/format.md#recording): a header, then per call ``turn/start`` (when the
turn advances), ``step/start``, one ``user/message`` / ``tool/result`` per new request message, one
``assistant/chunk`` per rebuilt chunk (or packed rows, docs/format.md#session-logs), ``assistant/message`` and
``step/end``. A call's lines are written in one append once it ends, in the slot of its
start (calls of one session are logged in request order, however they finish), so a killed
recorder leaves only whole calls. An upstream failure of the primary makes
``replay.override.json`` the bare list deciding it (``primary_sidecar``: it and the log always
hold the same calls); a child's failure is reported, naming the
call. ``--format v4`` writes ``session[.N].v4.jsonl`` instead (docs/format.md#generations): per call one
settlement event holding its compact stream (record/settlement.py) in place of the chunk events. Text is
written UTF-8 safe (a lone surrogate as its ``\\u`` escape) and with the
client's secrets redacted; a write that fails (disk full, permissions) is cut back to the last
whole call and stops the recording with a typed error.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine.placeholders import literal, literal_value
from ..errors import RECORD_WRITE, ConfigError, InputError, ReplayError
from ..files import create_with
from ..jsonlimits import json_text
from ..scenario.layout import log_file_name
from .calls import Call, CallReport, FailureListener, Listener, now_ms, recorder_version, write_error
from .dialect import INVALID_RESPONSE, Chunk, RequestMessage
from .directory import lock_directory, prepare_directory
from .primary_sidecar import PrimarySidecar
from .redact import Redactor
from .scrub import Scrubber
from .settlement import FORMAT_VERSION, run_key, run_record, settlement

FORMATS = {"v1": 0, "v4": FORMAT_VERSION}
"""``record --format``: the log generation each format writes (0 = legacy names,
docs/format.md#generation-selection)."""
DEFAULT_FORMAT = "v1"

STOPPED = "ABORTED"
"""Failure code of a call still streaming when the recording stopped, written (as failed)
only when later calls of its session ended: their slots come after it."""


def _dumps(value: Any) -> str:
    return json_text(value, separators=(",", ":"), allow_nan=False)


class SessionLog:
    """One session's log file, its seq counter and the turn/step inference."""

    def __init__(self, recorder: ScenarioRecorder, path: Path, session: str | None,
                 created_at: int, *, primary: bool) -> None:
        self.recorder = recorder
        self.path = path
        self.session = session
        self.primary = primary
        self.generation = recorder.generation
        self.seq = 0
        self.turn = 0
        self.step = 0
        self.calls = 0
        self.sent: list[Any] = []
        self.pending: deque[Call] = deque()
        """Calls opened and not yet written, in request order."""
        self.id = session if session is not None else str(uuid.uuid4())
        self.size = 0
        """Bytes written (whole lines only): a failed write is cut back to it."""
        self._fd: int | None = None
        self._create(created_at)

    def _create(self, created_at: int) -> None:
        """Create the log already holding its header (``files.create_with``: a recorder killed
        at any moment leaves no log or one that loads, never an empty file)."""
        data = self._header(created_at)
        try:
            self._fd = create_with(self.path, data)
        except OSError as exc:
            raise write_error(self.path, exc, 0) from None
        self.size = len(data)

    def _header(self, created_at: int) -> bytes:
        """The header line the log is created with (a log that continues another has none)."""
        header: dict[str, Any] = {"type": "session", "id": self.id, "createdAt": created_at,
                                  "seedLength": 0, "recordedBy": recorder_version()}
        if self.generation:  # v2+: the version names the shape; no seeds, so never seeded
            header = {"type": "session", "version": self.generation, "id": self.id,
                      "createdAt": created_at, "isSeeded": False,
                      "recordedBy": recorder_version()}
        return (self.recorder.redact(_dumps(header)) + "\n").encode("utf-8")

    def open_call(self, messages: list[RequestMessage]) -> Call:
        """Infer the key of a call sending ``messages``: a new turn when its new messages end
        with a user message, else the next step of the turn."""
        raw = [m.raw for m in messages]
        fresh = messages[len(self.sent):] if raw[:len(self.sent)] == self.sent else messages
        self.sent = raw
        new_turn = self.turn == 0 or bool(fresh and fresh[-1].role == "user")
        if new_turn:
            self.turn += 1
            self.step = 1
        else:
            self.step += 1
        call = Call(self.recorder, self.session, self.turn, self.step, new_turn, now_ms(),
                    [m for m in fresh if m.role in ("user", "tool")])
        self.pending.append(call)
        return call

    def _write(self, lines: list[str]) -> None:
        """Append whole lines in one write (unbuffered: on disk as the call ends); a write that
        fails is cut back to the last whole call and raised as the typed write error."""
        if self._fd is None:
            return
        redact = self.recorder.redact
        data = memoryview("".join(redact(line) + "\n" for line in lines).encode("utf-8"))
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.size)
            raise write_error(self.path, exc, self.calls) from None
        self.size = os.lseek(self._fd, 0, os.SEEK_CUR)

    def _event(self, kind: str, at: int, data: dict[str, Any]) -> str:
        line = _dumps({"type": kind, "seq": self.seq, "time": at, "data": data})
        self.seq += 1
        return line

    def call_lines(self, call: Call, failure: tuple[str, str] | None) -> list[str]:
        """The call's events as log lines (ValueError / RecursionError when its content cannot
        be written as JSON; the seq counter is then as before)."""
        seq = self.seq
        try:
            return self._call_lines(call, failure)
        except BaseException:
            self.seq = seq
            raise

    def write_call(self, lines: list[str]) -> None:
        """Append one call's lines in one write (InputError RECORD_WRITE when it fails)."""
        self._write(lines)
        self.calls += 1

    def _call_lines(self, call: Call, failure: tuple[str, str] | None) -> list[str]:
        where = {"turn": call.turn, "step": call.step}
        lines: list[str] = []
        if call.new_turn:
            lines.append(self._event("turn/start", call.started, {"turn": call.turn}))
        lines.append(self._event("step/start", call.started, dict(where)))
        for message in call.new_messages:
            if message.role == "tool":
                data = {**where, "callId": message.call_id, "role": "tool",
                        "content": message.text}
                lines.append(self._event("tool/result", call.started, data))
            else:
                data = {**where, "role": "user", "content": message.text}
                lines.append(self._event("user/message", call.started, data))
        ended = call.timed[-1][1] if call.timed else call.started
        if self.generation:
            kind, data = settlement(where, call.timed, ended, failure)
            lines.append(self._event(kind, ended, data))
            end = dict(where) if failure is None else {
                **where, "error": {"message": failure[0], "code": failure[1]}}
            lines.append(self._event("step/end", ended, end))
            return lines
        lines.extend(self._chunk_lines(call))
        if failure is None:
            blocks = [c["block"] for c in call.chunks if c.get("type") == "block-end"]
            lines.append(self._event("assistant/message", ended, {
                **where, "message": {"role": "assistant", "content": blocks}}))
            lines.append(self._event("step/end", ended, dict(where)))
        else:
            text, code = failure
            lines.append(self._event("step/end", ended, {
                **where, "error": {"message": text, "code": code}}))
        return lines

    def _chunk_lines(self, call: Call) -> list[str]:
        timed = call.timed
        lines: list[str] = []
        i = 0
        while i < len(timed):
            key = run_key(timed[i][0]) if self.recorder.pack else None
            j = i + 1
            while key is not None and j < len(timed) and run_key(timed[j][0]) == key:
                j += 1
            if j - i >= 2:
                lines.append(self._packed_row(call, timed[i:j]))
            else:
                chunk, at = timed[i]
                lines.append(self._event("assistant/chunk", at, {
                    "turn": call.turn, "step": call.step, "chunk": chunk}))
            i = j
        return lines

    def _packed_row(self, call: Call, run: list[tuple[Chunk, int]]) -> str:
        record = run_record(run)  # the v4 run record, in the v1 envelope (docs/format.md#session-logs)
        kind, time0 = record.pop("type"), record.pop("time0")
        data = {"turn": call.turn, "step": call.step, **record}
        line = _dumps({"type": kind, "seq0": self.seq, "time0": time0, "data": data})
        self.seq += len(run)
        return line

    def close(self) -> None:
        """Sync to disk and close (OSError when the sync fails)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class ScenarioRecorder:
    """Every live session's log in one scenario directory, and the primary's sidecar."""

    def __init__(self, directory: str | Path, *, pack: bool = False, force: bool = False,
                 log_format: str = DEFAULT_FORMAT) -> None:
        self.directory = Path(directory)
        self.pack = pack
        if log_format not in FORMATS:
            raise ConfigError(f"unknown log format {log_format!r}; record writes "
                              + " or ".join(FORMATS) + " (--format).")
        self.generation = FORMATS[log_format]
        """The log generation written: 0 (v1, ``session.jsonl``) or 4 (``session.v4.jsonl``)."""
        self._lock = lock_directory(self.directory)
        try:
            self.backups = prepare_directory(self.directory, force=force)
        except BaseException:
            self._lock.release()
            raise
        self.redact = Redactor()
        self.scrub = Scrubber()
        """The user's scrub hooks and rules (none unless given)."""
        self.sessions: dict[str | None, SessionLog] = {}
        self.in_flight: set[Call] = set()
        self.sidecar = PrimarySidecar(self.directory, self.redact)
        """The primary's calls as the sidecar deciding them (written once one failed)."""
        self.problems: list[str] = []
        self.reports: list[CallReport] = []
        self.listeners: list[Listener] = []
        self.failure: ReplayError | None = None
        """Why the recording stopped on its own (a write that failed), if it did."""
        self.failure_listeners: list[FailureListener] = []
        self.closed = False
        self.dropped: list[Call] = []
        """Calls still streaming when the recording stopped (not written)."""
        self._last_created = 0

    @property
    def primary_failed(self) -> bool:
        """A primary call failed upstream: ``replay.override.json`` decides the primary."""
        return self.sidecar.failed

    @property
    def recording(self) -> bool:
        """True while calls are recorded (not stopped, not failed)."""
        return not self.closed and self.failure is None

    def open_call(self, session: str | None, messages: list[RequestMessage]) -> Call | None:
        """Start recording one call of ``session`` (its log is created on its first call);
        None when the recording stopped or failed (see ``failure``)."""
        if not self.recording:
            return None
        log = self.sessions.get(session)
        if log is None:
            try:
                log = self._new_log(session)
            except ReplayError as exc:
                self._failed(exc)
                return None
            self.sessions[session] = log
        call = log.open_call(messages)
        self.in_flight.add(call)
        return call

    def _new_log(self, session: str | None) -> SessionLog:
        """The log a session's first call creates: the primary's, then the next child's."""
        created = max(now_ms(), self._last_created + 1)  # children keep first-call order
        self._last_created = created
        ordinal = len(self.sessions) or None
        return SessionLog(self, self.directory / log_file_name(ordinal, self.generation), session,
                          created, primary=ordinal is None)

    def record_call(self, session: str | None, read: Callable[[dict[str, Any]],
                    list[RequestMessage]], body: dict[str, Any]) -> Call | None:
        """``open_call`` for a request body: its messages as ``read`` takes them, scrubbed; None
        when the recording stopped (also when a scrub hook failed: it stops the recording)."""
        try:
            messages = self.scrub.messages(read, body)
        except ReplayError as exc:
            self._failed(exc)
            return None
        return self.open_call(session, messages)

    def end_call(self, call: Call, failure: tuple[str, str] | None) -> CallReport | None:
        """A call ended (``failure``: the upstream's message and code): written now when every
        earlier call of its session is, else as soon as they are; its report when written."""
        if call.done or call.ended or self.closed:
            return None
        call.ended = True
        self.in_flight.discard(call)
        try:  # a scrub rule past its time budget stops the recording (named SCRUB error)
            message = self.scrub.text(failure[0]) if failure is not None else ""
        except ReplayError as exc:
            self._failed(exc)
            return None
        call.failure = ((literal(self.redact(message)), literal(failure[1]))
                        if failure is not None else None)
        return self._flush(self.sessions[call.session]).get(id(call))

    def drop_call(self, call: Call) -> None:
        """A call that will never be written is no longer in flight."""
        self.in_flight.discard(call)

    def _flush(self, log: SessionLog) -> dict[int, CallReport]:
        """Write the session's ended calls that are next in request order."""
        written: dict[int, CallReport] = {}
        while log.pending and log.pending[0].ended and self.failure is None:
            call = log.pending.popleft()
            report = self._write_call(call)
            if report is not None:
                written[id(call)] = report
        return written

    def _write_call(self, call: Call) -> CallReport | None:
        call.done = True
        log = self.sessions[call.session]
        index = log.calls
        try:
            # model text that reads as a token is written to replay as itself (engine.literal)
            chunks = literal_value(self.redact.chunks(self.scrub.chunks(call.chunks)))
            call.timed = list(zip(chunks, (at for _, at in call.timed), strict=True))
            lines = self._lines(call)
            failure = call.failure
            if log.primary:  # the sidecar entry first, taken back when the log write fails
                with self.sidecar.deciding(call.chunks, failure):
                    log.write_call(lines)
            else:
                log.write_call(lines)
        except ReplayError as exc:
            self._failed(exc)
            return None
        except Exception as exc:  # noqa: BLE001 - a write that fails stops the recording loudly
            self._failed(InputError(f"{log.path}: cannot write the recording ({type(exc).__name__}"
                                    f": {exc}); the recording stopped.", file=str(log.path),
                                    code=RECORD_WRITE))
            return None
        problem = None
        if not log.primary and failure is not None and log.generation:
            problem = (f"{log.path}: call #{index} (model call {call.key}) of child session "
                       f"{log.id} failed upstream ({failure[1]}: {failure[0]}); it is recorded as "
                       "an assistant/attempt ending in an error finish, which a replay answers "
                       "in the stream, not as the live HTTP failure (a sidecar can only decide "
                       "calls of the primary session).")
        elif not log.primary and failure is not None:
            problem = (f"{log.path}: call #{index} (model call {call.key}) of child session "
                       f"{log.id} failed upstream ({failure[1]}: {failure[0]}); a sidecar can only "
                       "decide calls of the primary session, so "
                       + ("this scenario will not load until that call is recorded again or "
                          "removed from the log." if call.timed else "the child's script has no "
                          "such call (a replay answers it as script exhausted)."))
            self.problems.append(problem)  # a v4 attempt loads: a note, not a problem
        finish = None
        if failure is None:
            reason = call.chunks[-1].get("reason") if call.chunks else None
            finish = str(reason.get("kind")) if isinstance(reason, dict) else "stop"
        report = CallReport(log.session, log.path.name, index, call.key, len(call.timed), finish,
                            failure[1] if failure else None, failure[0] if failure else None,
                            problem, tuple(call.notes), reached=call.reached)
        self.reports.append(report)
        for listener in self.listeners:
            listener(report)
        return report

    def _lines(self, call: Call) -> list[str]:
        """The call's log lines; an answer that cannot be written as JSON (a number that is not
        finite, nesting too deep) is recorded as the failure it is, without its chunks."""
        log = self.sessions[call.session]
        try:
            return log.call_lines(call, call.failure)
        except (ValueError, RecursionError) as exc:
            call.failure = (f"the recorder could not write the upstream's answer as JSON "
                            f"({type(exc).__name__}: {str(exc)[:200]})", INVALID_RESPONSE)
            call.timed = []
        try:
            return log.call_lines(call, call.failure)
        except (ValueError, RecursionError):
            call.new_messages = []  # the request's own content cannot be written either
            return log.call_lines(call, call.failure)

    def _failed(self, error: ReplayError) -> None:
        if self.failure is not None:
            return
        self.failure = error
        for listener in self.failure_listeners:
            listener(error)

    def close(self) -> list[Call]:
        """Finish the recording: write what ended, drop calls still streaming (one with ended
        calls behind it is written as stopped, so theirs stay their slots), sync and close
        every log, release the directory; returns the dropped calls."""
        if self.closed:
            return []
        dropped: list[Call] = []
        for log in self.sessions.values():
            pending = list(log.pending)
            last = max((i for i, c in enumerate(pending) if c.ended), default=-1)
            for i, call in enumerate(pending):
                if call.ended:
                    continue
                if i < last and self.failure is None:
                    self.in_flight.discard(call)
                    call.ended = True
                    call.failure = ("the recording stopped while this call was still streaming",
                                    STOPPED)
                else:
                    dropped.append(call)
            self._flush(log)
        for call in dropped:
            call.abandon()
        self.dropped.extend(dropped)
        self.closed = True
        for log in self.sessions.values():
            try:
                log.close()
            except OSError as exc:
                self._failed(write_error(log.path, exc, log.calls))
        self._lock.release()
        return dropped
