"""JSON number rules shared by the log readers and the models (SPEC 4a), free of pydantic.

Kept apart so that reading a log (``dsh-replay validate``) does not import the models.
"""

from __future__ import annotations

import math

MAX_SAFE_INTEGER = 2**53 - 1


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
