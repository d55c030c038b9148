"""What a model call is in a session log: its key (``turn/step`` as JavaScript prints them),
the derivation errors that name it, and the calls a ``compaction/summary`` event records.

One wording for every reader: the loader, the check-only reader and the authoring reader.
"""

from __future__ import annotations

import math
from typing import Any

from ..chunkshape import chunk_shape_problem as chunk_shape_problem
from ..errors import UNFINISHED_CALL, DerivationError


class _UndefinedType:
    def __repr__(self) -> str:
        return "undefined"


Undefined: Any = _UndefinedType()
"""A key absent from an event (JavaScript's ``undefined``)."""

_FINISH_STOP = {"kind": "stop"}


def js_string(value: Any) -> str:
    """Render a JSON value the way JavaScript's ``String()`` does, for call keys."""
    if value is Undefined:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


def call_key(turn: Any, step: Any) -> str:
    """``turn/step`` compared as text (``1``, ``1.0`` and ``"1"`` are one key)."""
    return f"{js_string(turn)}/{js_string(step)}"


# --- the derivation errors (one wording, whether the chunks are kept or only checked) -------


def unfinished_call_error(
    file: str | None, key: str, position: int, first_line: int, last_line: int
) -> DerivationError:
    """A call closed without a finish chunk: the stream threw while it was recorded."""
    where = f"{file or '<log>'}:{first_line}-{last_line}"
    return DerivationError(
        f"{where}: model call {key} (call #{position} of the script) ended "
        "without a finish chunk: the stream threw while it was recorded, so the call "
        "cannot be derived. This scenario needs a replay.override.json sidecar holding "
        "a bare list of entries that replaces the derived script, with a throw or hang "
        "entry for that call (a patches sidecar cannot help: derivation fails first). "
        f"Quickest fix: dsh-replay override SCENARIO --at {position} --throw MESSAGE "
        "--code CODE (or --hang) writes it, every other call as recorded.",
        call_key=key,
        file=file,
        line=last_line,
        code=UNFINISHED_CALL,
    )


def child_unfinished_error(exc: DerivationError) -> DerivationError:
    """An unfinished call in a child log: a sidecar cannot help there (it is the primary's)."""
    head = exc.message.split(" This scenario needs", 1)[0]
    return DerivationError(
        f"{head} This is a child (subagent) log and replay.override.json applies only to "
        "the primary session, so re-record the scenario or end that call in the child log "
        'with a finish chunk (e.g. {"type":"finish","reason":{"kind":"error"}}).',
        call_key=exc.call_key,
        file=exc.file,
        line=exc.line,
        code=exc.code,
    )


def missing_chunk_error(file: str | None, key: str, line: int) -> DerivationError:
    """An ``assistant/chunk`` event without ``data.chunk`` (or with a null one)."""
    return DerivationError(
        f"{file or '<log>'}:{line}: assistant/chunk event of call {key} has no "
        "data.chunk; restore the chunk or remove the event.",
        call_key=key,
        file=file,
        line=line,
    )


def bad_chunk_error(file: str | None, key: str, line: int, problem: str) -> DerivationError:
    """A recorded chunk no wire dialect can serve (the sidecar's chunk rule, docs/format.md#override-sidecar,
    applied to logs)."""
    return DerivationError(
        f"{file or '<log>'}:{line}: assistant/chunk event of call {key}: {problem}; every "
        "recorded chunk must be an object whose text and argumentsDelta are strings and whose "
        "block, usage and reason are objects. Fix the chunk, or replace the call with a "
        "replay.override.json patch.",
        call_key=key,
        file=file,
        line=line,
    )


def compaction_chunks(data: Any, file: str | None, line: int) -> list[dict[str, Any]] | None:
    """The chunks of a ``compaction/summary`` that was a model call (None when it was not)."""
    where = f"{file or '<log>'}:{line}"
    if not isinstance(data, dict):
        raise DerivationError(
            f"{where}: compaction/summary event has no data object; restore it or remove "
            "the event.",
            file=file,
            line=line,
        )
    if data.get("llmStreamCall") is not True:
        return None
    raw = data.get("rawOutput")
    if not isinstance(raw, list):
        raise DerivationError(
            f"{where}: compaction/summary with llmStreamCall true needs data.rawOutput "
            "(a list of content blocks); restore it or set llmStreamCall to false.",
            file=file,
            line=line,
        )
    chunks: list[dict[str, Any]] = []
    for i, block in enumerate(raw):
        if block is None:
            raise DerivationError(
                f"{where}: compaction/summary rawOutput[{i}] is null; every block must be "
                "an object.",
                file=file,
                line=line,
            )
        start: dict[str, Any] = {"type": "block-start", "index": i}
        if isinstance(block, dict) and "type" in block:
            start["blockType"] = block["type"]
        chunks.append(start)
        chunks.append({"type": "block-end", "index": i, "block": block})
    if "usage" in data:
        chunks.append({"type": "usage", "usage": data["usage"]})
    chunks.append({"type": "finish", "reason": dict(_FINISH_STOP)})
    return chunks
