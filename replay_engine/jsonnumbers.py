"""JSON number rules shared by the log readers and the models (docs/format.md#edge-cases), free of pydantic.

Kept apart so that reading a log (``dsh-replay validate``) does not import the models.
"""

from __future__ import annotations

import math

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DOUBLE_INTEGER = int(1.7976931348623157e308)
"""The largest integer a double holds: a JSON integer beyond it is not finite (it overflows)."""
_INT64 = 2**63


def as_safe_integer(value: object) -> int | None:
    """Return ``value`` as an int when it is a JSON safe integer (``2.0`` counts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if abs(value) <= MAX_SAFE_INTEGER else None
    return None


def is_number(value: object) -> bool:
    """True for JSON numbers; booleans are never numbers."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def overflows_double(value: int) -> bool:
    """Whether a JSON integer is beyond what a double holds (refused like ``1e999``)."""
    return abs(value) > MAX_DOUBLE_INTEGER


def as_time(value: object) -> int:
    """A recorded time (ms) as an int64: a number strictly within int64 truncated to an int,
    anything else 0 (times only pace the replay)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if -_INT64 < value < _INT64:  # NaN compares false
        return int(value)
    return 0


def plain_number(value: float) -> int | float:
    """A JSON number as people write it: a safe integer without a fraction (``7.0`` is 7),
    anything else as is."""
    number = as_safe_integer(value)
    return value if number is None else number


def count(value: object) -> int:
    """A usage counter as an int: the JSON integer ``value`` holds (``12.0`` is 12), else 0.

    Every wire and the recorder read counters through this, so one recording gives the same
    number on every route."""
    number = as_safe_integer(value)
    return 0 if number is None else number


def json_kind(value: object) -> str:
    """What JSON value ``value`` is, for error messages (``a string``, ``the number 5``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
