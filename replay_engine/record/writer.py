"""The recorder's scenario writer: one log per live session, appended and flushed per call.

Logs take the harness's shape (SPEC 9): a header, then per call ``turn/start`` (when the turn
advances), ``step/start``, one ``user/message`` / ``tool/result`` per new request message, one
``assistant/chunk`` per rebuilt chunk (or packed rows, SPEC 2), ``assistant/message`` and
``step/end``. A call's lines are written in one append once it ends, so a killed recorder
leaves only whole calls. An upstream failure of the primary makes ``replay.override.json``
the bare list deciding it; a child's failure is reported, naming the call.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import SCENARIO_EXISTS, InputError
from ..files import atomic_write
from ..scenario.layout import PRIMARY_NAME, SIDECAR_NAME, child_log_name, is_scenario_file
from ..scenario.sidecar import validate_sidecar
from .dialect import Chunk, RequestMessage

BACKUP_SUFFIX = ".bak"
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Header values shorter than this are not searched for (they would match ordinary text)."""


def recorder_version() -> str:
    """``dsh-replay <version>`` for the ``recordedBy`` header key."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"dsh-replay {version('dsh-replay-tui')}"
    except PackageNotFoundError:
        return "dsh-replay"


def now_ms() -> int:
    """Wall-clock milliseconds."""
    return time.time_ns() // 1_000_000


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def existing_scenario_files(directory: Path) -> list[Path]:
    """The files of ``directory`` that make it a scenario (logs and the sidecar), by the
    scenario layout's own names."""
    if not directory.is_dir():
        return []
    return [item for item in sorted(directory.iterdir()) if is_scenario_file(item.name)]


def prepare_directory(directory: Path, *, force: bool) -> list[Path]:
    """Create ``directory``, or make room in it: refuses an existing scenario unless ``force``,
    which moves each of its files to ``NAME.bak``; returns the backups made."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: not a directory; give record a directory to write the "
                         "scenario into.", file=str(directory))
    existing = existing_scenario_files(directory)
    if existing and not force:
        names = ", ".join(p.name for p in existing)
        raise InputError(f"{directory}: already holds a scenario ({names}); record into an empty "
                         "directory, or pass --force to keep those files as .bak and record anew.",
                         file=str(directory), code=SCENARIO_EXISTS)
    directory.mkdir(parents=True, exist_ok=True)
    backups = []
    for path in existing:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        os.replace(path, backup)
        backups.append(backup)
    return backups


class Redactor:
    """Removes the client's secrets (API keys, tokens) from every text the recorder writes."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()

    def learn(self, headers: Iterable[tuple[str, str]]) -> None:
        """Remember the secret-bearing header values of one request."""
        for name, value in headers:
            lowered = name.lower()
            if not (lowered in ("authorization", "proxy-authorization", "cookie") or any(
                    word in lowered for word in ("key", "token", "secret", "auth"))):
                continue
            for candidate in (value, value.partition(" ")[2]):
                candidate = candidate.strip()
                if len(candidate) >= MIN_SECRET_LENGTH:
                    self._secrets.add(candidate)
                    self._secrets.add(json.dumps(candidate, ensure_ascii=False)[1:-1])

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


@dataclass(frozen=True, slots=True)
class CallReport:
    """One recorded call, as the recorder reports it to its listeners."""

    session: str | None
    """The live session id (None: anonymous)."""
    file: str
    """The log it was written to."""
    index: int
    """0-based call number in that log."""
    key: str
    """Its ``turn/step``."""
    chunks: int
    finish: str | None
    """The finish kind, or None when the call failed."""
    code: str | None = None
    message: str | None = None
    problem: str | None = None
    """Why the scenario will not load as recorded (a child's failed call), if so."""

    @property
    def failed(self) -> bool:
        """True when the upstream failed this call."""
        return self.code is not None


Listener = Callable[[CallReport], None]


@dataclass(slots=True, eq=False)
class Call:
    """A call in flight: its key, the new request messages and the chunks with arrival times."""

    log: SessionLog
    turn: int
    step: int
    new_turn: bool
    started: int
    new_messages: list[RequestMessage]
    timed: list[tuple[Chunk, int]] = field(default_factory=list)
    done: bool = False

    @property
    def key(self) -> str:
        """The call key ``turn/step``."""
        return f"{self.turn}/{self.step}"

    def add(self, chunks: Iterable[Chunk], at: int | None = None) -> None:
        """Chunks that arrived at ``at`` ms (now when omitted)."""
        stamp = now_ms() if at is None else at
        self.timed.extend((chunk, stamp) for chunk in chunks)

    @property
    def chunks(self) -> list[Chunk]:
        """The chunks so far."""
        return [chunk for chunk, _ in self.timed]

    def finish(self) -> CallReport | None:
        """The call ended with its stream's end marker: write it whole."""
        return self.log.recorder.end_call(self, None)

    def fail(self, message: str, code: str) -> CallReport | None:
        """The upstream failed the call (before any chunk, or its stream broke)."""
        return self.log.recorder.end_call(self, (message, code))

    def abandon(self) -> None:
        """The recording stopped while the call streamed: nothing of it is written."""
        self.done = True
        self.log.recorder.in_flight.discard(self)


class SessionLog:
    """One session's log file, its seq counter and the turn/step inference."""

    def __init__(self, recorder: ScenarioRecorder, path: Path, session: str | None,
                 created_at: int) -> None:
        self.recorder = recorder
        self.path = path
        self.session = session
        self.primary = path.name == PRIMARY_NAME
        self.seq = 0
        self.turn = 0
        self.step = 0
        self.calls = 0
        self.sent: list[Any] = []
        self.id = session if session is not None else str(uuid.uuid4())
        header = {"type": "session", "id": self.id, "createdAt": created_at, "seedLength": 0,
                  "recordedBy": recorder_version()}
        self._file: IO[str] | None = open(path, "x", encoding="utf-8")  # noqa: SIM115
        self._write([_dumps(header)])

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
        return Call(self, self.turn, self.step, new_turn, now_ms(),
                    [m for m in fresh if m.role in ("user", "tool")])

    def _write(self, lines: list[str]) -> None:
        if self._file is None:
            return
        redact = self.recorder.redact
        self._file.write("".join(redact(line) + "\n" for line in lines))
        self._file.flush()

    def _event(self, kind: str, at: int, data: dict[str, Any]) -> str:
        line = _dumps({"type": kind, "seq": self.seq, "time": at, "data": data})
        self.seq += 1
        return line

    def write_call(self, call: Call, failure: tuple[str, str] | None) -> None:
        """Append the call's events in one write and flush."""
        where = {"turn": call.turn, "step": call.step}
        lines: list[str] = []
        if call.new_turn:
            lines.append(self._event("turn/start", call.started, {"turn": call.turn}))
        lines.append(self._event("step/start", call.started, dict(where)))
        for message in call.new_messages:
            if message.role == "tool":
                data = {**where, "callId": message.call_id, "role": "tool",
                        "content": message.content}
                lines.append(self._event("tool/result", call.started, data))
            else:
                data = {**where, "role": "user", "content": message.content}
                lines.append(self._event("user/message", call.started, data))
        lines.extend(self._chunk_lines(call))
        ended = call.timed[-1][1] if call.timed else call.started
        if failure is None:
            blocks = [c["block"] for c in call.chunks if c.get("type") == "block-end"]
            lines.append(self._event("assistant/message", ended, {
                **where, "message": {"role": "assistant", "content": blocks}}))
            lines.append(self._event("step/end", ended, dict(where)))
        else:
            text, code = failure
            lines.append(self._event("step/end", ended, {
                **where, "error": {"message": text, "code": code}}))
        self._write(lines)
        self.calls += 1

    def _chunk_lines(self, call: Call) -> list[str]:
        timed = call.timed
        lines: list[str] = []
        i = 0
        while i < len(timed):
            key = _pack_key(timed[i][0]) if self.recorder.pack else None
            j = i + 1
            while key is not None and j < len(timed) and _pack_key(timed[j][0]) == key:
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
        first = run[0][0]
        times = [at for _, at in run]
        data: dict[str, Any] = {"turn": call.turn, "step": call.step, "index": first["index"]}
        if first["type"] == "tool-call-delta":
            kind = "tool-call-chunks"
            data["id"] = first["id"]
            if "name" in first:
                data["name"] = first["name"]
            data["dt"] = [b - a for a, b in zip(times, times[1:], strict=False)]
            data["args"] = [chunk["argumentsDelta"] for chunk, _ in run]
        else:
            kind = "text-chunks" if first["type"] == "text-delta" else "reasoning-chunks"
            data["dt"] = [b - a for a, b in zip(times, times[1:], strict=False)]
            data["texts"] = [chunk["text"] for chunk, _ in run]
        line = _dumps({"type": kind, "seq0": self.seq, "time0": times[0], "data": data})
        self.seq += len(run)
        return line

    def close(self) -> None:
        """Flush to disk and close."""
        if self._file is None:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None


def _pack_key(chunk: Chunk) -> tuple[Any, ...] | None:
    """Chunks with equal keys can share one packed row (None: this one cannot be packed)."""
    kind = chunk.get("type")
    index = chunk.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        return None
    if kind in ("text-delta", "reasoning-delta"):
        if set(chunk) == {"type", "index", "text"} and isinstance(chunk["text"], str):
            return (kind, index)
        return None
    if kind == "tool-call-delta" and isinstance(chunk.get("id"), str) and isinstance(
            chunk.get("argumentsDelta"), str):
        if set(chunk) == {"type", "index", "id", "name", "argumentsDelta"} and isinstance(
                chunk["name"], str):
            return (kind, index, chunk["id"], True, chunk["name"])
        if set(chunk) == {"type", "index", "id", "argumentsDelta"}:
            return (kind, index, chunk["id"], False)
    return None


class ScenarioRecorder:
    """Every live session's log in one scenario directory, and the primary's sidecar."""

    def __init__(self, directory: str | Path, *, pack: bool = False, force: bool = False) -> None:
        self.directory = Path(directory)
        self.pack = pack
        self.backups = prepare_directory(self.directory, force=force)
        self.redact = Redactor()
        self.sessions: dict[str | None, SessionLog] = {}
        self.in_flight: set[Call] = set()
        self.primary_entries: list[dict[str, Any]] = []
        self.primary_failed = False
        self.problems: list[str] = []
        self.reports: list[CallReport] = []
        self.listeners: list[Listener] = []
        self.closed = False
        self.dropped: list[Call] = []
        """Calls still streaming when the recording stopped (not written)."""
        self._last_created = 0

    def open_call(self, session: str | None, messages: list[RequestMessage]) -> Call:
        """Start recording one call of ``session`` (its log is created on its first call)."""
        log = self.sessions.get(session)
        if log is None:
            created = max(now_ms(), self._last_created + 1)  # children keep first-call order
            self._last_created = created
            name = PRIMARY_NAME if not self.sessions else child_log_name(len(self.sessions))
            log = self.sessions[session] = SessionLog(self, self.directory / name, session, created)
        call = log.open_call(messages)
        self.in_flight.add(call)
        return call

    def end_call(self, call: Call, failure: tuple[str, str] | None) -> CallReport | None:
        """Write a call that ended (``failure``: the upstream's message and code)."""
        if call.done or self.closed:
            return None
        call.done = True
        self.in_flight.discard(call)
        log = call.log
        index = log.calls
        if failure is not None:
            failure = (self.redact(failure[0]), failure[1])
        if log.primary:  # the sidecar first: a kill between the two writes leaves a bare list
            self._primary_call(call, failure)  # that still decides every call of the log
        log.write_call(call, failure)
        problem = None
        if not log.primary and failure is not None:
            problem = (f"{log.path}: call #{index} (model call {call.key}) of child session "
                       f"{log.id} failed upstream ({failure[1]}: {failure[0]}); a sidecar can only "
                       "decide calls of the primary session, so "
                       + ("this scenario will not load until that call is recorded again or "
                          "removed from the log." if call.timed else "the child's script has no "
                          "such call (a replay answers it as script exhausted)."))
            self.problems.append(problem)
        finish = None
        if failure is None:
            reason = call.chunks[-1].get("reason") if call.chunks else None
            finish = str(reason.get("kind")) if isinstance(reason, dict) else "stop"
        report = CallReport(log.session, log.path.name, index, call.key, len(call.timed), finish,
                            failure[1] if failure else None, failure[0] if failure else None,
                            problem)
        self.reports.append(report)
        for listener in self.listeners:
            listener(report)
        return report

    def _primary_call(self, call: Call, failure: tuple[str, str] | None) -> None:
        if failure is None:
            self.primary_entries.append({"kind": "chunks", "chunks": call.chunks})
        else:
            self.primary_failed = True
            self.primary_entries.append({"kind": "throw", "chunks": call.chunks,
                                         "message": failure[0] or "upstream failure",
                                         "code": failure[1]})
        if self.primary_failed:
            self.write_sidecar()

    def write_sidecar(self) -> Path:
        """``replay.override.json`` as the bare list of every primary call, atomically, in the
        form ``dsh-replay override`` writes (validated first)."""
        path = self.directory / SIDECAR_NAME
        validate_sidecar(self.primary_entries, str(path))
        text = json.dumps(self.primary_entries, indent=2, ensure_ascii=False) + "\n"
        atomic_write(path, self.redact(text).encode("utf-8"))
        return path

    def close(self) -> list[Call]:
        """Finish the recording: drop calls still streaming, flush and close every log;
        returns the dropped calls."""
        dropped = list(self.in_flight)
        for call in dropped:
            call.abandon()
        self.dropped.extend(dropped)
        self.closed = True
        for log in self.sessions.values():
            log.close()
        return dropped
