"""Record from the divergence: replay what still matches, record from where it stopped.

A replay run serves each session from its recording while the session's requests follow it
(the comparison ``--strict`` uses). The first call that leaves it, or a call named as a cut
(``--from SCRIPT:CALL``), goes upstream through the recorder with every later call of its
session (the engine's ``GoneLiveError``, answered by the run's overflow handler); calls past a
script's end and sessions the recording does not have are recorded as ``new_episodes``
records them. ``merged_files`` is what the scenario becomes: each cut log keeps its bytes up to
the cut (its header and, for a forked child, its inherited prefix included) and goes on with
the new calls, counting ``seq``, turn and step from there, in its own generation; the
sidecar's patches before the cut stay, those at or after it are dropped (``warnings`` names
each); a bare list deciding the primary is cut and extended the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from ..authoring.compare import render_document
from ..divergence import Divergence
from ..errors import ConfigError, GoneLiveError
from ..models import SessionScript, entry_to_json
from ..scenario.layout import SIDECAR_NAME, generation_of
from ..scenario.loading import Scenario
from ..server import Overflowed, ReplayServer
from .episodes import (
    NEW_EPISODES,
    ContinuedLog,
    EpisodeRecorder,
    EpisodeRecording,
    _writable_generation,
    log_tail,
)
from .proxy import RecordProxy
from .scrub import Scrubber
from .writer import SessionLog

SEED_MARKER = "session/end-seed"


@dataclass(frozen=True, slots=True)
class CallRef:
    """One call of one script, numbered from 0 as the debugger numbers them."""

    script: int
    call: int

    def __str__(self) -> str:
        return f"{self.script}:{self.call}"


def parse_call_ref(text: str) -> CallRef:
    """``SCRIPT:CALL`` (ConfigError naming the option when it is not two integers)."""
    script, _, call = text.partition(":")
    if not (script.isdigit() and call.isdigit()):
        raise ConfigError(f"--from {text!r}: give SCRIPT:CALL, two numbers from 0 as the "
                          "debugger numbers scripts and calls, e.g. --from 0:2")
    return CallRef(int(script), int(call))


def check_call_refs(scenario: Scenario, refs: Iterable[CallRef]) -> list[CallRef]:
    """The cuts asked for, each checked against the scenario (ConfigError when out of range)."""
    out = []
    for ref in refs:
        if ref.script >= len(scenario.scripts):
            raise ConfigError(f"--from {ref}: the scenario has {len(scenario.scripts)} "
                              f"script(s), numbered 0 to {len(scenario.scripts) - 1}")
        calls = len(scenario.scripts[ref.script].entries)
        if ref.call >= calls:
            raise ConfigError(f"--from {ref}: script {ref.script} has {calls} call(s), "
                              f"numbered 0 to {calls - 1}")
        out.append(ref)
    return out


def _events(path: Path) -> Iterable[tuple[int, int, dict[str, Any] | None]]:
    """Each physical line of a log: its number, the byte offset after it, and its event."""
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            offset += len(raw)
            event: Any = None
            if raw.strip():
                try:
                    event = json.loads(raw)
                except ValueError:
                    event = None
            yield number, offset, event if isinstance(event, dict) else None


LEAD_IN = frozenset({"turn/start", "step/start", "user/message", "tool/result"})
"""Events that open a call (its turn, step and request messages): a cut starts at the first."""


def _offset_after(path: Path, line: int) -> int:
    """The byte offset where the call after physical line ``line`` starts: the lines that close
    the call ending there (its ``assistant/message``, ``step/end``) stay, the first event that
    opens the next call goes."""
    kept = 0
    for number, offset, event in _events(path):
        if number > line and event is not None and event.get("type") in LEAD_IN:
            return kept
        kept = offset
    return kept


def _lead_line(path: Path, script: SessionScript) -> int:
    """The last line a session's log keeps when its very first call is cut: the header's or,
    for a forked child, its inherited prefix's last (a v2+ log's seed marker included)."""
    v2 = generation_of(path) >= 2
    seed = 0 if script.primary else int(script.seed_length)
    header = marker = seen = 0
    for number, _, event in _events(path):
        if event is None:
            continue
        if not header:
            header = number
            if not v2 and seed == 0:
                return header
        elif v2:
            data = event.get("data")
            if event.get("type") == SEED_MARKER and isinstance(data, dict) \
                    and data.get("inherited") is True:
                marker = number
        else:
            data = event.get("data")
            payload = data.get("texts", data.get("args")) if isinstance(data, dict) else None
            seen += len(payload) if isinstance(payload, list) and "seq0" in event else 1
            if seen >= seed:
                return number
    return marker or header


def _nth_step_end(path: Path, count: int) -> int:
    """The byte offset after the ``count``-th ``step/end`` event (a bare list's calls are the
    recorder's calls, one ``step/end`` each)."""
    seen = 0
    for _, offset, event in _events(path):
        if event is not None and event.get("type") == "step/end":
            seen += 1
            if seen == count:
                return offset
    return path.stat().st_size


def kept_bytes(scenario: Scenario, index: int, call: int) -> int:
    """How many bytes of script ``index``'s log stay when its call ``call`` is cut."""
    script = scenario.scripts[index]
    assert script.file is not None
    path = Path(script.file)
    if call == 0:
        return _offset_after(path, _lead_line(path, script))
    if script.primary and scenario.sidecar_form == "list":
        return _nth_step_end(path, call)
    entries = script.entries
    if script.primary and scenario.derived_primary is not None:
        entries = scenario.derived_primary
    before = [e for e in entries[:call] if e.lines is not None]
    if call > len(entries):
        return path.stat().st_size
    if not before:
        return _offset_after(path, _lead_line(path, script))
    return _offset_after(path, before[-1].lines[1])  # type: ignore[index]


class RepairRecorder(EpisodeRecorder):
    """``EpisodeRecorder`` that also records sessions from a cut inside their script."""

    def __init__(self, attempt: Path, root: Path, scenario: Scenario) -> None:
        super().__init__(attempt, root, scenario)
        self.cuts: dict[int, int] = {}
        """Per script index, the first call that went upstream."""
        self._kept: dict[str, int] = {}
        self.warnings: list[str] = []
        """What the merge dropped (sidecar patches at or after the primary's cut)."""
        self.removed: list[str] = []
        """Scenario files the merge deletes (a sidecar left with no patch)."""

    def cut(self, script_index: int, call_index: int) -> None:
        """Script ``script_index`` is recorded anew from call ``call_index`` on."""
        self.cuts.setdefault(script_index, call_index)

    def described_cuts(self) -> str:
        """Where each script was recorded anew, e.g. ``script 0 from call #3`` (empty: none)."""
        return ", ".join(f"script {s} from call #{c}" for s, c in sorted(self.cuts.items()))

    def _new_log(self, session: str | None) -> SessionLog:
        index = self._continues.get(session)
        if index is None or index not in self.cuts:
            return super()._new_log(session)
        script = self.scripts[index]
        if script.file is None:
            raise ConfigError(f"{self.root}: script {index} comes from {SIDECAR_NAME} alone, "
                              "with no log to record its new calls into; re-record the "
                              "scenario instead", code=NEW_EPISODES)
        path = Path(script.file)
        generation = _writable_generation(script.file)
        keep = kept_bytes(self.scenario, index, self.cuts[index])
        self._kept[path.name] = keep
        return ContinuedLog(self, self.directory / path.name, session, log_tail(path, keep),
                            primary=script.primary, generation=generation,
                            calls=self.cuts[index])

    def merged_files(self) -> dict[str, bytes]:
        """The scenario's files with every cut log cut and continued (see the module)."""
        out = super().merged_files()
        for log in self.sessions.values():
            keep = self._kept.get(log.path.name)
            if keep is None:
                continue
            old = (self.root / log.path.name).read_bytes()[:keep]
            out[log.path.name] = old + (b"\n" if old and not old.endswith(b"\n") else b"") \
                + log.path.read_bytes()
        return out

    def _sidecar(self) -> str | None:
        cut = self.cuts.get(0) if self.scripts and self.scripts[0].primary else None
        if cut is None:
            return super()._sidecar()
        current = self.scenario.sidecar
        if current is not None and current.form != "list" and not self.primary_failed:
            return self._kept_patches(cut)
        if current is None and not self.primary_failed:
            return None
        served = [entry_to_json(item.entry) for item in self.scripts[0].entries[:cut]]
        return self.redact(render_document(served + self.sidecar.entries))

    def _kept_patches(self, cut: int) -> str | None:
        """The patches document without the patches at or after ``cut`` (None: unchanged)."""
        path = self.root / SIDECAR_NAME
        document = json.loads(path.read_text("utf-8"))
        patches = document.get("patches", []) if isinstance(document, dict) else []
        kept = [p for p in patches if isinstance(p, dict) and int(p.get("at", 0)) < cut]
        for patch in patches:
            if patch not in kept:
                self.warnings.append(
                    f"{SIDECAR_NAME}: the patch at call #{patch.get('at')} of the primary "
                    f"({patch.get('entry', {}).get('kind', '?')}) was dropped: the primary is "
                    f"recorded anew from call #{cut}, so the call it described is gone")
        if len(kept) == len(patches):
            return None
        if not kept:
            self.removed.append(SIDECAR_NAME)
            return None
        return render_document({**document, "patches": kept})


class RepairRecording(EpisodeRecording):
    """A running from-divergence recording: decides which calls go live (``go_live``) and
    answers them, and the calls past the recording, through the recorder."""

    def __init__(self, attempt: Path, root: Path, scenario: Scenario, upstream: str, *,
                 scrub: Scrubber | None = None, cuts: Iterable[CallRef] = (),
                 on_divergence: bool = True) -> None:
        self.recorder: RepairRecorder = RepairRecorder(attempt, root, scenario)
        if scrub is not None:
            self.recorder.scrub = scrub
        self.forced = frozenset((c.script, c.call) for c in cuts)
        self.on_divergence = on_divergence
        try:
            self.proxy = RecordProxy(self.recorder, upstream)
        except BaseException:
            self.recorder.close()
            raise

    def go_live(self, script_index: int, call_index: int, found: Divergence | None) -> bool:
        """The engine's ``go_live`` rule: a diverged call, or a cut asked for."""
        return (self.on_divergence and found is not None) \
            or (script_index, call_index) in self.forced

    def answer(self, over: Overflowed) -> ASGIApp:
        """Forward one call that went live or is past the recording."""
        error = over.error
        if isinstance(error, GoneLiveError) and error.script_index is not None:
            self.recorder.cut(error.script_index, error.call_index)
        return super().answer(over)


def install_repair(recorder: RepairRecorder, scenario: Path, attempt: Path) -> list[Path]:
    """Validate the merged result (a trial load), then install it beside backups of what it
    replaces and delete the attempt; returns the backups (ReplayError: nothing installed)."""
    from .staging import check_loads, discard_attempt, install

    files = recorder.merged_files()
    check_loads(scenario, attempt, files, recorder.removed)
    backups = install(scenario, files, recorder.removed)
    discard_attempt(attempt)
    return backups


class RepairSession:
    """One repair of a scenario directory: the attempt beside it, the recording, and the end
    (install, or discard) — what ``record --from-divergence`` and the debugger drive."""

    def __init__(self, root: Path, scenario: Scenario, upstream: str, *,
                 scrub: Scrubber | None = None, cuts: Iterable[CallRef] = (),
                 on_divergence: bool = True) -> None:
        from .staging import attempt_directory, discard_attempt

        self.root = root
        self.scenario = scenario
        self.attempt = attempt_directory(root)
        try:
            self.recording = RepairRecording(self.attempt, root, scenario, upstream, scrub=scrub,
                                             cuts=cuts, on_divergence=on_divergence)
        except BaseException:
            discard_attempt(self.attempt)
            raise
        self.upstream = self.recording.proxy.upstream

    @property
    def recorder(self) -> RepairRecorder:
        """The recorder writing the attempt."""
        return self.recording.recorder

    def attach(self, server: ReplayServer, run: str) -> None:
        """Let ``run`` of ``server`` go live through this repair."""
        server.set_overflow(run, self.recording.answer, self.recording.dialects)
        server.engine.set_go_live(run, self.recording.go_live)

    def detach(self, server: ReplayServer, run: str) -> None:
        """``run`` replays only again."""
        server.set_overflow(run, None)
        server.engine.set_go_live(run, None)

    async def close(self) -> None:
        """Finish the attempt's logs and let go of the upstream."""
        await self.recording.close()

    @property
    def recorded(self) -> bool:
        """Whether anything went upstream (or was dropped, or failed to be written)."""
        recorder = self.recorder
        return bool(recorder.reports or recorder.dropped or recorder.failure is not None)

    def problems(self) -> list[str]:
        """Why the result must not be installed (empty: every upstream call succeeded)."""
        from .staging import attempt_problems

        return attempt_problems(self.recorder) if self.recorded else []

    def preview(self) -> Scenario:
        """The repaired scenario as it would be installed, loaded from a copy inside the
        attempt (ReplayError when it would not load)."""
        import shutil

        from ..scenario.loading import load_scenario
        from .directory import existing_scenario_files

        files = self.recorder.merged_files()
        trial = self.attempt / ".review"
        shutil.rmtree(trial, ignore_errors=True)
        trial.mkdir()
        for path in existing_scenario_files(self.root):
            if path.name not in self.recorder.removed:
                (trial / path.name).write_bytes(path.read_bytes())
        for name, data in files.items():
            (trial / name).write_bytes(data)
        return load_scenario(trial)

    def install(self) -> list[Path]:
        """Validate and install the result beside backups; returns them (ReplayError: nothing
        installed, the attempt kept)."""
        import shutil

        shutil.rmtree(self.attempt / ".review", ignore_errors=True)
        return install_repair(self.recorder, self.root, self.attempt)

    def discard(self) -> None:
        """Drop the attempt: the scenario stays as it is."""
        from .staging import discard_attempt

        discard_attempt(self.attempt)
