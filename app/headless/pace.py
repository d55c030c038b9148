"""The pace ladder of the ``+`` / ``-`` keys and the palette: fixed delays per chunk, and speeds
of the recorded gaps."""

from __future__ import annotations

from replay_engine import Pace

PACE_STEPS_MS = (0, 5, 20, 50, 100, 250, 1000)
"""Fixed paces, fastest first (ms per chunk)."""
RECORDED_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 10.0)
"""Speeds of the recorded gaps, slowest first."""


def step_pace(pace: Pace, direction: int) -> Pace:
    """One rung faster (``direction`` -1) or slower (+1) than ``pace``, from wherever it is: a
    fixed pace between rungs (``--pace-ms 400``) goes to the next rung, 250 or 1000; recorded
    gaps change their speed. The ends of the ladder stay where they are."""
    if pace.mode == "recorded":
        speeds = RECORDED_SPEEDS
        if direction < 0:
            speed = min((s for s in speeds if s > pace.speed), default=speeds[-1])
        else:
            speed = max((s for s in speeds if s < pace.speed), default=speeds[0])
        return Pace("recorded", pace.ms, speed)
    if direction < 0:
        ms = max((m for m in PACE_STEPS_MS if m < pace.ms), default=PACE_STEPS_MS[0])
    else:
        ms = min((m for m in PACE_STEPS_MS if m > pace.ms), default=PACE_STEPS_MS[-1])
    return Pace("fixed", ms)
