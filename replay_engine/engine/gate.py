"""The step gate: step modes, breakpoints, and pausing / stepping a call between chunks.

The debugger and the control API drive it. Every run has a gate of its own (``StepGates``):
switching one run to chunk mode, or a breakpoint set while following it, never holds the
calls of another. A call's ``budget`` says how many chunks it may still serve (None: no
limit, 0: held); ``run_to_end`` lets one call finish whatever the mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import anyio

from . import events as ev
from .cancel import wait
from .pacing import Pace
from .state import Call, StepMode

StepHow = Literal["chunk", "call", "continue"]


def parse_breakpoint(text: str) -> tuple[int, int]:
    """``SCRIPT:CALL`` (numbered from 0, as the debugger shows calls) as a pair; ValueError
    saying the form (``--break`` of the debugger, ``--dsh-replay-break`` of the plugin)."""
    script, sep, call = text.partition(":")
    if not sep or not script.strip().isdigit() or not call.strip().isdigit():
        raise ValueError(f"{text!r}: a breakpoint is SCRIPT:CALL, two numbers from 0 "
                         "(0:0 is the primary's first call)")
    return int(script), int(call)


class StepGate:
    """One run's step mode and breakpoints, and the hold they put on its calls."""

    __slots__ = ("breakpoints", "mode", "run")

    def __init__(self, run: str) -> None:
        self.run = run
        self.mode: StepMode = "run"
        self.breakpoints: set[tuple[int, int]] = set()

    def arm(self, call: Call) -> None:
        """Take a new call: hold it before its first chunk when stepping or at a breakpoint."""
        if self.mode != "run" or (call.script_index, call.call_index) in self.breakpoints:
            call.budget = 0

    def set_mode(self, mode: StepMode, calls: Iterable[Call]) -> None:
        """Change the mode; ``run`` releases every held call among ``calls`` (those passing
        through this gate)."""
        self.mode = mode
        if mode == "run":
            for call in calls:
                if call.run == self.run and (call.status == "paused" or call.budget == 0):
                    call.budget = None
                    call.wake.set()

    def toggle(self, script_index: int, call_index: int) -> bool:
        """Add or remove a breakpoint; returns whether it is now set."""
        key = (script_index, call_index)
        if key in self.breakpoints:
            self.breakpoints.discard(key)
        else:
            self.breakpoints.add(key)
        return key in self.breakpoints

    def settings(self, pace: Pace) -> dict[str, Any]:
        """What ``SettingsChanged`` reports for the run: mode, pace and breakpoints."""
        return {
            "mode": self.mode,
            "pace": pace.describe(),
            "breakpoints": sorted(self.breakpoints),
        }

    async def hold(self, call: Call, emit: Callable[[ev.EngineEvent], None]) -> None:
        """Wait while the call has no budget left, reporting it paused."""
        while call.budget == 0 and not call.run_to_end:
            call.status = "paused"
            call.wake = anyio.Event()
            emit(ev.CallPaused(call.run, call.key, call.script_index, call.call_index,
                               call.id, call.served))
            await wait(call, None)
            call.wake = anyio.Event()
        call.status = "streaming"


class StepGates:
    """Every run's gate, made on first use: a run starts in run mode without breakpoints."""

    __slots__ = ("_gates",)

    def __init__(self) -> None:
        self._gates: dict[str, StepGate] = {}

    def of(self, run: str) -> StepGate:
        """The gate of ``run`` (made now when it has none)."""
        gate = self._gates.get(run)
        if gate is None:
            gate = self._gates[run] = StepGate(run)
        return gate

    def peek(self, run: str) -> StepGate:
        """The gate of ``run`` if it has one, else a fresh one that is not kept."""
        return self._gates.get(run) or StepGate(run)

    def forget(self, run: str) -> None:
        """Drop the run's gate (the run was deleted)."""
        self._gates.pop(run, None)


def pause(call: Call) -> None:
    """Hold the call before its next chunk."""
    call.budget = 0
    call.run_to_end = False


def release(call: Call, how: StepHow) -> None:
    """Give a held call one more chunk (``chunk``: presses the call had no time to serve yet
    add up) or the rest of its chunks (``call``, ``continue``)."""
    if how == "chunk":
        call.budget = 1 if call.budget is None else call.budget + 1
    else:
        call.budget = None
        call.run_to_end = True
