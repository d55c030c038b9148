"""Turns of the call streams in flight, a bounded amount of them per turn of the event loop.

Between two turns of the loop it polls for I/O: that is where a new connection is accepted
and a new request read (about one per loop turn while streams are busy), and where the
embedded debugger's keys arrive. If every stream in flight served a turn on every loop turn,
a loop turn with 50 streams would take several milliseconds and the 50th session would wait
for its first chunk behind dozens of them. So a stream that ends its turn queues here, and
each loop turn releases only as many queued streams (first come, first served) as fit
``ROUND_S`` by the measured cost of a turn: loop turns stay short, every stream still gets
its turns in order, and the total work per second is unchanged.
"""

from __future__ import annotations

import asyncio
from collections import deque

ROUND_S = 0.0005
"""Stream work one turn of the event loop releases (then it polls for I/O again)."""
COST_WEIGHT = 0.125
"""How much the latest turn moves the running estimate of a turn's cost."""
FIRST_COST_S = 0.00005
"""A turn's cost assumed before any was measured."""


class Rounds:
    """The queue of streams waiting for their next turn, released a loop turn at a time."""

    __slots__ = ("cost", "round_s", "_scheduled", "_waiting")

    def __init__(self, round_s: float = ROUND_S) -> None:
        self.round_s = round_s
        self.cost = FIRST_COST_S
        """The running estimate of one stream turn's duration, in seconds."""
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._scheduled = False

    async def pause(self, spent: float) -> None:
        """End a stream's turn, which ran ``spent`` seconds: resume it in a later turn of the
        loop, once the streams queued before it had theirs."""
        self.cost += (spent - self.cost) * COST_WEIGHT
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append(future)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._release, loop)
        try:
            await future
        finally:
            if not future.done():  # cancelled while queued: the release skips it
                future.cancel()

    def _release(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wake the queued streams that fit one round; come back next loop turn for the rest
        (after the woken ones have run)."""
        waiting = self._waiting
        fits = self.round_s / max(self.cost, 1e-7)
        room = len(waiting) if fits >= len(waiting) else max(1, int(fits))
        while waiting and room:
            future = waiting.popleft()
            if not future.done():
                future.set_result(None)
                room -= 1
        if waiting:
            loop.call_soon(self._release, loop)
        else:
            self._scheduled = False

    @property
    def waiting(self) -> int:
        """Streams queued for a turn right now."""
        return sum(1 for future in self._waiting if not future.done())
