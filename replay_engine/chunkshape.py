"""The shape a recorded chunk needs for every wire dialect to serve it, free of the models.

Logs and sidecars share it: what loads must serve on every route.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from .jsonnumbers import json_kind

CHUNK_SHAPES: dict[str, tuple[str, type, bool]] = {
    "text-delta": ("text", str, False),
    "reasoning-delta": ("text", str, False),
    "tool-call-delta": ("argumentsDelta", str, False),
}
"""Per chunk type, the text field every wire dialect streams, its JSON type, and whether null
is allowed: a recorded chunk whose text is not a string could not be served. (A ``block``,
``usage`` or ``reason`` that is not an object is served as if absent: docs/format.md#edge-cases accepts any
non-null ``rawOutput`` block and any ``usage`` value from a compaction.)"""

TEXT_FIELDS: dict[str, str] = {kind: shape[0] for kind, shape in CHUNK_SHAPES.items()}
"""The string field of each chunk type that has one (the fast checks read only these)."""

_KINDS: dict[type, str] = {str: "a string", dict: "an object"}


def chunk_shape_problem(chunk: Any) -> str | None:
    """Why a recorded chunk cannot be served (not an object; a field of the wrong type)."""
    if type(chunk) is not dict:
        return f"the chunk is {json_kind(chunk)}, not an object"
    kind = chunk.get("type")
    shape = CHUNK_SHAPES.get(kind) if type(kind) is str else None
    if shape is None:
        return None
    field, want, nullable = shape
    value = chunk.get(field)
    if field not in chunk or type(value) is want or (nullable and value is None):
        return None
    return f"the {kind} chunk's {field} is {json_kind(value)}, not {_KINDS[want]}"


def is_error_finish(reason: object) -> TypeGuard[dict[str, Any]]:
    """Whether a recorded finish reason is an error finish (the call failed after its prefix)."""
    return isinstance(reason, dict) and reason.get("kind") == "error"


def ends_in_error_finish(chunks: list[dict[str, Any]]) -> bool:
    """Whether a recorded call's last chunk is an error finish: a scripted failure, like a throw."""
    last = chunks[-1] if chunks else None
    return isinstance(last, dict) and last.get("type") == "finish" and is_error_finish(last.get("reason"))
