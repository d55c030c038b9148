"""Helpers for driving the real ReplayEngine in tests: scripts in code and an event recorder."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from replay_engine import (
    ChunksEntry,
    HangEntry,
    ReplayEngine,
    ReplayError,
    ScriptEntry,
    SessionScript,
    ThrowEntry,
    load_scenario,
)
from replay_engine import events as ev

FIN = {"type": "finish", "reason": {"kind": "stop"}}


def text_entry(*texts: str) -> ChunksEntry:
    """A chunks entry streaming ``texts`` as deltas, then finishing."""
    chunks: list[dict[str, Any]] = [{"type": "text-delta", "index": 0, "text": t} for t in texts]
    return ChunksEntry(kind="chunks", chunks=[*chunks, dict(FIN)])


def throw_entry(message: str = "boom", code: str = "SERVER", prefix: Sequence[str] = ()) -> ThrowEntry:
    """A throw entry with an optional text prefix."""
    chunks = [{"type": "text-delta", "index": 0, "text": t} for t in prefix]
    return ThrowEntry(kind="throw", chunks=chunks, message=message, code=code)


def hang_entry(ready: str | None = None) -> HangEntry:
    """A hang entry."""
    return HangEntry(kind="hang", readyFile=ready) if ready else HangEntry(kind="hang")


def script(rid: str, *entries: Any, primary: bool = False, created: float = 0) -> SessionScript:
    """A session script from entries."""
    return SessionScript(rid, created, [ScriptEntry(entry=e, origin="derived") for e in entries], primary)


def scripts(*per_script: Sequence[Any]) -> list[SessionScript]:
    """Scripts named s0, s1, ... (the first is primary)."""
    return [script(f"s{i}", *entries, primary=i == 0) for i, entries in enumerate(per_script)]


class Recorder:
    """Collects engine events and lets a test await one (bounded by the caller's fail_after)."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.events: list[ev.EngineEvent] = []
        self._waiters: list[tuple[Callable[[ev.EngineEvent], bool], anyio.Event]] = []
        self.unsubscribe = engine.subscribe(self._on_event)

    def _on_event(self, event: ev.EngineEvent) -> None:
        self.events.append(event)
        for predicate, flag in list(self._waiters):
            if predicate(event):
                flag.set()

    async def wait_for(self, kind: type, count: int = 1, **fields: Any) -> ev.EngineEvent:
        """Wait until ``count`` events of ``kind`` (matching ``fields``) have been seen."""

        def matches(event: ev.EngineEvent) -> bool:
            return isinstance(event, kind) and all(getattr(event, k) == v for k, v in fields.items())

        flag = anyio.Event()

        def enough(_: ev.EngineEvent) -> bool:
            return sum(1 for e in self.events if matches(e)) >= count

        if not enough(self.events[-1] if self.events else ev.EngineEvent("")):
            self._waiters.append((enough, flag))
            await flag.wait()
        return [e for e in self.events if matches(e)][count - 1]

    def kinds(self) -> list[str]:
        """Event class names in order."""
        return [type(e).__name__ for e in self.events]


async def collect(engine: ReplayEngine, session: str | None, messages: Any = None, *,
                  run: str = "default") -> list[dict[str, Any]]:
    """Serve one call to the end and return its chunks."""
    return [c async for c in engine.stream(session, messages, run=run)]


Served = list[tuple[list[dict[str, Any]], "str | None"]]
"""Per call: the chunks the agent received and the error code it ended with (None: finished)."""


def sidecar_bytes(doc: Any) -> bytes:
    """The exact bytes an authored ``replay.override.json`` holds: 2-space JSON, trailing newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


async def serve_scenario_calls(root: Path, calls: int, *, hang_prefix: int = 2,
                               reload: bool = False) -> Served:
    """Serve ``calls`` calls of a fresh load of ``root`` through a real engine, then assert consumed.

    A hang is cancelled once ``hang_prefix`` of its chunks arrived (0: before any). With
    ``reload`` the engine starts on the old load and is reloaded, as the debugger does.
    """
    engine = ReplayEngine(load_scenario(root).scripts, ready_dir=root)
    if reload:
        engine.reload(load_scenario(root).scripts)
    out: Served = []
    for _ in range(calls):
        handle = engine.open_call("s")
        got: list[dict[str, Any]] = []
        if handle.entry.kind == "hang" and hang_prefix == 0:
            handle.cancel()
        try:
            async for chunk in handle.chunks():
                got.append(chunk)
                if handle.entry.kind == "hang" and len(got) == hang_prefix:
                    handle.cancel()
        except ReplayError as exc:
            out.append((got, exc.code))
        else:
            out.append((got, None))
    engine.assert_consumed()
    return out
