"""Builders for session logs, sidecars and scenario directories used across the unit tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def dumps(value: Any) -> str:
    """Compact JSON, as logs are written."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def header(ident: str = "s", created: Any = 1000, seed: Any = None, **extra: Any) -> dict[str, Any]:
    """A session header line."""
    out: dict[str, Any] = {"type": "session", "id": ident, "createdAt": created}
    if seed is not None:
        out["seedLength"] = seed
    out.update(extra)
    return out


def chunk_event(turn: Any, step: Any, chunk: Any, seq: int = 0, time: int = 0) -> dict[str, Any]:
    """One ``assistant/chunk`` event."""
    return {"type": "assistant/chunk", "seq": seq, "time": time,
            "data": {"turn": turn, "step": step, "chunk": chunk}}


def text_chunks(text: str, parts: Sequence[str] | None = None, reason: Any = "stop") -> list[dict[str, Any]]:
    """The chunks of one text answer: start, deltas, end, finish."""
    out: list[dict[str, Any]] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    out += [{"type": "text-delta", "index": 0, "text": p} for p in (parts or [text])]
    out.append({"type": "block-end", "index": 0, "block": {"type": "text", "text": text}})
    out.append({"type": "finish", "reason": reason if isinstance(reason, dict) else {"kind": reason}})
    return out


def call_events(turn: Any, step: Any, chunks: Iterable[Any], *, seq: int = 0, time: int = 0,
                gap: int = 10) -> list[dict[str, Any]]:
    """Chunk events for one call, with increasing seq and time."""
    return [chunk_event(turn, step, c, seq + k, time + k * gap) for k, c in enumerate(chunks)]


def log_text(head: Any, events: Iterable[Any]) -> str:
    """A whole log: header line then one line per event (strings are written verbatim)."""
    lines = [head if isinstance(head, str) else dumps(head)]
    lines += [e if isinstance(e, str) else dumps(e) for e in events]
    return "\n".join(lines) + "\n"


def write_log(path: Path, head: Any, events: Iterable[Any]) -> Path:
    """Write a log file and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(log_text(head, events), encoding="utf-8")
    return path


def write_scenario(
    root: Path,
    primary: tuple[Any, Iterable[Any]] | None,
    children: Sequence[tuple[Any, Iterable[Any]]] = (),
    sidecar: Any = None,
) -> Path:
    """A scenario directory: session.jsonl, session.N.jsonl children and an optional sidecar."""
    root.mkdir(parents=True, exist_ok=True)
    if primary is not None:
        write_log(root / "session.jsonl", *primary)
    for n, child in enumerate(children, 1):
        write_log(root / f"session.{n}.jsonl", *child)
    if sidecar is not None:
        text = sidecar if isinstance(sidecar, str) else json.dumps(sidecar, indent=2)
        (root / "replay.override.json").write_text(text, encoding="utf-8")
    return root


def entries_json(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """The scenario format's JSON of loaded script entries (ScriptEntry or bare entries)."""
    from replay_engine import entry_to_json

    out = []
    for e in entries:
        out.append(e.to_json() if hasattr(e, "origin") else entry_to_json(e))
    return out


def finish(kind: str = "stop", **extra: Any) -> dict[str, Any]:
    """A finish chunk."""
    return {"type": "finish", "reason": {"kind": kind, **extra}}
