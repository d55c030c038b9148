"""Failure codes and HTTP statuses, both directions (docs/format.md#wire-openai-chat): one table for every
wire and the recorder.

The replay server answers a scripted throw with the status a client maps back to its code;
the recorder turns an upstream's error status back into the code it records. Both read
:data:`STATUS_BY_CODE`, so a code recorded from a status is served with that status again.
"""

from __future__ import annotations

STATUS_BY_CODE: dict[str, int] = {
    "AUTH": 401,
    "RATE_LIMIT": 429,
    "QUOTA_EXCEEDED": 429,
    "INVALID_REQUEST": 400,
    "CONTEXT_WINDOW_EXCEEDED": 400,
    "SERVER": 500,
}
"""The named throw codes and the status each is served with (``HTTP_<n>`` is n; any other
code 500)."""

BINDING_STATUS = 409
"""The status of a binding error (``UNRECORDED_SESSION``, ``SCRIPT_EXHAUSTED``)."""

_BINDING_CODES = ("UNRECORDED_SESSION", "SCRIPT_EXHAUSTED")

NOT_LOADED_STATUS = 503
"""The status of a model call while the scenario is not loaded (``SCENARIO_NOT_LOADED``)."""
_ENGINE_STATUS = {"SCENARIO_NOT_LOADED": NOT_LOADED_STATUS}


def is_known_throw_code(code: str) -> bool:
    """Whether a throw entry's code is one clients tell apart: a named code or ``HTTP_<n>``
    (any other code is served as 500, which is rarely what a typo meant)."""
    return code in STATUS_BY_CODE or http_code_status(code) is not None


def known_throw_codes() -> str:
    """The known throw codes, for a warning: ``AUTH (401), …, HTTP_<n> (n, 400..599)``."""
    named = ", ".join(f"{code} ({status})" for code, status in STATUS_BY_CODE.items())
    return f"{named}, HTTP_<n> (n, 400..599)"

_CODE_BY_STATUS: dict[int, str] = {}
for _code, _status in STATUS_BY_CODE.items():
    _CODE_BY_STATUS.setdefault(_status, _code)  # the first code of a status is its own


def status_for_code(code: str) -> int:
    """The HTTP status a client maps back to ``code`` (docs/format.md#wire-openai-chat: ``HTTP_<n>`` is n;
    else 500)."""
    status = STATUS_BY_CODE.get(code)
    if status is not None:
        return status
    if code in _BINDING_CODES:
        return BINDING_STATUS
    if code in _ENGINE_STATUS:
        return _ENGINE_STATUS[code]
    number = http_code_status(code)
    return number if number is not None else 500


def code_for_status(status: int) -> str:
    """The failure code of an upstream HTTP error status: the table read backwards, else
    ``HTTP_<status>``."""
    return _CODE_BY_STATUS.get(status, f"HTTP_{status}")


def http_code_status(code: str) -> int | None:
    """n for a well-formed ``HTTP_<n>`` code with 400 <= n <= 599 (ASCII digits only), else None."""
    digits = code[5:] if code.startswith("HTTP_") else ""
    if not (digits.isascii() and digits.isdigit()):
        return None
    number = int(digits)
    return number if 400 <= number <= 599 else None


def throw_code_warning(code: str) -> str | None:
    """What to tell someone who authors a throw with ``code`` outside the known set (None: it
    is known): a typo would turn a 429 test into a 500 test without a word."""
    if is_known_throw_code(code):
        return None
    return (f"throw code {code!r} is not a known code, so it is served as HTTP "
            f"{status_for_code(code)}; the known codes are {known_throw_codes()}")
