"""One scenario as one test is served it: replayed in a run of its own, replayed with the calls
past the recording recorded (``new_episodes``) or with each session recorded from where it
left the recording (``from_divergence``), recorded anew, or served by a debugger on the
terminal; and, when the test ends, what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..engine import BindMode

if TYPE_CHECKING:
    from ..engine import ReplayEngine
    from ..engine.events import EngineEvent
    from ..models import SessionScript
    from ..record import Scrubber
    from .diagnosis import RefusedCall
    from .recording import NewEpisodes, Outcome, WholeRecording
    from .repairing import FromDivergence
    from .servers import Debugger, ServerPool
    from .settings import Settings

Mode = Literal["replay", "episodes", "record", "debug"]
SETTLE_S = 2.0
"""How long a report waits for the test's calls still in flight to end: a client that left
just before the test ended (a closed stream, a read timeout) ends its call a few turns of the
servers' loop later, and the verdict must not call that call in flight."""
Facts = tuple["list[SessionScript]", "dict[str, Any] | None", "list[str]", "list[str]"]
"""What a report is made of: scripts, the first divergence (JSON), the unconsumed problems
(docs/format.md#binding), the verdict's others."""


class ScenarioRun:
    """One scenario as one test sees it: where to point clients, and what serves it."""

    def __init__(self, scenario: Path, mode: Mode, *, shown: Callable[[Path], str],
                 consumed: bool, strict: bool = False, bind: BindMode = "content",
                 scrub: Scrubber | None = None) -> None:
        self.scenario = scenario
        """The scenario directory (absolute)."""
        self.mode: Mode = mode
        """``replay``, ``episodes`` (replay, recording what is past it), ``record`` (through
        the recorder) or ``debug`` (from a debugger process)."""
        self.consumed = consumed
        """Whether the test fails unless it consumed every recorded call."""
        self.strict = strict
        """Whether a request that left the recording fails the test."""
        self.bind: BindMode = bind
        """How new sessions claim scripts (``content`` or ``order``)."""
        self.url = ""
        """The server's root URL."""
        self.run: str | None = None
        """The run this test's calls bind in (None while recording)."""
        self.engine: ReplayEngine | None = None
        """The engine serving the scenario (None while recording or in the debugger)."""
        self.debugger: Debugger | None = None
        """The debugger process (with ``--dsh-replay-debug``)."""
        self.ready_dir: Path | None = None
        """Where this test's relative hang readyFiles are created (a directory of the test's
        own ``tmp_path``, also under the debugger; None while recording)."""
        self.recording: WholeRecording | None = None
        self.episodes: NewEpisodes | FromDivergence | None = None
        self._shown = shown
        self._scrub = scrub
        self._refused: list[RefusedCall] = []
        self._scrub_failures: list[str] = []
        self._unsubscribe: Any = None
        self._work: Path | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/runs/<test id>/v1``) for this test's clients."""
        if self.run is None:
            return f"{self.url}/v1"
        return f"{self.url}/runs/{self.run}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for Anthropic clients (they add ``/v1/messages`` themselves)."""
        return self.url if self.run is None else f"{self.url}/runs/{self.run}"

    def allow_unconsumed(self) -> None:
        """Let the test end with recorded calls of this scenario left unconsumed."""
        self.consumed = False

    # -- lifecycle, driven by the plugin ---------------------------------------------------

    def start(self, pool: ServerPool, settings: Settings, run: str,
              ready_dir: Callable[[], Path]) -> None:
        """Serve the scenario to the test (record, replay or open the debugger)."""
        if self.mode == "record":
            from .recording import WholeRecording

            assert settings.upstream is not None
            self.recording = WholeRecording(pool, self.scenario, settings.upstream, self._scrub)
            self.url = self.recording.url
        elif self.mode == "debug":
            from ..engine import DEFAULT_RUN
            from ..server.options import ServeOptions
            from .servers import Debugger, debugger_flags

            assert settings.debug is not None
            self._work = Path(tempfile.mkdtemp(prefix="dsh-replay-debug-"))
            self.ready_dir = ready_dir()  # the debugger makes the markers where a replay would
            self.debugger = Debugger(self.scenario, self._work, debugger_flags(
                settings.debug, settings.breaks, ServeOptions(strict=self.strict, bind=self.bind,
                                                              ready_dir=self.ready_dir)))
            try:  # the debugger writes its URL once the scenario loaded: the test waits for it
                self.url = self.debugger.wait_for_url()
            except RuntimeError:
                self._raise_load_error()  # quit before it loaded: fail as a replay would
                raise
            self.run = DEFAULT_RUN
        else:
            self._start_replay(pool, run, ready_dir)
            if self.mode == "episodes":
                from .recording import NewEpisodes
                from .repairing import FromDivergence

                assert settings.upstream is not None
                server = pool.server(self.scenario, self.bind)
                kind = FromDivergence if settings.record == "from_divergence" else NewEpisodes
                self.episodes = kind(pool, server, self.scenario, run, settings.upstream,
                                     self._scrub)

    def _raise_load_error(self) -> None:
        """Raise the scenario's own load error, if it has one (what a plain replay reports)."""
        from ..errors import ReplayError
        from ..scenario.loading import load_scenario

        try:
            load_scenario(self.scenario)
        except ReplayError:
            raise
        except OSError:
            pass  # the debugger's own failure says more

    def _start_replay(self, pool: ServerPool, run: str, ready_dir: Callable[[], Path]) -> None:
        from ..engine import events as ev
        from .diagnosis import RefusedCall

        server = pool.server(self.scenario, self.bind)
        engine = self.engine = server.engine
        self.url, self.run = server.url, run
        where = self.ready_dir = ready_dir() if pool.has_ready_files(self.scenario) else None
        refused = self._refused
        scrub = self._live_scrub()

        def observe(event: EngineEvent) -> None:
            if isinstance(event, ev.BindingFailed) and event.run == run:
                refused.append(RefusedCall(event.session, event.code, event.message, event.messages,
                                           event.script_index, event.call_index, event.dialect,
                                           event.retry))

        def begin() -> None:  # on the loop before any call of the test: no need to wait
            engine.forget(run)  # a rerun of the same test starts from a fresh run
            engine.set_ready_dir(run, where)
            engine.configure_run(run, scrub=scrub)  # compare live requests as they were recorded
            self._unsubscribe = engine.subscribe(observe, chunks=False)

        pool.loop.post(begin)

    def _live_scrub(self) -> Callable[[Any], Any] | None:
        """The scrub each live request gets before it is compared; a hook that fails on one
        (the call is answered 500) is kept for the report, which an agent that swallows the
        error would otherwise never show."""
        from ..errors import ReplayError

        scrubber, failures = self._scrub, self._scrub_failures
        if scrubber is None or not scrubber.active:
            return None

        def live(messages: Any) -> Any:
            try:
                return scrubber.live(messages)
            except ReplayError as exc:
                line = (f"a live request could not be scrubbed, so its call was answered 500: "
                        f"[{exc.code}] {exc.message}")
                if line not in failures:
                    failures.append(line)
                raise

        return live

    def report(self, pool: ServerPool | None, *, failed: bool = False) -> list[str]:
        """Every problem of this test's run (empty when the replay went as recorded); with
        ``failed`` (the test failed by itself) the first divergence also comes alone."""
        from ..errors import ReplayError
        from .diagnosis import failure_report

        if self.mode == "record":
            return []
        if self.mode == "debug":
            try:
                scripts, first, unconsumed, problems = self._debugger_facts()
            except ReplayError as exc:  # changed since the debugger quit, or never loaded
                return [f"dsh-replay: cannot report on {self._shown(self.scenario)}: "
                        f"[{exc.code}] {exc.message}"]
            except (OSError, ValueError, KeyError) as exc:
                assert self.debugger is not None
                return [f"dsh-replay: the debugger (status {self.debugger.process.returncode}) "
                        f"left no verdict in {self.debugger.verdict_file} ({exc}); it writes "
                        "one when it is quit with q"]
        else:
            assert pool is not None and self.engine is not None and self.run is not None
            engine, run = self.engine, self.run
            consumed, strict, refused = self.consumed, self.strict, self._refused
            scrub_failures = self._scrub_failures

            _settle(pool, engine, run)

            def facts() -> Facts:
                # refusals come with their own detail below (the live call and its diff)
                unconsumed = engine.consumed_problems(run) if consumed else []
                problems = [*scrub_failures, *engine.verdict_problems(
                    run, strict=strict, unconsumed=False, refused=False)]
                if not (unconsumed or problems or refused or failed):
                    return [], None, [], []  # nothing to report
                return engine.scripts, engine.first_divergence_json(run), unconsumed, problems

            scripts, first, unconsumed, problems = pool.loop.call(facts)
            if not (scripts or refused or unconsumed or problems):
                return []  # the replay went as recorded
        return failure_report(self._shown(self.scenario), self.run, scripts, first,
                              list(self._refused), unconsumed, problems, failed=failed)

    def _debugger_facts(self) -> Facts:
        """The verdict the debugger wrote when the user quit it (waited for here: the test
        is reported once the debugger let go of the terminal)."""
        import json

        from ..scenario.loading import load_scenario

        assert self.debugger is not None
        self.debugger.wait()
        verdict = json.loads(self.debugger.verdict_file.read_text(encoding="utf-8"))
        unconsumed = [str(p) for p in verdict["unconsumed"]]
        problems = [str(p) for p in verdict["problems"] if str(p) not in unconsumed]
        return (load_scenario(self.scenario).scripts, verdict.get("firstDivergence"),
                unconsumed if self.consumed else [], problems)

    def conclude(self, pool: ServerPool | None, *, test_failed: bool,
                 keep_failures: bool) -> Outcome:
        """The test body ended and was judged: keep or drop what was recorded. Returns what
        fails the test, or notes beside it."""
        from .recording import Outcome

        if pool is not None and self.recording is not None:
            return self.recording.conclude(pool, self._shown, test_failed=test_failed,
                                           keep_failures=keep_failures)
        if pool is not None and self.episodes is not None:
            return self.episodes.conclude(pool, self._shown, test_failed=test_failed,
                                          keep_failures=keep_failures)
        return Outcome()

    def finish(self, pool: ServerPool | None) -> list[str]:
        """Free the run and stop what still runs (a recording the test never concluded is
        kept as a failed attempt: the lines say where)."""
        lines: list[str] = []
        try:
            if pool is not None and (self.recording is not None or self.episodes is not None):
                lines = self.conclude(pool, test_failed=True, keep_failures=False).failure
            if self.engine is not None and pool is not None and self.run is not None:
                engine, run = self.engine, self.run

                def end() -> None:  # runs before the next test's work reaches the loop
                    if self._unsubscribe is not None:
                        self._unsubscribe()
                    engine.forget(run)  # nothing of the run stays behind on a shared server

                pool.loop.post_later(end)
        finally:
            if self.debugger is not None:
                self.debugger.close()
            if self._work is not None:
                shutil.rmtree(self._work, ignore_errors=True)
        return lines


def _settle(pool: ServerPool, engine: ReplayEngine, run: str) -> None:
    """Wait (up to ``SETTLE_S``) until no call of ``run`` streams or hangs; a call still going
    then is reported in flight. Only a test that leaves a call going waits at all: the wait
    ends on the engine's event of the last such call ending, not on a poll."""
    def going() -> bool:
        return any(b.status in ("streaming", "hanging") for b in engine.state(run).bindings)

    from ..engine import events as ev

    ends = (ev.CallFinished, ev.CallFailed, ev.CallCancelled)  # then a call neither streams nor hangs

    async def settled() -> None:
        if not going():
            return
        done = asyncio.Event()

        def seen(event: EngineEvent) -> None:
            if type(event) in ends and event.run == run and not going():
                done.set()

        unsubscribe = engine.subscribe(seen, chunks=False)
        try:
            if going():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), SETTLE_S)
        finally:
            unsubscribe()

    pool.loop.run(settled())

