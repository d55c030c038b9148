"""Cancellation: marking calls cancelled, waking them, and the cancellable wait of a stream.

Every wait a stream makes (pace delay, step gate, hang) goes through ``wait``, so a
cancelled call fails with ``AbortedError`` at its next step and never later.
"""

from __future__ import annotations

import anyio

from ..errors import AbortedError
from .state import Call, Run


def cancel_call(call: Call) -> None:
    """Mark the call cancelled and wake it; its stream raises AbortedError when it resumes."""
    call.cancelled = True
    call.wake.set()


def cancel_run(run: Run) -> None:
    """Cancel every in-flight call of ``run`` (it is reset or forgotten)."""
    for binding in run.bindings.values():
        if binding.call is not None:
            cancel_call(binding.call)


def calls_to_cancel(run: Run, session_id: str | None, all_hanging: bool) -> list[Call]:
    """The run's in-flight calls that ``cancel`` targets: one session's, or every hanging one."""
    out: list[Call] = []
    for binding in run.bindings.values():
        call = binding.call
        if call is None:
            continue
        if (all_hanging and call.status == "hanging") or (
            not all_hanging and binding.key == session_id
        ):
            out.append(call)
    return out


async def wait(call: Call, seconds: float | None) -> None:
    """Sleep (or, with None, wait for a wake-up); returns early when woken."""
    if call.cancelled:
        raise AbortedError()
    wake = call.wake
    if seconds is None:
        await wake.wait()
    elif seconds > 0:
        with anyio.move_on_after(seconds):
            await wake.wait()
    if call.cancelled:
        raise AbortedError()
    if wake.is_set() and call.wake is wake:
        call.wake = anyio.Event()  # a wake-up ends this wait only, not every later pace wait
