"""Recording from a test, safely: into an attempt directory beside the scenario, which replaces
(or, for ``new_episodes``, extends) the scenario only when every call succeeded upstream and
the test passed, or when the user asked to keep failures. Otherwise the scenario is untouched
and the test fails naming the kept attempt.

``WholeRecording`` records a scenario anew (modes ``once`` and ``all``); ``NewEpisodes``
records the calls a replay run makes past its recording (``new_episodes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ReplayError

if TYPE_CHECKING:
    from ..record import Scrubber
    from ..record.episodes import EpisodeRecorder, EpisodeRecording
    from ..record.writer import ScenarioRecorder
    from ..scenario.loading import Scenario
    from ..server import ReplayServer
    from .servers import Hosted, ServerPool

KEEP_FAILURES = "--dsh-replay-record-failures"


@dataclass(slots=True)
class Outcome:
    """What became of a recording: lines that fail the test, or notes beside a passing one."""

    failure: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _settle(recorder: ScenarioRecorder, attempt: Path, what: str, shown: Callable[[Path], str], *,
            test_failed: bool, keep_failures: bool, stopped: ReplayError | None,
            apply: Callable[[], list[str]]) -> Outcome:
    """Judge a finished attempt and apply it (``apply`` returns its notes, raising ReplayError
    when the result would not load) or keep it; ``what`` names it in messages."""
    from ..record.staging import attempt_problems, discard_attempt

    problems = attempt_problems(recorder)
    if stopped is not None and recorder.failure is None:
        problems.append(f"the recording stopped: [{stopped.code}] {stopped.message}")
    if not recorder.reports and not recorder.dropped and stopped is None:
        discard_attempt(attempt)  # nothing was written to keep
        return Outcome(failure=[f"dsh-replay: {what} recorded nothing: the test sent no model "
                                "call through the recorder (point its client at "
                                "dsh_replay.base_url, or let it read OPENAI_BASE_URL)"])
    if test_failed:
        problems.append("the test failed")
    if not problems or keep_failures:
        try:
            notes = apply()
        except ReplayError as exc:
            problems.append(f"the result would not load: [{exc.code}] {exc.message}")
        else:
            if problems:
                notes.insert(0, f"dsh-replay: {what} was kept as asked ({KEEP_FAILURES}) "
                                f"although: {'; '.join(problems)}")
            return Outcome(notes=notes)
    return Outcome(failure=[
        f"dsh-replay: {what} failed, so the scenario is unchanged:",
        *(f"  {problem}" for problem in problems),
        f"  the failed attempt is kept in {shown(attempt)} (read it, then delete it); record "
        f"again, or pass {KEEP_FAILURES} to keep a recording like it"])


class WholeRecording:
    """A scenario recorded anew through the recorder proxy, into an attempt directory."""

    def __init__(self, pool: ServerPool, scenario: Path, upstream: str,
                 scrub: Scrubber | None) -> None:
        from ..record.directory import ensure_not_recording
        from ..record.staging import attempt_directory, discard_attempt

        ensure_not_recording(scenario)  # another recorder writing it would race the promotion
        self.scenario = scenario
        self.attempt = attempt_directory(scenario)
        try:
            recording, hosted = pool.start_recording(self.attempt, upstream, scrub=scrub)
        except BaseException:
            discard_attempt(self.attempt)
            raise
        self._hosted: Hosted | None = hosted
        self.url = recording.url.rstrip("/")
        self.recorder = recording.recorder

    def conclude(self, pool: ServerPool, shown: Callable[[Path], str], *, test_failed: bool,
                 keep_failures: bool) -> Outcome:
        """Stop recording, then replace the scenario with the attempt or keep the attempt."""
        from ..record.staging import promote

        hosted, self._hosted = self._hosted, None
        if hosted is None:
            return Outcome()
        stopped: ReplayError | None = None
        try:
            pool.stop_recording(hosted)
        except ReplayError as exc:
            stopped = exc

        def apply() -> list[str]:
            from ..scenario.loading import load_scenario

            load_scenario(self.attempt)  # what replaces the scenario must load
            backups = promote(self.attempt, self.scenario)
            pool.recorded.add(self.scenario)
            pool.changed(self.scenario)
            return [f"dsh-replay: recorded {shown(self.scenario)}"
                    + (f"; the previous files are kept as {', '.join(b.name for b in backups)}"
                       if backups else "")]

        return _settle(self.recorder, self.attempt, f"the recording of {shown(self.scenario)}",
                       shown, test_failed=test_failed, keep_failures=keep_failures,
                       stopped=stopped, apply=apply)


class NewEpisodes:
    """A replay run's calls past its recording, forwarded upstream and recorded."""

    def __init__(self, pool: ServerPool, server: ReplayServer, scenario: Path, run: str,
                 upstream: str, scrub: Scrubber | None) -> None:
        from ..record.directory import ensure_not_recording
        from ..record.staging import attempt_directory, discard_attempt

        loaded = server.scenario
        assert loaded is not None
        ensure_not_recording(scenario)
        self.scenario = scenario
        self.run = run
        self.attempt = attempt_directory(scenario)

        def begin() -> EpisodeRecording:
            return self._begin(server, loaded, upstream, scrub)

        try:
            self.episodes: EpisodeRecording | None = pool.loop.call(begin)
        except BaseException:
            discard_attempt(self.attempt)
            raise
        self._server = server

    def _begin(self, server: ReplayServer, loaded: Scenario, upstream: str,
               scrub: Scrubber | None) -> EpisodeRecording:
        """Open the recording and forward the run's calls past its scripts to it (on the loop)."""
        from ..record.episodes import EpisodeRecording

        episodes = EpisodeRecording(self.attempt, self.scenario, loaded, upstream, scrub=scrub)
        server.set_overflow(self.run, episodes.answer, episodes.dialects)
        return episodes

    def _end(self, server: ReplayServer) -> None:
        """Stop forwarding the run's calls (on the loop)."""
        server.set_overflow(self.run, None)

    def _what(self, shown: Callable[[Path], str]) -> str:
        """What the recording is, for the failure text."""
        return f"the new calls recorded for {shown(self.scenario)}"

    def _apply(self, pool: ServerPool, shown: Callable[[Path], str],
               recorder: EpisodeRecorder) -> list[str]:
        """Install what was recorded; the lines that say so."""
        from ..record.staging import check_loads, discard_attempt, install

        files = recorder.merged_files()
        check_loads(self.scenario, self.attempt, files)
        backups = install(self.scenario, files)
        discard_attempt(self.attempt)
        pool.changed(self.scenario)
        return [f"dsh-replay: appended {len(recorder.reports)} new call(s) to "
                f"{shown(self.scenario)} ({', '.join(sorted(files))}); the previous files "
                f"are kept as {', '.join(b.name for b in backups)}"]

    def conclude(self, pool: ServerPool, shown: Callable[[Path], str], *, test_failed: bool,
                 keep_failures: bool) -> Outcome:
        """Stop forwarding; install the new calls into the scenario, or keep the attempt."""
        from ..record.staging import discard_attempt

        episodes, self.episodes = self.episodes, None
        if episodes is None:
            return Outcome()
        server = self._server

        async def stop() -> None:
            self._end(server)
            await episodes.close()

        pool.loop.run(stop())
        recorder = episodes.recorder
        if not recorder.reports and not recorder.dropped and recorder.failure is None:
            discard_attempt(self.attempt)  # the replay needed nothing new
            return Outcome()
        return _settle(recorder, self.attempt, self._what(shown), shown, test_failed=test_failed,
                       keep_failures=keep_failures, stopped=None,
                       apply=lambda: self._apply(pool, shown, recorder))
