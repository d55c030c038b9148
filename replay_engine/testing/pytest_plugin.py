"""The pytest plugin: replay a recorded scenario to the code under test, one run per test.

``@pytest.mark.dsh_replay("scenarios/foo")`` (or ``dsh_replay.serve("scenarios/foo")`` in a
test; with no path, ``scenarios/<module>/<test name>/`` beside the test file) serves the
scenario from one server per pytest process, under a run of the test's own
(``/runs/<test id>/``), so tests and xdist workers never share bindings. When the test ends it
fails with every binding error and unconsumed call, saying where the agent left the recording
and how to open the scenario in the debugger. ``--dsh-replay-record=MODE`` records marked
scenarios through a proxy (safely: beside the scenario, replacing it only when the recording
succeeded), and ``--dsh-replay-debug`` serves each test from a ``dsh-replay-tui`` on the
terminal, held at its first call. The pieces: ``settings`` (options, record modes, default
locations), ``replay_fixture`` (the fixture's object), ``scenario_run`` (one served scenario),
``recording`` (safe re-recording), ``diagnosis`` (the failure text), ``servers``.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .replay_fixture import KEYLESS, DshReplay, run_id
from .settings import Settings, add_options, check_debug_alone

if TYPE_CHECKING:
    from .intercept import Interception
    from .servers import ServerPool

__all__ = ["KEYLESS", "MARKER", "DshReplay", "run_id"]

MARKER = "dsh_replay"
NOTES = "dsh-replay"
"""The report section of the replay's account and of what a test's recording changed."""
_POOL = pytest.StashKey["ServerPool"]()
_SETTINGS = pytest.StashKey[Settings]()
_ACTIVE = pytest.StashKey[DshReplay]()
_INTERCEPTION = pytest.StashKey["Interception"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options."""
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and check the options."""
    config.addinivalue_line(
        "markers", f"{MARKER}(scenario=None, consumed=True, strict=False, bind='content'): replay "
        "the recorded scenario directory to the test (relative paths start at the test file's "
        "directory; none: scenarios/<module>/<test name>/); consumed=False lets the test leave "
        "recorded calls unconsumed; strict=True fails it when the agent's requests leave the "
        "recording; bind='order' binds sessions by first-call order alone")
    settings = config.stash[_SETTINGS] = Settings(config)
    check_debug_alone(config, settings)
    if settings.recording:
        config.pluginmanager.register(RecordedSummary(), "dsh-replay-recorded")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put httpx's transports back and stop this process's servers."""
    interception: Interception | None = config.stash.get(_INTERCEPTION, None)
    if interception is not None:
        del config.stash[_INTERCEPTION]
        interception.remove()
    pool = config.stash.get(_POOL, None)
    if pool is not None:
        del config.stash[_POOL]
        pool.close()


def _pool(config: pytest.Config) -> ServerPool:
    pool = config.stash.get(_POOL, None)
    if pool is None:
        from .servers import ServerPool

        pool = config.stash[_POOL] = ServerPool()
        if not config.stash[_SETTINGS].socket:
            from .intercept import Interception

            interception = config.stash[_INTERCEPTION] = Interception(
                pool.app_at, lambda: pool.loop.loop)
            interception.install()
    return pool


@pytest.fixture
def dsh_replay_config() -> dict[str, Any]:
    """What recordings scrub: override it (in a conftest or a test module) to return
    ``before_record_request``, ``before_record_chunk`` and / or ``filter_text`` rules."""
    return {}


@pytest.fixture
def dsh_replay(request: pytest.FixtureRequest) -> Iterator[DshReplay]:
    """Replay recorded scenarios to this test: the marker's, and any it ``serve``s."""
    replay = DshReplay(request, request.config.stash[_SETTINGS], _pool(request.config))
    request.node.stash[_ACTIVE] = replay
    try:
        marker = request.node.get_closest_marker(MARKER)
        if marker is not None:
            misuse: str | None = None
            try:
                scenario, consumed, strict, bind = _marker_arguments(marker)
            except ValueError as exc:
                misuse = str(exc)
            if misuse is not None:  # the test's set-up fails with this line alone
                pytest.fail(misuse, pytrace=False)
            replay.serve(scenario, consumed=consumed, strict=strict, bind=bind)
        yield replay
    finally:
        replay.close()


_MARKER_USAGE = ("use @pytest.mark.dsh_replay, @pytest.mark.dsh_replay('path/to/scenario') or "
                 "@pytest.mark.dsh_replay('path/to/scenario', consumed=False, strict=True)")


def _marker_arguments(marker: pytest.Mark) -> tuple[str | None, bool, bool | None, Any]:
    """The marker's scenario (positional or ``scenario=``), ``consumed``, ``strict`` and
    ``bind``; ValueError saying what is wrong and how the marker is written."""
    def wrong(what: str) -> ValueError:
        return ValueError(f"dsh-replay: @pytest.mark.dsh_replay {what}; {_MARKER_USAGE}")

    args = list(marker.args)
    if "scenario" in marker.kwargs:
        if args:
            raise wrong("names its scenario twice (positionally and as scenario=)")
        args = [marker.kwargs["scenario"]]
    if len(args) > 1 or (args and args[0] is not None
                         and not isinstance(args[0], str | os.PathLike)):
        raise wrong("takes one scenario directory")
    unknown = sorted(set(marker.kwargs) - {"scenario", "consumed", "strict", "bind"})
    if unknown:
        raise wrong(f"has no option {', '.join(unknown)}")
    consumed = marker.kwargs.get("consumed", True)
    if not isinstance(consumed, bool):
        raise wrong("consumed= must be True or False")
    strict = marker.kwargs.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise wrong("strict= must be True or False")
    bind = marker.kwargs.get("bind", "content")
    if bind not in ("content", "order"):
        raise wrong("bind= must be 'content' or 'order'")
    scenario = args[0] if args else None
    return (None if scenario is None else str(scenario)), consumed, strict, bind


@pytest.fixture(autouse=True)
def _dsh_replay_marked(request: pytest.FixtureRequest) -> None:
    """A marked test is served even when it does not ask for the ``dsh_replay`` fixture."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("dsh_replay")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After the test body: fail it with the replay's problems (binding errors, unconsumed
    calls) and a recording's failure; a test that failed by itself gets them as a report
    section instead. A debugger is waited for here, so pytest reports only once it is quit."""
    try:
        result = yield
    except BaseException as exc:
        replay = item.stash.get(_ACTIVE, None)
        if replay is not None:
            # Ctrl-C: pytest stops and shows no report, so none is waited for
            interrupted = isinstance(exc, KeyboardInterrupt)
            lines = [] if interrupted else replay.report(failed=True)
            outcome = replay.conclude(test_failed=True)
            _attach(item, replay, [*lines, *outcome.failure, *outcome.notes])
        raise
    replay = item.stash.get(_ACTIVE, None)
    if replay is not None:
        lines = replay.report()
        outcome = replay.conclude(test_failed=bool(lines))
        if outcome.notes:
            item.add_report_section("call", NOTES, "\n".join(outcome.notes))
        if lines or outcome.failure:
            replay.failed_reported = True
            hint = replay.hint() if lines else []
            pytest.fail("\n".join([*lines, *outcome.failure, *hint]), pytrace=False)
    return result


def _attach(item: pytest.Item, replay: DshReplay, lines: list[str]) -> None:
    replay.failed_reported = True
    text = "\n".join([*lines, *replay.hint()])
    if text:
        item.add_report_section("call", NOTES, text)


class RecordedSummary:
    """What a recording session changed, listed after the results: a passing test's notes
    (``recorded …``, ``appended …``) are otherwise shown only with ``-rA``. Read from the
    reports, so xdist workers' recordings are listed too."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the notes of each passing test's call."""
        if report.when == "call" and report.passed:
            for title, text in report.sections:
                if title == f"Captured {NOTES} call":
                    self.lines.extend(text.splitlines())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print them under a heading of their own (unless ``-rP`` / ``-rA`` showed them
        with their tests already)."""
        if self.lines and not terminalreporter.hasopt("P"):
            terminalreporter.write_sep("=", "dsh-replay recordings")
            for line in self.lines:
                terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    """A failing replayed test's report says how to open its scenario in the debugger."""
    report = yield
    replay = item.stash.get(_ACTIVE, None)
    if replay is not None and report.failed and not replay.failed_reported and replay.runs:
        replay.failed_reported = True
        hint = replay.hint()
        if hint:
            report.sections.append(("dsh-replay", "\n".join(hint)))
    return report
