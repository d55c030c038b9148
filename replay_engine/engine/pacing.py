"""Pacing: how long the engine waits before each chunk, a fixed delay or the recorded gaps.

``Pace`` is the setting (``--pace``, the control API, the debugger); ``chunk_delay`` turns
it into the wait before one chunk of one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError

MAX_RECORDED_GAP_S = 5.0
"""Recorded gaps longer than this are cut to it, so a replay never stalls on a long think."""


@dataclass(frozen=True, slots=True)
class Pace:
    """How long to wait before each chunk: a fixed delay, or the recorded gaps scaled."""

    mode: Literal["fixed", "recorded"] = "fixed"
    ms: int = 0
    speed: float = 1.0

    def describe(self) -> str:
        """Short human form: ``burst``, ``20ms`` or ``recorded x2``."""
        if self.mode == "recorded":
            return f"recorded x{self.speed:g} (else {self.ms}ms)"
        return f"{self.ms}ms" if self.ms else "burst"

    @staticmethod
    def parse(text: str, ms: int = 0) -> Pace:
        """Parse ``recorded`` / ``recorded:SPEED`` (as given to ``--pace``)."""
        name, _, speed = text.partition(":")
        if name != "recorded":
            raise ConfigError(f"--pace {text!r}: expected recorded or recorded:SPEED")
        try:
            value = float(speed) if speed else 1.0
        except ValueError:
            value = -1
        if not value > 0:
            raise ConfigError(f"--pace {text!r}: SPEED must be a positive number")
        return Pace("recorded", ms, value)


def chunk_delay(pace: Pace, times: Any, index: int) -> float:
    """Seconds to wait before chunk ``index`` of a call recorded at ``times`` (ms, or None)."""
    if pace.mode == "recorded" and times is not None and index < len(times):
        if index == 0:
            return 0.0
        gap = float(times[index] - times[index - 1]) / 1000.0 / pace.speed
        return min(max(gap, 0.0), MAX_RECORDED_GAP_S)
    return pace.ms / 1000.0
