"""Typed errors of the replay engine.

Every error carries a stable ``code`` so harnesses and the debugger can react
to it without parsing messages, and a message that names the file, the line or
JSON location, the call and what to do about it::

    ReplayError                      (code varies)
    ├── InputError                   problems with files the user owns
    │   ├── LogParseError            LOG_PARSE: a session log line is not valid
    │   ├── DerivationError          DERIVATION / UNFINISHED_CALL: events do not form calls
    │   ├── SidecarError             SIDECAR_INVALID: replay.override.json is invalid
    │   │   └── EntryTextError       entry JSON typed by a user is not a valid entry
    │   ├── ConfigError              CONFIG: scenario / provider / pace configuration
    │   └── ScenarioNotFoundError    SCENARIO_NOT_FOUND: nothing to load
    ├── BindingError                 a live call could not be bound to a script
    │   ├── UnrecordedSessionError   UNRECORDED_SESSION
    │   └── ScriptExhaustedError     SCRIPT_EXHAUSTED
    ├── CannotListenError            CANNOT_LISTEN: the server's port is busy (exit 4)
    ├── ScenarioNotLoadedError       SCENARIO_NOT_LOADED: a model call while the scenario is broken
    ├── NotConsumedError             NOT_CONSUMED: assert_consumed() found problems
    ├── ScriptedFailure              the code of a ``throw`` entry (AUTH, SERVER, ...)
    ├── AbortedError                 ABORTED: the call was cancelled
    ├── PlaceholderError             PLACEHOLDER: a {{fromRequest:…}} could not resolve
    ├── SessionTokenError            SESSION_TOKEN: a {{session:N}} names a session not bound yet
    ├── UnrepresentableCallError     UNREPRESENTABLE: a dialect's wire cannot carry the call
    ├── UpstreamStreamError          (code varies) an upstream stream the recorder relays failed
    │   └── AnswerTooLarge           INVALID_RESPONSE: an answer past the recorder's limits
    ├── BadRequest                   a request the server refuses (400 / 413) before the engine
    │   └── ClientGone               CLIENT_CLOSED: the client left before its body arrived
    └── ServerUnreachableError       SERVER_UNREACHABLE: the demo agent found no replay server
    NonFiniteNumber (ValueError)     a JSON number literal that is not a finite double (internal;
                                     readers turn it into their file's typed error)

Codes raised under more than one class, or checked for elsewhere, are constants here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.responses import Response

UNFINISHED_CALL = "UNFINISHED_CALL"
"""DerivationError: a call of the log never finished while it was recorded
(docs/format.md#deriving-scripts)."""

READY_FILE = "READY_FILE"
"""InputError: a hang entry's readyFile exists with content or cannot be created."""

OVERRIDE_EDIT = "OVERRIDE_EDIT"
"""An edit of ``replay.override.json`` asked for something the scenario cannot take."""

SIDECAR_CHANGED = "SIDECAR_CHANGED"
"""``replay.override.json`` changed on disk since the draft being saved was opened."""

UNDECIDED_CALL = "UNDECIDED_CALL"
"""A draft still holds an unfinished call that has no throw or hang entry."""

INVALID_REQUEST = "INVALID_REQUEST"
"""BadRequest: a request field has the wrong type or value."""

INVALID_JSON = "INVALID_JSON"
"""BadRequest: the request body is not JSON."""

BODY_TOO_LARGE = "BODY_TOO_LARGE"
"""BadRequest (413): the request body exceeds the server's limit."""

BODY_TIMEOUT = "BODY_TIMEOUT"
"""BadRequest (408): the request body did not arrive in time."""

CLIENT_CLOSED = "CLIENT_CLOSED"
"""ClientGone: the client closed the connection before sending its whole body."""

ABORTED = "ABORTED"
"""AbortedError: the call was cancelled."""

SCENARIO_EXISTS = "SCENARIO_EXISTS"
"""InputError: ``dsh-replay record`` was given a directory that already holds a scenario."""

RECORDING_LOCKED = "RECORDING_LOCKED"
"""InputError: another recorder is recording into the same directory."""

RECORD_WRITE = "RECORD_WRITE"
"""InputError: the recorder could not write its logs (disk full, permissions); it stopped."""

SCRUB = "SCRUB"
"""ConfigError: scrub rules that cannot be read, or a scrub hook that failed on a call."""

UNRECORDED_SESSION = "UNRECORDED_SESSION"
SCRIPT_EXHAUSTED = "SCRIPT_EXHAUSTED"
GONE_LIVE = "GONE_LIVE"
"""A call a run hands to its upstream instead of the recording (``record --from-divergence``)."""
BINDING_CODES = frozenset({UNRECORDED_SESSION, SCRIPT_EXHAUSTED})
"""Error codes of calls the server could not bind to a script (docs/format.md#binding)."""


MAX_LISTED_PROBLEMS = 50
"""Problems an error message lists; the rest are counted (all stay in ``.problems``)."""


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

    def to_json(self) -> dict[str, object]:
        """The error as a ``--json`` command prints it: ``{"ok": false, "error", "code"}``."""
        return {"ok": False, "error": self.message, "code": self.code}


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


@dataclass(frozen=True, slots=True)
class EntryProblem:
    """One problem of an entry typed as JSON, with where it is in the text."""

    location: str
    """JSON location inside the entry, e.g. ``chunks[3].type`` (empty for the whole entry)."""
    line: int
    """1-based line in the text."""
    column: int
    """1-based column in the text."""
    message: str
    """What is wrong."""


class EntryTextError(SidecarError):
    """Entry JSON (editor pane or ``--chunks-file``) that is not JSON or not a valid entry."""

    def __init__(self, source: str, problems: list[EntryProblem]) -> None:
        lines = [
            f"{source}:{p.line}:{p.column}: {p.location + ': ' if p.location else ''}{p.message}"
            for p in problems[:MAX_LISTED_PROBLEMS]
        ]
        if len(problems) > MAX_LISTED_PROBLEMS:
            more = len(problems) - MAX_LISTED_PROBLEMS
            lines.append(f"… and {more} more problem{'s' if more > 1 else ''}")
        hint = (
            'Give a list of chunks, or an entry: {"kind":"chunks","chunks":[…]}, '
            '{"kind":"throw","chunks":[…],"message":…,"code":…} or {"kind":"hang","readyFile"?:…}.'
        )
        super().__init__("\n".join(lines) + "\n" + hint, file=source,
                         line=problems[0].line if problems else None,
                         location=problems[0].location if problems else None)
        self.problems = problems


class ConfigError(InputError):
    """Scenario, provider catalog or pacing configuration is invalid."""

    code = "CONFIG"


class ScenarioNotFoundError(InputError):
    """The scenario directory or its primary log does not exist."""

    code = "SCENARIO_NOT_FOUND"


class BindingError(ReplayError):
    """A live model call could not be matched to a recorded script."""

    script_index: int | None = None
    """The script the session is bound to (an exhausted script; None: no script)."""


class UnrecordedSessionError(BindingError):
    """More distinct live sessions called than the scenario recorded."""

    code = UNRECORDED_SESSION


class ScriptExhaustedError(BindingError):
    """A session asked for more model calls than its script holds."""

    code = SCRIPT_EXHAUSTED


class GoneLiveError(BindingError):
    """A session's call that leaves the recording in a run recording from the divergence: it
    and every later call of the session go upstream (never answered to a client as is)."""

    code = GONE_LIVE
    call_index: int = 0
    """The call of the script where the session went live (the cut)."""


class CannotListenError(ReplayError):
    """The server could not listen on its address (a busy port): nothing is served (exit 4)."""

    code = "CANNOT_LISTEN"


class ScenarioNotLoadedError(ReplayError):
    """A model call arrived while the scenario failed to load (served as 503)."""

    code = "SCENARIO_NOT_LOADED"


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

    code = ABORTED

    def __init__(self, message: str = "aborted") -> None:
        super().__init__(message)


class PlaceholderError(ReplayError):
    """A ``{{fromRequest:PATTERN}}`` placeholder could not be resolved."""

    code = "PLACEHOLDER"


class SessionTokenError(ReplayError):
    """A ``{{session:N}}`` token names a recorded session no live session has bound yet."""

    code = "SESSION_TOKEN"


class UnrepresentableCallError(ReplayError):
    """A recorded call a dialect's wire cannot carry as recorded (e.g. non-object tool input)."""

    code = "UNREPRESENTABLE"


class UpstreamStreamError(ReplayError):
    """An answer stream ``dsh-replay record`` relays reported an error in an event; the code
    is the upstream's own (SERVER when it named none), recorded as the call's failure."""

    code = "SERVER"


class AnswerTooLarge(UpstreamStreamError):
    """An upstream answer past one of the recorder's limits (``record/decoding.py``): the relay
    ends there (the client's connection drops) and the call is recorded as this failure."""

    code = "INVALID_RESPONSE"


MAX_REFUSAL_CHARS = 2000
"""A refusal's message is cut to this many characters: whatever a request sent, no error
answer repeats it whole."""


class BadRequest(ReplayError):
    """A request the server refuses before touching the engine (400 or 413)."""

    def __init__(self, status: int, message: str, code: str) -> None:
        if len(message) > MAX_REFUSAL_CHARS:
            message = message[:MAX_REFUSAL_CHARS] + "… (cut)"
        super().__init__(message, code=code)
        self.status = status

    def response(self, headers: Mapping[str, str] | None = None) -> Response:
        """The JSON error answer (with ``headers``, e.g. the no-retry one of model routes)."""
        from starlette.responses import Response  # only the server needs Starlette

        body = {"error": {"message": self.message, "type": "invalid_request_error",
                          "code": self.code}}
        text = json.dumps(body, separators=(",", ":"))  # ASCII: a lone surrogate stays \uXXXX
        return Response(text, status_code=self.status, headers=headers,
                        media_type="application/json")


class ClientGone(BadRequest):
    """The client closed the connection before its request body arrived: nothing to serve.

    The answer is never delivered (uvicorn drops writes to a closed connection); raising
    it keeps the route from binding a call and the server from logging a traceback.
    """

    def __init__(self) -> None:
        super().__init__(400, "the client closed the connection before sending its whole "
                         "request body", CLIENT_CLOSED)


class ServerUnreachableError(ReplayError):
    """The replay server could not be reached, or did not answer like one."""

    code = "SERVER_UNREACHABLE"


class NonFiniteNumber(ValueError):
    """A number literal that is not a finite double (``1e999``, ``NaN``, ``Infinity``)."""

    def __init__(self, literal: str) -> None:
        super().__init__(f"{literal[:40]} is not a finite number")
        self.literal = literal
