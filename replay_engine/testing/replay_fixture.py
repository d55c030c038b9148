"""The ``dsh_replay`` fixture's object: the scenarios one test is served, the marked one first,
what each is served as (replayed, recorded, debugged), and the environment that points the
test's clients at the first one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..engine import BindMode
from .clients import InProcessClients

if TYPE_CHECKING:
    from ..engine import ReplayEngine
    from ..record import Scrubber
    from .recording import Outcome
    from .scenario_run import Mode, ScenarioRun
    from .servers import Debugger, ServerPool
    from .settings import Settings

KEYLESS = "dsh-replay-keyless"
"""The API key a replayed test's clients get when none is set (the replay needs none)."""
CONFIG_FIXTURE = "dsh_replay_config"


def run_id(nodeid: str) -> str:
    """The run a test replays in: its node id made safe for one URL path segment, made unique
    by a short hash (``tests/test_a.py::test_x[1]`` → ``tests-test_a.py-test_x-1-1a2b3c4d``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", nodeid).strip("-.")[-80:].lstrip("-.")
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else digest


class DshReplay(InProcessClients):
    """The ``dsh_replay`` fixture: the scenarios one test is served, the marked one first."""

    def __init__(self, request: pytest.FixtureRequest, settings: Settings,
                 pool: ServerPool) -> None:
        self._request = request
        self._settings = settings
        self._pool = pool
        self._runs: dict[Path, ScenarioRun] = {}
        self._env: dict[str, str | None] = {}
        self._allow_unconsumed = False
        self._scrub: Scrubber | None = None
        self._scrub_read = False
        self.failed_reported = False

    def serve(self, scenario: str | os.PathLike[str] | None = None, *, consumed: bool = True,
              strict: bool | None = None, bind: BindMode = "content") -> ScenarioRun:
        """Serve a scenario directory to this test (relative to the test file's directory;
        None: the test's default location, ``scenarios/<module>/<test name>/``).

        The first scenario served also sets ``OPENAI_BASE_URL`` and ``ANTHROPIC_BASE_URL``
        (and a placeholder API key where none is set, when replaying) for the test.
        """
        from .scenario_run import ScenarioRun
        from .settings import default_scenario

        node = self._request.node
        if scenario is None:
            directory = default_scenario(node, self._settings.scenario_root)
        else:
            directory = Path(scenario)
            if not directory.is_absolute():
                directory = Path(node.path).parent / directory
        directory = directory.resolve()
        known = self._runs.get(directory)
        if known is not None:
            return known
        run = ScenarioRun(directory, self._mode(directory),
                          shown=self.shown, consumed=consumed,
                          strict=self._settings.strict if strict is None else strict,
                          bind=bind, scrub=self._scrubber())
        self._runs[directory] = run
        if run.mode == "debug":
            _end_progress_line(self._request.config)
        failure: str | None = None
        try:
            run.start(self._pool, self._settings, run_id(node.nodeid), self._ready_dir)
        except Exception as exc:
            del self._runs[directory]
            run.finish(self._pool)
            failure = self._start_failure(directory, exc, run.mode)
        if failure is not None:  # failed outside the handler: reported once, not chained
            pytest.fail(failure, pytrace=False)
        if len(self._runs) == 1:
            self._point_clients(run)
        return run

    def _mode(self, directory: Path) -> Mode:
        """What the scenario is served as, by the session's options (the directory is looked
        at only when recording may depend on what it holds)."""
        from .servers import holds_scenario

        settings = self._settings
        if settings.debug is not None:  # one debugger owns the terminal: the first scenario's
            return "replay" if self._runs else "debug"
        if settings.record == "none" or directory in self._pool.recorded:
            return "replay"  # a scenario recorded earlier in this session replays
        if settings.record == "all" or not holds_scenario(directory):
            return "record"
        return "episodes" if settings.record in ("new_episodes", "from_divergence") \
            else "replay"

    def _scrubber(self) -> Scrubber | None:
        """The scrub the ``dsh_replay_config`` fixture asks for (None when it asks none; an
        empty config, the default, loads nothing of the recorder)."""
        if not self._scrub_read:
            config = self._request.getfixturevalue(CONFIG_FIXTURE)
            if config:
                from ..errors import ReplayError
                from ..record.scrub import Scrubber

                failure: str | None = None
                try:
                    scrub = Scrubber.from_config(config, f"the {CONFIG_FIXTURE} fixture")
                except ReplayError as exc:
                    failure = f"dsh-replay: [{exc.code}] {exc.message}"
                if failure is not None:  # outside the handler: reported once, not chained
                    pytest.fail(failure, pytrace=False)
                self._scrub = scrub if scrub.active else None
            self._scrub_read = True
        return self._scrub

    def _ready_dir(self) -> Path:
        """The test's own directory for hang readyFiles (made in its ``tmp_path``)."""
        directory: Path = self._request.getfixturevalue("tmp_path") / "dsh-replay-ready"
        directory.mkdir(exist_ok=True)
        return directory

    def shown(self, path: Path) -> str:
        """``path`` as reports show it (relative to where pytest started, when below it)."""
        from .diagnosis import display_path

        return display_path(path, self._settings.base)

    def _start_failure(self, directory: Path, exc: Exception, mode: Mode) -> str:
        from ..errors import ReplayError
        from .servers import holds_scenario

        shown = self.shown(directory)
        if isinstance(exc, ReplayError):
            text = f"dsh-replay: cannot serve {shown}: [{exc.code}] {exc.message}"
        else:
            text = f"dsh-replay: cannot serve {shown}: {exc}"
        if mode != "record" and not holds_scenario(directory):  # recording it failed itself
            test = shlex.quote(self._test_argument())
            text += ("\n  record it first: pytest --dsh-replay-record=once --dsh-replay-upstream "
                     f"URL {test} (or dsh-replay record {shlex.quote(shown)} --upstream URL)")
        return text

    def _test_argument(self) -> str:
        """This test as a pytest started where this one was selects it."""
        from .diagnosis import rerun_argument

        node = self._request.node
        return rerun_argument(Path(node.path), node.nodeid, self._settings.base)

    def _point_clients(self, run: ScenarioRun) -> None:
        values = {"OPENAI_BASE_URL": run.base_url, "ANTHROPIC_BASE_URL": run.anthropic_base_url}
        if run.mode in ("replay", "debug"):  # recording sends the real key upstream
            for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
                if not os.environ.get(key):
                    values[key] = KEYLESS
        for key, value in values.items():
            self._env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    @property
    def base(self) -> Path:
        """The directory pytest was started in (paths in reports are relative to it)."""
        return self._settings.base

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
        pytest.fail("dsh-replay: dsh_replay serves no scenario to this test: mark it with "
                    "@pytest.mark.dsh_replay('DIR') or call dsh_replay.serve('DIR') first",
                    pytrace=False)

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

    @property
    def scenario(self) -> Path:
        """The primary scenario's directory."""
        return self.primary.scenario

    # -- driven by the plugin ------------------------------------------------------------

    def report(self, *, failed: bool = False) -> list[str]:
        """Every served scenario's problems (with ``failed``, also a lone first divergence);
        a debugger is waited for first: its verdict comes when the user quits it."""
        lines: list[str] = []
        for run in self._runs.values():
            if self._allow_unconsumed:
                run.allow_unconsumed()
            lines.extend(run.report(self._pool, failed=failed))
        if any(run.mode == "debug" for run in self._runs.values()):  # it was waited for
            _resume_progress_line(self._request.config, self._request.node.nodeid)
        return lines

    def conclude(self, *, test_failed: bool) -> Outcome:
        """The test body ended: every recording kept or dropped, the debugger quit."""
        from .recording import Outcome

        outcome = Outcome()
        for run in self._runs.values():
            one = run.conclude(self._pool, test_failed=test_failed,
                               keep_failures=self._settings.record_failures)
            outcome.failure.extend(one.failure)
            outcome.notes.extend(one.notes)
        return outcome

    def hint(self) -> list[str]:
        """How to open each replayed scenario in the debugger (none for recordings)."""
        from .diagnosis import debugger_hint

        test = self._test_argument()
        lines: list[str] = []
        for run in self._runs.values():
            if run.mode != "record":
                lines.extend(debugger_hint(run.scenario, test, self._settings.base))
        return lines

    def close(self) -> None:
        """Free every run and restore the environment; raises when a recording the test
        never concluded had to be kept as a failed attempt."""
        errors: list[BaseException] = []
        kept: list[str] = []
        for run in reversed(list(self._runs.values())):
            try:
                kept.extend(run.finish(self._pool))
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
        if kept:
            pytest.fail("\n".join(kept), pytrace=False)


@contextlib.contextmanager
def _terminal(config: pytest.Config) -> Iterator[Any]:
    """pytest's terminal reporter, with the output capture suspended meanwhile (during a test
    it captures what the reporter writes too)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
        yield reporter
        if reporter is not None:
            reporter.flush()


def _end_progress_line(config: pytest.Config) -> None:
    """Before a debugger takes the terminal: end pytest's progress line, so the debugger's
    verdict (printed when it is quit) gets lines of its own. pytest writes nothing else until
    the test's report, which waits for the debugger to be quit; the test's own output stays
    captured, so it never lands on the debugger's screen."""
    with _terminal(config) as reporter:
        if reporter is not None:
            reporter.ensure_newline()


def _resume_progress_line(config: pytest.Config, nodeid: str) -> None:
    """Once the debugger let go of the terminal: start pytest's progress line anew (the verbose
    report starts its own line by itself)."""
    with _terminal(config) as reporter:
        if reporter is not None and reporter.showfspath and not reporter.showlongtestinfo:
            reporter.write_fspath_result(nodeid, "")
