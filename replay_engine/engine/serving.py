"""Serving one bound call: the hot loop of chunks through the step gate and the pace, and the
bookkeeping when the call ends (journal, verdict facts, events). The engine owns the state;
this holds the loop, so the call handle needs only this, not the engine."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ..chunkshape import ends_in_error_finish
from ..errors import AbortedError, ReplayError, ScriptedFailure
from ..models import ChunksEntry, HangEntry, ThrowEntry
from . import events as ev
from .cancel import wait
from .gate import StepGates
from .pacing import Pace, chunk_delay
from .ready import touch_ready_file
from .state import Call, Run, Unfinished

HANG_PREFIX: tuple[dict[str, Any], ...] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)
"""What a hang entry streams before it waits (docs/format.md#serving-entries)."""
Outcome = Literal["finished", "failed", "cancelled"]


class CallServing:
    """Streams the engine's bound calls and records how each ended."""

    __slots__ = ("_calls", "_emit", "_gates", "_hub", "_pace", "_ready_created", "_ready_dir",
                 "_runs")

    def __init__(self, *, runs: dict[str, Run], calls: dict[int, Call], gates: StepGates,
                 hub: ev.EventHub, pace: Callable[[], Pace], ready_dir: Callable[[str], Path],
                 ready_created: list[Path]) -> None:
        self._runs = runs
        self._calls = calls
        self._gates = gates
        self._hub = hub
        self._emit = hub.emit
        self._pace = pace
        self._ready_dir = ready_dir
        self._ready_created = ready_created

    def end(self, call: Call, outcome: Outcome, exc: ReplayError | None = None) -> None:
        """Close ``call`` once: its journal record, the binding's verdict facts, one event."""
        if call.record.outcome != "streaming":
            return
        rec = call.record
        rec.outcome = outcome
        rec.ended_at = time.time()
        rec.chunks_served = call.served
        if exc is not None:
            rec.code, rec.message = exc.code, exc.message
        call.status = "idle"
        self._calls.pop(call.id, None)
        owner = self._runs.get(call.run)
        binding = owner.bindings.get(call.key) if owner is not None else None
        if outcome == "cancelled" and not isinstance(call.entry, HangEntry):
            total = len(call.entry.chunks)
            if call.user_cancelled:
                rec.aborted = True
                rec.unfinished = "cancelled by the user"
                if binding is not None:
                    binding.aborted.append(call.call_index)
            elif call.served < total or isinstance(call.entry, ThrowEntry):
                rec.unfinished = "the client went away (or the server stopped) mid-stream"
            if binding is not None and rec.unfinished is not None:
                binding.unfinished.append(
                    Unfinished(call.call_index, call.served, total, rec.unfinished))
        elif outcome == "finished" and binding is not None and isinstance(call.entry, ChunksEntry) \
                and ends_in_error_finish(call.entry.chunks):
            binding.last_failed = True  # an error finish is a scripted failure, as a throw is
        elif outcome == "failed" and binding is not None:
            if isinstance(exc, ScriptedFailure):
                binding.last_failed = True
            elif exc is not None:
                binding.unfinished.append(Unfinished(
                    call.call_index, call.served, 0, f"failed with {exc.code}: {exc.message}",
                    failed=True))
        if binding is not None and binding.call is call:
            binding.call = None
        args = (call.run, call.key, call.script_index, call.call_index, call.id)
        if outcome == "finished":
            self._emit(ev.CallFinished(*args, call.served))
        elif outcome == "cancelled":
            self._emit(ev.CallCancelled(*args))
        else:
            assert exc is not None
            self._emit(ev.CallFailed(*args, exc.code, exc.message))

    def next_is_immediate(self, call: Call) -> bool:
        """Whether the next chunk of ``call`` goes out without waiting (gate, pace or hang)."""
        mode = self._gates.of(call.run).mode
        if call.budget is None and mode == "run" and not self._pace().ms and (
                self._pace().mode == "fixed" and not isinstance(call.entry, HangEntry)):
            return True  # the common burst case, checked per chunk
        if call.cancelled:
            return True
        if isinstance(call.entry, HangEntry):
            return call.served < len(HANG_PREFIX)
        if (call.budget == 0 or mode == "chunk") and not call.run_to_end:
            return False
        return chunk_delay(self._pace(), call.times, call.served) <= 0.0

    async def serve(self, call: Call) -> AsyncIterator[dict[str, Any]]:
        """The chunks of ``call``'s entry; raises ScriptedFailure / AbortedError as it says."""
        entry = call.entry
        gate = self._gates.of(call.run)
        hub = self._hub
        outcome: Outcome = "cancelled"
        error: ReplayError | None = None
        try:
            if isinstance(entry, HangEntry):
                chunks: Sequence[dict[str, Any]] = HANG_PREFIX
                paced = False
            else:
                assert isinstance(entry, ChunksEntry | ThrowEntry)
                chunks = entry.chunks
                paced = True
            for index, chunk in enumerate(chunks):
                # Hot loop: only await the gate / the pace when they can hold the chunk.
                if call.budget == 0 and not call.run_to_end:
                    await gate.hold(call, self._emit)
                if paced:
                    delay = chunk_delay(self._pace(), call.times, index)
                    if delay > 0:
                        await wait(call, delay)
                if call.cancelled:
                    raise AbortedError()
                call.served += 1
                if call.budget is not None and not call.run_to_end:
                    call.budget = max(call.budget - 1, 0)
                elif gate.mode == "chunk" and not call.run_to_end:
                    call.budget = 0
                if hub.chunk_observers:
                    hub.deliver(list(hub.chunk_observers), ev.ChunkServed(
                        call.run, call.key, call.script_index, call.call_index, call.id, index))
                yield chunk
            if isinstance(entry, ThrowEntry):
                if not entry.chunks:
                    await gate.hold(call, self._emit)
                if call.cancelled:
                    raise AbortedError()
                raise ScriptedFailure(entry.message, entry.code)
            if isinstance(entry, HangEntry):
                if entry.readyFile is not None:
                    where = self._ready_dir(call.run)
                    call.ready_file = str(touch_ready_file(where, entry.readyFile,
                                                           created=self._ready_created))
                call.status = "hanging"
                self._emit(ev.HangWaiting(call.run, call.key, call.script_index, call.call_index,
                                          call.id, call.ready_file))
                while True:
                    await wait(call, None)
            outcome = "finished"
        except AbortedError as exc:
            outcome, error = "cancelled", exc
            raise
        except ReplayError as exc:
            outcome, error = "failed", exc
            raise
        finally:
            self.end(call, outcome, error)
