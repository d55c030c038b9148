"""The pytest plugin: replay a recorded scenario to the code under test, one run per test.

``@pytest.mark.dsh_replay("scenarios/foo")`` (or ``dsh_replay.serve("scenarios/foo")`` in a
test) serves the scenario from one server per pytest process, under a run of the test's own
(``/runs/<test id>/``), so tests and xdist workers never share bindings. When the test ends it
fails with every binding error and unconsumed call, saying where the agent left the
recording and how to open the scenario in the debugger. ``--dsh-replay-record`` records the
marked scenarios through a proxy instead, and ``--dsh-replay-debug`` serves each test from a
``dsh-replay-tui`` on the terminal so its calls can be stepped through.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from .clients import InProcessClients

if TYPE_CHECKING:
    from ..engine import ReplayEngine
    from ..engine.events import EngineEvent
    from ..models import SessionScript
    from .diagnosis import RefusedCall
    from .servers import Debugger, Hosted, ServerPool

Mode = Literal["replay", "record", "debug"]
MARKER = "dsh_replay"
KEYLESS = "dsh-replay-keyless"
"""The API key a replayed test's clients get when none is set (the replay needs none)."""

_POOL = pytest.StashKey["ServerPool"]()
_SETTINGS = pytest.StashKey["Settings"]()
_ACTIVE = pytest.StashKey["DshReplay"]()


class Settings:
    """The command-line choices of this pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        record = config.getoption("dsh_replay_record")
        upstream = config.getoption("dsh_replay_upstream")
        self.debug: bool = bool(config.getoption("dsh_replay_debug"))
        self.strict: bool = bool(config.getoption("dsh_replay_strict"))
        self.record: str | None = record
        self.upstream: str | None = upstream.rstrip("/") if upstream else None
        self.base = Path(config.invocation_params.dir)
        if record is not None and not upstream:
            raise pytest.UsageError("--dsh-replay-record needs --dsh-replay-upstream URL: the "
                                    "provider (OpenAI-compatible base URL) to record from")
        if upstream and record is None:
            raise pytest.UsageError("--dsh-replay-upstream is used only when recording; add "
                                    "--dsh-replay-record (or --dsh-replay-record=missing)")
        if record is not None and self.debug:
            raise pytest.UsageError("--dsh-replay-debug replays; it cannot be combined with "
                                    "--dsh-replay-record")
        if self.debug and getattr(config.option, "numprocesses", None):
            raise pytest.UsageError("--dsh-replay-debug opens the debugger on this terminal; run "
                                    "one test without -n")


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options."""
    group = parser.getgroup("dsh-replay", "replaying recorded LLM sessions (dsh-replay)")
    group.addoption(
        "--dsh-replay-record", dest="dsh_replay_record", nargs="?", const="all", default=None,
        choices=("all", "missing"),
        help="record the scenarios of @pytest.mark.dsh_replay tests from the upstream instead of "
             "replaying them: all of them (re-recorded ones keep .bak copies), or =missing: only "
             "those whose directory holds no scenario yet. Write =all or put it after the paths.")
    group.addoption("--dsh-replay-upstream", dest="dsh_replay_upstream", default=None,
                    metavar="URL", help="the provider base URL to record from (with --dsh-replay-record)")
    group.addoption("--dsh-replay-strict", dest="dsh_replay_strict", action="store_true",
                    help="fail every replayed test whose agent left the recording (a request whose "
                         "new messages differ from the recorded ones, an unrecorded retry), as "
                         "@pytest.mark.dsh_replay(..., strict=True) does for one test")
    group.addoption("--dsh-replay-debug", dest="dsh_replay_debug", action="store_true",
                    help="serve each test from a dsh-replay-tui on this terminal, to step through "
                         "its calls; the test ends when the debugger is quit")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and check the options."""
    config.addinivalue_line(
        "markers", f"{MARKER}(scenario, consumed=True, strict=False): replay the recorded scenario "
        "directory to the test (relative paths start at the test file's directory); "
        "consumed=False lets the test leave recorded calls unconsumed; strict=True fails it when "
        "the agent's requests leave the recording")
    config.stash[_SETTINGS] = Settings(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop this process's servers."""
    pool = config.stash.get(_POOL, None)
    if pool is not None:
        del config.stash[_POOL]
        pool.close()


def _pool(config: pytest.Config) -> ServerPool:
    pool = config.stash.get(_POOL, None)
    if pool is None:
        from .servers import ServerPool

        pool = config.stash[_POOL] = ServerPool()
    return pool


def run_id(nodeid: str) -> str:
    """The run a test replays in: its node id made safe for one URL path segment, made unique
    by a short hash (``tests/test_a.py::test_x[1]`` → ``tests-test_a.py-test_x-1-1a2b3c4d``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", nodeid).strip("-.")[-80:].lstrip("-.")
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else digest


class ScenarioRun:
    """One scenario as one test sees it: where to point clients, and the engine serving it."""

    def __init__(self, owner: DshReplay, scenario: Path, mode: Mode, *, consumed: bool,
                 strict: bool = False) -> None:
        self._owner = owner
        self.scenario = scenario
        """The scenario directory (absolute)."""
        self.mode: Mode = mode
        """``replay`` (in this process), ``record`` (through the recorder) or ``debug``."""
        self.consumed = consumed
        """Whether the test fails unless it consumed every recorded call."""
        self.strict = strict
        """Whether a request that left the recording fails the test."""
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
        own ``tmp_path``; None while recording or in the debugger, which has its own)."""
        self._refused: list[RefusedCall] = []
        self._unsubscribe: Any = None
        self._recording: Hosted | None = None
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

    def start(self, pool: ServerPool, settings: Settings, nodeid: str,
              ready_dir: Callable[[], Path]) -> None:
        if self.mode == "record":
            assert settings.upstream is not None
            from .servers import holds_scenario

            self.url, self._recording = pool.start_recording(
                self.scenario, settings.upstream, force=holds_scenario(self.scenario))
        elif self.mode == "debug":
            from ..engine import DEFAULT_RUN
            from .servers import Debugger

            self._work = Path(tempfile.mkdtemp(prefix="dsh-replay-debug-"))
            self.debugger = Debugger(self.scenario, self._work)
            self.url = self.debugger.wait_for_url()
            self.run = DEFAULT_RUN
        else:
            self._start_replay(pool, run_id(nodeid), ready_dir)

    def _start_replay(self, pool: ServerPool, run: str, ready_dir: Callable[[], Path]) -> None:
        from ..engine import events as ev
        from .diagnosis import RefusedCall

        server = pool.server(self.scenario)
        engine = self.engine = server.engine
        self.url, self.run = server.url, run
        where = self.ready_dir = ready_dir() if pool.has_ready_files(self.scenario) else None
        refused = self._refused

        def observe(event: EngineEvent) -> None:
            if isinstance(event, ev.BindingFailed) and event.run == run:
                refused.append(RefusedCall(event.session, event.code, event.message, event.messages,
                                           event.script_index, event.call_index))

        def begin() -> None:  # on the loop before any call of the test: no need to wait
            engine.forget(run)  # a rerun of the same test starts from a fresh run
            engine.set_ready_dir(run, where)
            self._unsubscribe = engine.subscribe(observe, chunks=False)

        pool.loop.post(begin)

    def report(self, pool: ServerPool | None, *, failed: bool = False) -> list[str]:
        """Every problem of this test's run (empty when the replay went as recorded); with
        ``failed`` (the test failed by itself) the first divergence also comes alone."""
        from .diagnosis import display_path, failure_report

        if self.mode == "record":
            return []
        if self.mode == "debug":
            import httpx

            try:
                scripts, journal, problems = self._debugger_facts()
            except (httpx.HTTPError, ValueError) as exc:
                return [f"dsh-replay: cannot ask the debugger at {self.url} how the replay went "
                        f"({exc}); was it quit before the test ended?"]
        else:
            assert pool is not None and self.engine is not None and self.run is not None
            engine, run = self.engine, self.run

            consumed, strict, refused = self.consumed, self.strict, self._refused

            def facts() -> tuple[list[SessionScript], list[dict[str, Any]], list[str]]:
                # refusals come with their own detail below (the live call and its diff)
                problems = engine.verdict_problems(run, strict=strict, unconsumed=consumed,
                                                   refused=False)
                if not (problems or refused or failed):
                    return [], [], []  # nothing to report: the journal is not needed
                return engine.scripts, [r.to_json() for r in engine.journal(run)], problems

            scripts, journal, problems = pool.loop.call(facts)
        shown = display_path(self.scenario, self._owner.base)
        return failure_report(shown, self.run, scripts, journal, list(self._refused), problems,
                              failed=failed)

    def _debugger_facts(self) -> tuple[list[SessionScript], list[dict[str, Any]], list[str]]:
        import httpx

        from ..scenario.loading import load_scenario

        prefix = f"{self.url}/runs/{self.run}/replay/v1"
        with httpx.Client(timeout=30) as client:
            journal = client.get(f"{prefix}/journal").json().get("calls", [])
            verdict = client.post(f"{prefix}/assert-consumed").json()
        problems = [str(p) for p in verdict.get("problems", [])]
        return load_scenario(self.scenario).scripts, journal, problems

    def finish(self, pool: ServerPool | None) -> None:
        """Free the run, finish a recording, wait for the debugger to be quit."""
        try:
            if self.mode == "replay" and pool is not None and self.engine is not None:
                engine, run = self.engine, self.run
                assert run is not None

                def end() -> None:  # queued behind the test's calls on the loop: no need to wait
                    if self._unsubscribe is not None:
                        self._unsubscribe()
                    engine.forget(run)  # nothing of the run stays behind on a shared server

                pool.loop.post(end)
            elif self.mode == "record" and pool is not None and self._recording is not None:
                recording, self._recording = self._recording, None
                pool.stop_recording(self.scenario, recording)
            elif self.debugger is not None:
                self.debugger.wait()
        finally:
            if self.debugger is not None:
                self.debugger.close()
            if self._work is not None:
                shutil.rmtree(self._work, ignore_errors=True)


class DshReplay(InProcessClients):
    """The ``dsh_replay`` fixture: the scenarios one test is served, the marked one first."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._config = request.config
        self._runs: dict[Path, ScenarioRun] = {}
        self._env: dict[str, str | None] = {}
        self._allow_unconsumed = False
        self.failed_reported = False

    def serve(self, scenario: str | os.PathLike[str], *, consumed: bool = True,
              strict: bool | None = None) -> ScenarioRun:
        """Serve a scenario directory to this test (relative to the test file's directory).

        The first scenario served also sets ``OPENAI_BASE_URL`` and ``ANTHROPIC_BASE_URL``
        (and a placeholder API key where none is set, when replaying) for the test.
        """
        directory = Path(scenario)
        if not directory.is_absolute():
            directory = Path(self._request.node.path).parent / directory
        directory = directory.resolve()
        known = self._runs.get(directory)
        if known is not None:
            return known
        settings = self._config.stash[_SETTINGS]
        pool = _pool(self._config)
        mode: Mode = "debug" if settings.debug else "replay"
        if settings.record is not None and directory not in pool.recorded:
            from .servers import holds_scenario

            if settings.record == "all" or not holds_scenario(directory):
                mode = "record"
        run = ScenarioRun(self, directory, mode, consumed=consumed,
                          strict=settings.strict if strict is None else strict)
        self._runs[directory] = run
        try:
            run.start(pool, settings, self._request.node.nodeid, self._ready_dir)
        except Exception as exc:
            del self._runs[directory]
            run.finish(pool)
            pytest.fail(self._start_failure(directory, exc), pytrace=False)
        if len(self._runs) == 1:
            self._point_clients(run)
        return run

    def _ready_dir(self) -> Path:
        """The test's own directory for hang readyFiles (made in its ``tmp_path``)."""
        directory: Path = self._request.getfixturevalue("tmp_path") / "dsh-replay-ready"
        directory.mkdir(exist_ok=True)
        return directory

    def _start_failure(self, directory: Path, exc: Exception) -> str:
        from ..errors import ReplayError
        from .diagnosis import display_path

        settings = self._config.stash[_SETTINGS]
        shown = display_path(directory, settings.base)
        if isinstance(exc, ReplayError):
            text = f"dsh-replay: cannot serve {shown}: [{exc.code}] {exc.message}"
        else:
            text = f"dsh-replay: cannot serve {shown}: {exc}"
        from .servers import holds_scenario

        if not holds_scenario(directory):
            text += ("\n  record it first: pytest --dsh-replay-record=missing "
                     "--dsh-replay-upstream URL (or dsh-replay record DIR --upstream URL)")
        return text

    def _point_clients(self, run: ScenarioRun) -> None:
        values = {"OPENAI_BASE_URL": run.base_url, "ANTHROPIC_BASE_URL": run.anthropic_base_url}
        if run.mode != "record":
            for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
                if not os.environ.get(key):
                    values[key] = KEYLESS
        for key, value in values.items():
            self._env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    @property
    def base(self) -> Path:
        """The directory pytest was started in (paths in reports are relative to it)."""
        return self._config.stash[_SETTINGS].base

    def allow_unconsumed(self) -> None:
        """Let this test end with recorded calls unconsumed (every scenario it serves, also
        those served later)."""
        self._allow_unconsumed = True

    @property
    def runs(self) -> list[ScenarioRun]:
        """Every scenario served to this test, in the order served."""
        return list(self._runs.values())

    @property
    def primary(self) -> ScenarioRun:
        """The scenario of the marker, or the first one served."""
        for run in self._runs.values():
            return run
        raise pytest.UsageError(
            "dsh_replay serves no scenario to this test: mark it with "
            "@pytest.mark.dsh_replay('DIR') or call dsh_replay.serve('DIR') first")

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL of the primary scenario (``…/runs/<test id>/v1``)."""
        return self.primary.base_url

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic base URL of the primary scenario (``…/runs/<test id>``)."""
        return self.primary.anthropic_base_url

    @property
    def engine(self) -> ReplayEngine | None:
        """The engine serving the primary scenario (None while recording or debugging)."""
        return self.primary.engine

    @property
    def run(self) -> str | None:
        """The run id of this test."""
        return self.primary.run

    @property
    def ready_dir(self) -> Path | None:
        """Where the primary scenario's relative hang readyFiles are created for this test."""
        return self.primary.ready_dir

    @property
    def debugger(self) -> Debugger | None:
        """The debugger process of the primary scenario (with ``--dsh-replay-debug``)."""
        return self.primary.debugger

    # -- driven by the plugin ------------------------------------------------------------

    def report(self, *, failed: bool = False) -> list[str]:
        """Every served scenario's problems (with ``failed``, also a lone first divergence)."""
        pool = self._config.stash.get(_POOL, None)
        lines: list[str] = []
        for run in self._runs.values():
            if self._allow_unconsumed:
                run.allow_unconsumed()
            lines.extend(run.report(pool, failed=failed))
        return lines

    def hint(self) -> list[str]:
        from .diagnosis import debugger_hint

        settings = self._config.stash[_SETTINGS]
        lines: list[str] = []
        for run in self._runs.values():
            if run.mode != "record":
                lines.extend(debugger_hint(run.scenario, self._request.node.nodeid, settings.base))
        return lines

    def close(self) -> None:
        pool = self._config.stash.get(_POOL, None)
        errors: list[BaseException] = []
        for run in reversed(list(self._runs.values())):
            try:
                run.finish(pool)
            except Exception as exc:  # finish every run, then report the first failure
                errors.append(exc)
        for key, value in self._env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._env.clear()
        if errors:
            raise errors[0]


@pytest.fixture
def dsh_replay(request: pytest.FixtureRequest) -> Iterator[DshReplay]:
    """Replay recorded scenarios to this test: the marker's, and any it ``serve``s."""
    replay = DshReplay(request)
    request.node.stash[_ACTIVE] = replay
    try:
        marker = request.node.get_closest_marker(MARKER)
        if marker is not None:
            scenario, consumed, strict = _marker_arguments(marker)
            replay.serve(scenario, consumed=consumed, strict=strict)
        yield replay
    finally:
        replay.close()


def _marker_arguments(marker: pytest.Mark) -> tuple[str, bool, bool | None]:
    usage = ("use @pytest.mark.dsh_replay('path/to/scenario') or "
             "@pytest.mark.dsh_replay('path/to/scenario', consumed=False, strict=True)")
    if len(marker.args) != 1 or not isinstance(marker.args[0], str | os.PathLike):
        raise pytest.UsageError(f"@pytest.mark.dsh_replay takes one scenario directory; {usage}")
    unknown = sorted(set(marker.kwargs) - {"consumed", "strict"})
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.dsh_replay has no option {', '.join(unknown)}; {usage}")
    consumed = marker.kwargs.get("consumed", True)
    if not isinstance(consumed, bool):
        raise pytest.UsageError(f"@pytest.mark.dsh_replay consumed= must be True or False; {usage}")
    strict = marker.kwargs.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise pytest.UsageError(f"@pytest.mark.dsh_replay strict= must be True or False; {usage}")
    return str(marker.args[0]), consumed, strict


@pytest.fixture(autouse=True)
def _dsh_replay_marked(request: pytest.FixtureRequest) -> None:
    """A marked test is served even when it does not ask for the ``dsh_replay`` fixture."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("dsh_replay")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After the test body: fail it with the replay's problems (binding errors, unconsumed
    calls); a test that failed by itself gets them as a report section instead."""
    try:
        result = yield
    except BaseException:
        replay = item.stash.get(_ACTIVE, None)
        if replay is not None:
            _attach(item, replay, replay.report(failed=True))
        raise
    replay = item.stash.get(_ACTIVE, None)
    if replay is not None:
        lines = replay.report()
        if lines:
            replay.failed_reported = True
            pytest.fail("\n".join([*lines, *replay.hint()]), pytrace=False)
    return result


def _attach(item: pytest.Item, replay: DshReplay, lines: list[str]) -> None:
    replay.failed_reported = True
    text = "\n".join([*lines, *replay.hint()])
    if text:
        item.add_report_section("call", "dsh-replay", text)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    """A failing replayed test's report says how to open its scenario in the debugger."""
    report = yield
    replay = item.stash.get(_ACTIVE, None)
    if replay is not None and report.failed and not replay.failed_reported and replay.runs:
        replay.failed_reported = True
        report.sections.append(("dsh-replay", "\n".join(replay.hint())))
    return report
