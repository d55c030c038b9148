"""The pytest plugin's options and what they decide: the record mode, the debugger's start,
and where a marked test's scenario lives when the marker names none.

Record modes are pytest-recording's where they mean the same: ``none`` (the default: replay,
never record), ``once`` (record a scenario that does not exist yet, replay the rest; also
spelled ``missing``), ``new_episodes`` (replay what is recorded, record the calls past it and
append them), ``from_divergence`` (replay each session while it follows its recording, and
record it upstream from its first call that leaves it), ``all`` (record every marked scenario
anew; ``rewrite`` is the same here, since a recording always replaces its scenario whole).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, get_args

import pytest

from ..engine import StepMode, parse_breakpoint

RecordMode = Literal["none", "once", "new_episodes", "from_divergence", "all"]
RECORD_SPELLINGS: dict[str, RecordMode] = {
    "none": "none", "once": "once", "missing": "once", "new_episodes": "new_episodes",
    "from_divergence": "from_divergence", "all": "all", "rewrite": "all",
}
"""Every accepted ``--dsh-replay-record`` value and the mode it means."""
STEP_MODES: tuple[str, ...] = get_args(StepMode)
SOCKET_INI = "dsh_replay_socket"
"""The ini key that serves every client over a socket (``--dsh-replay-socket``)."""
SCENARIO_DIR_INI = "dsh_replay_scenario_dir"
"""The ini key that moves the default scenario root (``<test dir>/scenarios`` otherwise)."""
DEFAULT_ROOT = "scenarios"


def add_options(parser: pytest.Parser) -> None:
    """The plugin's command-line options and ini keys."""
    group = parser.getgroup("dsh-replay", "replaying recorded LLM sessions (dsh-replay)")
    group.addoption(
        "--dsh-replay-record", dest="dsh_replay_record", nargs="?", const="all", default=None,
        choices=tuple(RECORD_SPELLINGS), metavar="MODE",
        help="record the scenarios of @pytest.mark.dsh_replay tests from --dsh-replay-upstream: "
             "none (replay only, the default), once (=missing: record what does not exist yet), "
             "new_episodes (replay, and record and append the calls past the recording), "
             "from_divergence (replay each session while it follows its recording, record the "
             "rest of it from its first diverged call), all "
             "(=rewrite, and the bare flag: record every one anew). A recording replaces its "
             "scenario only when every call succeeded and the test passed; else the attempt is "
             "kept beside it. Write =MODE (or put the flag after the test paths).")
    group.addoption("--dsh-replay-upstream", dest="dsh_replay_upstream", default=None,
                    metavar="URL", help="the provider base URL to record from (with "
                    "--dsh-replay-record)")
    group.addoption("--dsh-replay-record-failures", dest="dsh_replay_record_failures",
                    action="store_true",
                    help="keep a recording even when a call failed upstream or the test failed "
                         "(a recorded 429 that a test is about, say)")
    group.addoption("--dsh-replay-strict", dest="dsh_replay_strict", action="store_true",
                    help="fail every replayed test whose agent left the recording (a request whose "
                         "new messages differ from the recorded ones, an unrecorded retry), as "
                         "@pytest.mark.dsh_replay(..., strict=True) does for one test")
    group.addoption("--dsh-replay-debug", dest="dsh_replay_debug", action="store_true",
                    help="serve each test from a dsh-replay-tui on this terminal, started held "
                         "at its first call (see --dsh-replay-debug-mode); the test ends when "
                         "the debugger is quit")
    group.addoption("--dsh-replay-debug-mode", dest="dsh_replay_debug_mode", default="call",
                    choices=STEP_MODES, help="with --dsh-replay-debug: hold every call before "
                    "its first chunk (call, the default), every chunk (chunk), or run freely "
                    "(run)")
    group.addoption("--dsh-replay-break", dest="dsh_replay_break", action="append", default=[],
                    metavar="SCRIPT:CALL",
                    help="with --dsh-replay-debug: a breakpoint the debugger starts with "
                         "(repeatable; numbered from 0 as the debugger shows them)")
    group.addoption("--dsh-replay-socket", dest="dsh_replay_socket", action="store_true",
                    help="serve every client over a socket: by default httpx and httpx2 clients "
                         "of the test's process that call the plugin's servers are served in "
                         "process, with no socket (clients in other processes always use one)")
    parser.addini(SOCKET_INI, "true: as --dsh-replay-socket, no client is served in process",
                  type="bool", default=False)
    parser.addini(SCENARIO_DIR_INI, "where @pytest.mark.dsh_replay with no path finds its "
                  "scenario: ROOT/<module>/<test name>/ (ROOT relative to the ini file; "
                  "default: scenarios/ beside each test file)", default="")


class Settings:
    """The command-line choices of this pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        record = config.getoption("dsh_replay_record")
        upstream = config.getoption("dsh_replay_upstream")
        self.record: RecordMode = RECORD_SPELLINGS[record] if record is not None else "none"
        self.upstream: str | None = upstream.rstrip("/") if upstream else None
        self.record_failures: bool = bool(config.getoption("dsh_replay_record_failures"))
        self.debug: StepMode | None = (config.getoption("dsh_replay_debug_mode")
                                       if config.getoption("dsh_replay_debug") else None)
        """The debugger's start mode, or None when not debugging."""
        self.strict: bool = bool(config.getoption("dsh_replay_strict"))
        self.socket: bool = bool(config.getoption("dsh_replay_socket") or _ini_flag(config))
        """Serve every client over a socket (no in-process interception of httpx)."""
        self.base = Path(config.invocation_params.dir)
        root = str(config.getini(SCENARIO_DIR_INI) or "").strip()
        anchor = config.inipath.parent if config.inipath is not None else config.rootpath
        self.scenario_root: Path | None = (anchor / root).resolve() if root else None
        """Where default scenario locations start (None: ``scenarios/`` beside each test)."""
        try:
            self.breaks = [parse_breakpoint(text) for text in config.getoption("dsh_replay_break")]
        except ValueError as exc:
            raise pytest.UsageError(f"--dsh-replay-break {exc}") from None
        self._check()

    def _check(self) -> None:
        if self.record != "none" and not self.upstream:
            raise pytest.UsageError("--dsh-replay-record needs --dsh-replay-upstream URL: the "
                                    "provider (OpenAI-compatible base URL) to record from")
        if self.upstream and self.record == "none":
            raise pytest.UsageError("--dsh-replay-upstream is used only when recording; add "
                                    "--dsh-replay-record=MODE (once, new_episodes, from_divergence or all)")
        if self.upstream:
            self._check_upstream(self.upstream)
        if self.record_failures and self.record == "none":
            raise pytest.UsageError("--dsh-replay-record-failures keeps recordings whose calls "
                                    "or test failed; add --dsh-replay-record=MODE and "
                                    "--dsh-replay-upstream URL")
        if self.record != "none" and self.debug is not None:
            raise pytest.UsageError("--dsh-replay-debug replays; it cannot be combined with "
                                    "--dsh-replay-record")
        if self.breaks and self.debug is None:
            raise pytest.UsageError("--dsh-replay-break sets breakpoints of the debugger; add "
                                    "--dsh-replay-debug")

    @staticmethod
    def _check_upstream(upstream: str) -> None:
        """A URL no recording could use is refused before any test runs (not once per test)."""
        from ..errors import ReplayError
        from ..record import check_upstream

        try:
            check_upstream(upstream, "--dsh-replay-upstream")
        except ReplayError as exc:
            raise pytest.UsageError(exc.message) from None

    @property
    def recording(self) -> bool:
        """Whether this session may record at all."""
        return self.record != "none"


def _ini_flag(config: pytest.Config) -> bool:
    """The ini's ``dsh_replay_socket``; a value that is no truth value names the key."""
    try:
        return bool(config.getini(SOCKET_INI))
    except ValueError as exc:
        raise pytest.UsageError(f"ini {SOCKET_INI}: {exc}; write true or false") from None


def check_debug_alone(config: pytest.Config, settings: Settings) -> None:
    """The debugger owns this terminal: one pytest process, no xdist workers, and a terminal
    to own (unless ``$DSH_REPLAY_DEBUGGER`` replaces it)."""
    if settings.debug is None:
        return
    if getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--dsh-replay-debug opens the debugger on this terminal; run "
                                "one test without -n")
    from .servers import debugger_replacement, open_terminal

    if not debugger_replacement():  # a replacement may need no terminal
        terminal = open_terminal()
        if terminal is None:  # the debugger would wait unseen for a q that never comes
            raise pytest.UsageError(
                "--dsh-replay-debug opens dsh-replay-tui on this terminal, and this pytest has "
                "none (no /dev/tty: CI, a service, a detached process); run it from a terminal")
        terminal.close()


def default_scenario(item: pytest.Item, root: Path | None) -> Path:
    """Where a test's scenario lives when its marker names none: ``ROOT/<module>/<test>``,
    ROOT being ``scenarios/`` beside the test file unless the ini moves it; a class's name
    goes before the test's (``TestX.test_y``), parameters stay (``test_z[1-a]``)."""
    path = Path(item.path)
    name = ".".join(item.nodeid.split("::")[1:]) or item.name
    safe = re.sub(r"[^\w.\[\]-]+", "-", name).strip("-.") or "test"
    return (root if root is not None else path.parent / DEFAULT_ROOT) / path.stem / safe
