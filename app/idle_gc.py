"""Full passes of the cyclic collector run in the gaps between keys, not in the middle of one.

With sessions streaming, the screen's repaints leave cyclic garbage (Textual's cached strips)
and the engine's journal grows, so CPython starts a full collection every few seconds; each
holds the event loop for 20-40 ms, and a key that lands in one is painted that much later.
While the app runs, automatic full passes are off; a timer runs one once as many younger passes
have gone by as CPython's own threshold waits for, at a moment no key arrived for ``QUIET_S``
(or at once after ``FORCED_AFTER`` of them, so garbage never piles up under a held key).
Younger generations are collected by CPython as usual.
"""

from __future__ import annotations

import gc
import time

TICK_S = 0.1
"""How often the app asks whether a full pass is due."""
QUIET_S = 0.05
"""A full pass waits until no key arrived for this long (a key's repaint is done by then)."""
FULL_AFTER = 10
"""Second-generation passes between two full ones (CPython's default gen-2 threshold)."""
FORCED_AFTER = 100
"""A full pass runs regardless of keys once this many second-generation passes went by."""
_NEVER = 1 << 30


class IdleCollector:
    """Owns the collector's full passes while started (``start``/``stop`` pair up)."""

    def __init__(self) -> None:
        self._input_at = 0.0
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        """Turn CPython's automatic full passes off (``tick`` runs them instead)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            gc.set_threshold(self._saved[0], self._saved[1], _NEVER)

    def stop(self) -> None:
        """Give the full passes back to CPython, with the thresholds found at ``start``."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def input_seen(self) -> None:
        """A key arrived: a due full pass waits for a gap."""
        self._input_at = time.monotonic()

    def tick(self) -> bool:
        """Run a full pass when one is due and no key is being answered; True when it ran."""
        if self._saved is None or not gc.isenabled():
            return False
        pending = gc.get_count()[2]
        quiet = time.monotonic() - self._input_at >= QUIET_S
        if pending >= FORCED_AFTER or (pending >= FULL_AFTER and quiet):
            gc.collect()
            return True
        return False
