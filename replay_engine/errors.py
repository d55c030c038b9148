"""Typed errors of the replay engine.

Every error carries a stable ``code`` so harnesses and the debugger can react
to it without parsing messages, and a message that names the file, the line or
JSON location, the call and what to do about it::

    ReplayError                      (code varies)
    ├── InputError                   problems with files the user owns
    │   ├── LogParseError            LOG_PARSE: a session log line is not valid
    │   ├── DerivationError          DERIVATION / UNFINISHED_CALL: events do not form calls
    │   ├── SidecarError             SIDECAR_INVALID: replay.override.json is invalid
    │   ├── ConfigError              CONFIG: scenario / provider / pace configuration
    │   └── ScenarioNotFoundError    SCENARIO_NOT_FOUND: nothing to load
    ├── BindingError                 a live call could not be bound to a script
    │   ├── UnrecordedSessionError   UNRECORDED_SESSION
    │   └── ScriptExhaustedError     SCRIPT_EXHAUSTED
    ├── NotConsumedError             NOT_CONSUMED: assert_consumed() found problems
    ├── ScriptedFailure              the code of a ``throw`` entry (AUTH, SERVER, ...)
    ├── AbortedError                 ABORTED: the call was cancelled
    └── PlaceholderError             PLACEHOLDER: a {{fromRequest:…}} could not resolve
"""

from __future__ import annotations

from collections.abc import Sequence


class ReplayError(Exception):
    """Base of every error the engine raises on purpose."""

    code: str = "REPLAY_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InputError(ReplayError):
    """A file or setting the user owns is wrong; the message says where and how to fix it."""

    code = "INPUT"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        location: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.file = file
        self.line = line
        self.location = location


class LogParseError(InputError):
    """A session log line is malformed (bad JSON, bad packed row, null event)."""

    code = "LOG_PARSE"


class DerivationError(InputError):
    """The events of a log do not form replayable model calls."""

    code = "DERIVATION"

    def __init__(
        self,
        message: str,
        *,
        call_key: str | None = None,
        file: str | None = None,
        line: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, file=file, line=line, code=code)
        self.call_key = call_key


class SidecarError(InputError):
    """The ``replay.override.json`` document is invalid."""

    code = "SIDECAR_INVALID"


class ConfigError(InputError):
    """Scenario, provider catalog or pacing configuration is invalid."""

    code = "CONFIG"


class ScenarioNotFoundError(InputError):
    """The scenario directory or its primary log does not exist."""

    code = "SCENARIO_NOT_FOUND"


class BindingError(ReplayError):
    """A live model call could not be matched to a recorded script."""


class UnrecordedSessionError(BindingError):
    """More distinct live sessions called than the scenario recorded."""

    code = "UNRECORDED_SESSION"


class ScriptExhaustedError(BindingError):
    """A session asked for more model calls than its script holds."""

    code = "SCRIPT_EXHAUSTED"


class NotConsumedError(ReplayError):
    """``assert_consumed`` found scripts or calls that were never served."""

    code = "NOT_CONSUMED"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("replay not consumed: " + "; ".join(self.problems))


class ScriptedFailure(ReplayError):
    """The failure a ``throw`` entry injects; ``code`` is the entry's code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code=code)


class AbortedError(ReplayError):
    """The call was cancelled (client gone, debugger, control API)."""

    code = "ABORTED"

    def __init__(self, message: str = "aborted") -> None:
        super().__init__(message)


class PlaceholderError(ReplayError):
    """A ``{{fromRequest:PATTERN}}`` placeholder could not be resolved."""

    code = "PLACEHOLDER"
