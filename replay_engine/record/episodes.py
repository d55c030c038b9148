"""``new_episodes``: a replay that records what its scenario does not have yet.

The replay serves every recorded call; a call past the end of a session's script, or the
first call of a session the scenario has no script for, is not refused but handed over
(``Served.set_overflow``) to an :class:`EpisodeRecording`, which forwards it upstream through
the recorder's proxy and records it into an attempt directory: a bound session's calls as the
continuation of its log (no header; ``seq``, turn and step go on from where the log ends), a
new session's as the next child log. ``merged_files`` is what the scenario's files become with
those calls appended as whole calls (and, where the primary's calls are decided by
``replay.override.json``, that sidecar extended to cover them), for ``staging.install``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from ..authoring.compare import render_document
from ..errors import ConfigError
from ..models import SessionScript, entry_to_json
from ..scenario.layout import SIDECAR_NAME, generation_of, log_file_name, log_name
from ..scenario.loading import Scenario
from ..server import Overflowed
from .dialect import RequestMessage
from .dialects import DIALECTS
from .proxy import RecordProxy
from .scrub import Scrubber
from .settlement import FORMAT_VERSION
from .writer import FORMATS, ScenarioRecorder, SessionLog

_PACKED = ("text-chunks", "reasoning-chunks", "tool-call-chunks")
NEW_EPISODES = "NEW_EPISODES"
"""ConfigError: a scenario whose new calls cannot be appended (a log this recorder cannot
write, a primary decided by the sidecar alone)."""


@dataclass(frozen=True, slots=True)
class LogTail:
    """Where a log ends: the next ``seq`` and the turn and step of its last call."""

    next_seq: int = 0
    turn: int = 0
    step: int = 0


def log_tail(path: Path, end: int | None = None) -> LogTail:
    """Read a log to its end (or its first ``end`` bytes): the next seq (packed rows count their
    members; a projected event without ``seq`` counts as the events before it) and its last
    turn and step."""
    next_seq = count = turn = step = read = 0
    header = True
    with open(path, "rb") as handle:
        for raw in handle:
            read += len(raw)
            if end is not None and read > end:
                break
            if not raw.strip():
                continue
            if header:
                header = False
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            data: dict[str, Any] = event["data"] if isinstance(event.get("data"), dict) else {}
            size = 1
            start = event.get("seq")
            if event.get("type") in _PACKED:
                payload = data.get("texts", data.get("args"))
                size = len(payload) if isinstance(payload, list) else 1
                start = event.get("seq0")
            first = start if isinstance(start, int) and not isinstance(start, bool) else count
            next_seq = max(next_seq, first + size)
            count += size
            said_turn, said_step = _number(data.get("turn")), _number(data.get("step"))
            if event.get("type") == "turn/start":
                turn = said_turn if said_turn is not None else turn
                step = said_step if said_step is not None else 0
            elif said_turn is not None and said_step is not None:
                # step/start, and every chunk, packed row and step/end: a v0 log without
                # step events numbers its calls only there (derivation keys calls by them)
                turn, step = said_turn, said_step
    return LogTail(next_seq, turn, step)


def _number(value: object) -> int | None:
    """A turn or step number as a log states it (an int, never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ContinuedLog(SessionLog):
    """A session's new calls, written as the continuation of its recorded log (the attempt
    directory holds only the appended lines, under the log's own name)."""

    def __init__(self, recorder: ScenarioRecorder, path: Path, session: str | None,
                 tail: LogTail, *, primary: bool, generation: int, calls: int) -> None:
        super().__init__(recorder, path, session, 0, primary=primary)
        self.generation = generation
        self.seq, self.turn, self.step = tail.next_seq, tail.turn, tail.step
        self.calls = calls
        self._first = True

    def _header(self, created_at: int) -> bytes:
        """No header: these lines go after the recorded log's."""
        return b""

    def open_call(self, messages: list[RequestMessage]) -> Any:
        """The first call's new messages are those after its last assistant message (what the
        recorded log already holds stays out); later calls infer as the recorder does."""
        if self._first:
            self._first = False
            last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
            self.sent = [m.raw for m in messages[:last + 1]]
        return super().open_call(messages)


def _writable_generation(file: str) -> int:
    generation = generation_of(file)
    if file.endswith(".zstd") or generation not in FORMATS.values():
        raise ConfigError(f"{file}: new calls cannot be appended to this log (the recorder writes "
                          "v1 and v4 logs); re-record the scenario instead "
                          "(--dsh-replay-record=all)", code=NEW_EPISODES)
    return generation


class EpisodeRecorder(ScenarioRecorder):
    """Records the calls a scenario has no recording for, into an attempt directory."""

    def __init__(self, attempt: Path, root: Path, scenario: Scenario) -> None:
        primary = scenario.scripts[0].file if scenario.scripts else None
        generation = generation_of(primary) if primary else 0
        super().__init__(attempt, log_format="v4" if generation == FORMAT_VERSION else "v1")
        self.root = root
        """The scenario directory the new calls are for."""
        self.scenario = scenario
        self.scripts: list[SessionScript] = list(scenario.scripts)
        self._continues: dict[str | None, int] = {}
        children = [found.ordinal for item in root.iterdir()
                    if (found := log_name(item.name)) is not None and found.ordinal is not None]
        self._next_child = max(children, default=0) + 1

    def continue_script(self, session: str | None, script_index: int) -> None:
        """``session`` is bound to script ``script_index``: its new calls continue that log."""
        self._continues.setdefault(session, script_index)

    def _new_log(self, session: str | None) -> SessionLog:
        index = self._continues.get(session)
        if index is None:  # a session the scenario has no script for: the next child log
            name = log_file_name(self._next_child, self.generation)
            self._next_child += 1
            return SessionLog(self, self.directory / name, session, self._created(),
                              primary=False)
        script = self.scripts[index]
        if script.file is None:
            raise ConfigError(f"{self.root}: script {index} comes from "
                              f"{SIDECAR_NAME} alone, with no log to append its new calls to; "
                              "re-record the scenario instead", code=NEW_EPISODES)
        path = Path(script.file)
        return ContinuedLog(self, self.directory / path.name, session, log_tail(path),
                            primary=script.primary, generation=_writable_generation(script.file),
                            calls=len(script.entries))

    def _created(self) -> int:
        from .calls import now_ms

        created = max(now_ms(), self._last_created + 1)
        self._last_created = created
        return created

    def merged_files(self) -> dict[str, bytes]:
        """What the scenario's files become: each continued log with the new calls appended,
        each new child log, and the sidecar extended when it decides the primary's calls."""
        root = self.root
        out: dict[str, bytes] = {}
        for log in self.sessions.values():
            staged = log.path.read_bytes()
            if isinstance(log, ContinuedLog):
                old = (root / log.path.name).read_bytes()
                out[log.path.name] = old + (b"\n" if old and not old.endswith(b"\n") else b"") + staged
            else:
                out[log.path.name] = staged
        sidecar = self._sidecar()
        if sidecar is not None:
            out[SIDECAR_NAME] = sidecar.encode("utf-8")
        return out

    def _sidecar(self) -> str | None:
        """The sidecar text once the primary has new calls (None: unchanged). A bare list, a
        failed new call, or a patch at the old end (which would land on a new call) make it
        the bare list of every primary call, as served, then the new ones."""
        if not self.sidecar.entries or not self.scripts:
            return None
        current = self.scenario.sidecar
        derived = self.scenario.derived_primary or []
        at_end = current is not None and any(at >= len(derived) for at, _ in current.patches)
        if current is None and not self.primary_failed:
            return None
        if current is not None and current.form != "list" and not at_end \
                and not self.primary_failed:
            return None
        served = [entry_to_json(item.entry) for item in self.scripts[0].entries]
        return self.redact(render_document(served + self.sidecar.entries))


class EpisodeRecording:
    """A running ``new_episodes`` recording: answers a replay run's overflowed calls by
    forwarding them upstream and recording them."""

    def __init__(self, attempt: Path, root: Path, scenario: Scenario, upstream: str, *,
                 scrub: Scrubber | None = None) -> None:
        self.recorder = EpisodeRecorder(attempt, root, scenario)
        if scrub is not None:
            self.recorder.scrub = scrub
        try:
            self.proxy = RecordProxy(self.recorder, upstream)
        except BaseException:
            self.recorder.close()
            raise

    dialects = frozenset(d.name for d in DIALECTS)
    """The wires it records (the server refuses calls past the recording on the others)."""

    def answer(self, over: Overflowed) -> ASGIApp:
        """The ASGI answer of one call past the recording."""
        dialect = next(d for d in DIALECTS if d.name == over.dialect)
        if over.error.script_index is not None:
            self.recorder.continue_script(over.session, over.error.script_index)
        return self.proxy.forward(over.request, dialect, over.route, over.session, over.raw,
                                  over.body)

    async def close(self) -> None:
        """Finish the attempt's logs (a call still streaming is dropped) and let go of the
        upstream connections."""
        self.recorder.close()
        await self.proxy.client.aclose()

