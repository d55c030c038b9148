"""The engine's own small pool for ``{{fromRequest}}`` patterns (docs/format.md#serving-entries).

Patterns are user regular expressions: they run in worker threads, bounded overall, per
run and in how many calls may wait, so runaway patterns of one run can neither take every
core from the streams of the others nor queue without bound.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import anyio

from ..errors import PlaceholderError
from ..models import AnyEntry
from .placeholders import resolve_scripted_entry
from .state import Call, Run

PLACEHOLDER_WORKERS = max(1, min(4, (os.cpu_count() or 2) - 1))
"""Worker threads resolving ``{{fromRequest}}`` patterns at once: one core stays for the loop."""
PLACEHOLDER_QUEUE = 256
"""Calls that may wait for a worker; beyond it a call fails at once (PLACEHOLDER)."""


class PlaceholderPool:
    """At most ``workers`` patterns at once, ``per_run`` of them for one run, and at most
    ``PLACEHOLDER_QUEUE`` calls waiting."""

    __slots__ = ("_limiter", "_per_run", "_waiting", "_workers")

    def __init__(self, workers: int = PLACEHOLDER_WORKERS, per_run: int = 1) -> None:
        self._workers = workers
        self._per_run = per_run
        self._waiting = 0
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def limiter(self) -> anyio.CapacityLimiter | None:
        """The worker pool patterns run in (None until the first one ran)."""
        return self._limiter

    @property
    def waiting(self) -> int:
        """Calls waiting for (or holding) a worker now."""
        return self._waiting

    async def resolve(self, runs: Mapping[str, Run], call: Call, entry: AnyEntry,
                      messages: Any) -> AnyEntry:
        """``entry`` with its placeholders resolved against ``messages`` in a worker thread."""
        if self._waiting >= PLACEHOLDER_QUEUE:
            raise PlaceholderError(
                f"{self._waiting} calls are already waiting for their fromRequest "
                "placeholders to be resolved; the server refuses more until they are done")
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._workers)
        run = runs.get(call.run)
        if run is not None and run.limiter is None:
            run.limiter = anyio.CapacityLimiter(self._per_run)
        self._waiting += 1
        try:
            if run is not None and run.limiter is not None:
                async with run.limiter:
                    return await anyio.to_thread.run_sync(
                        resolve_scripted_entry, entry, messages, limiter=self._limiter)
            return await anyio.to_thread.run_sync(
                resolve_scripted_entry, entry, messages, limiter=self._limiter)
        finally:
            self._waiting -= 1
