"""The v4 shape of one recorded call (docs/format.md#generations): one settlement event holding its compact
stream.

A call that ended with its stream's ``finish`` becomes ``assistant/message`` (its content the
closed blocks); one that failed becomes ``assistant/attempt``, its streamed prefix closed by a
``finish`` of kind ``error`` carrying the upstream's message and code, as the harness records a
failed attempt (the primary's sidecar still decides it as a throw). Runs of deltas of one block
become ``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks`` records, every other chunk
a ``chunk`` record.
"""

from __future__ import annotations

from typing import Any

from ..jsonnumbers import MAX_SAFE_INTEGER
from .dialect import Chunk

FORMAT_VERSION = 4
"""The log generation ``record --format v4`` writes."""
_RUN_KINDS = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks",
              "tool-call-delta": "tool-call-chunks"}


def run_key(chunk: Chunk) -> tuple[Any, ...] | None:
    """Chunks with equal keys share one run record (None: this chunk is a ``chunk`` record).
    Only chunks a run expands back to exactly qualify (the rules of docs/format.md#settlement-streams)."""
    kind = chunk.get("type")
    index = chunk.get("index")
    if (not isinstance(index, int) or isinstance(index, bool) or index < 0
            or index > MAX_SAFE_INTEGER):
        return None
    if kind in ("text-delta", "reasoning-delta"):
        if chunk.keys() == {"type", "index", "text"} and isinstance(chunk["text"], str):
            return (kind, index)
        return None
    if kind != "tool-call-delta" or not isinstance(chunk.get("argumentsDelta"), str):
        return None
    ident = chunk.get("id")
    if not isinstance(ident, str) or not ident:
        return None
    if chunk.keys() == {"type", "index", "id", "name", "argumentsDelta"}:
        name = chunk["name"]
        return (kind, index, ident, True, name) if isinstance(name, str) and name else None
    if chunk.keys() == {"type", "index", "id", "argumentsDelta"}:
        return (kind, index, ident, False)
    return None


def stream_records(timed: list[tuple[Chunk, int]]) -> list[dict[str, Any]]:
    """The compact records of a call's chunks (with their arrival times), in order."""
    records: list[dict[str, Any]] = []
    i = 0
    while i < len(timed):
        key = run_key(timed[i][0])
        j = i + 1
        while key is not None and j < len(timed) and run_key(timed[j][0]) == key:
            j += 1
        if key is None:
            chunk, at = timed[i]
            records.append({"type": "chunk", "time": at, "chunk": chunk})
        else:
            records.append(run_record(timed[i:j]))
        i = j
    return records


def run_record(run: list[tuple[Chunk, int]]) -> dict[str, Any]:
    """One run of chunks sharing a ``run_key``, as its compact record."""
    first = run[0][0]
    times = [at for _, at in run]
    record: dict[str, Any] = {"type": _RUN_KINDS[first["type"]], "time0": times[0],
                              "index": first["index"],
                              "dt": [b - a for a, b in zip(times, times[1:], strict=False)]}
    if first["type"] == "tool-call-delta":
        record["id"] = first["id"]
        if "name" in first:
            record["name"] = first["name"]
        record["args"] = [chunk["argumentsDelta"] for chunk, _ in run]
    else:
        record["texts"] = [chunk["text"] for chunk, _ in run]
    return record


def settlement(where: dict[str, Any], timed: list[tuple[Chunk, int]], ended: int,
               failure: tuple[str, str] | None) -> tuple[str, dict[str, Any]]:
    """The settlement event's type and data for one call (``failure``: message and code)."""
    if failure is None:
        blocks = [chunk["block"] for chunk, _ in timed if chunk.get("type") == "block-end"]
        return "assistant/message", {**where, "message": {"role": "assistant",
                                                          "content": blocks},
                                     "stream": stream_records(timed)}
    message, code = failure[0] or "upstream failure", failure[1] or "SERVER"
    finish = {"type": "finish", "reason": {"kind": "error",
                                           "failure": {"message": message, "code": code}}}
    return "assistant/attempt", {**where, "stream": stream_records([*timed, (finish, ended)])}
