"""The moments of the debugger the context footer follows: what state the replay is in (a call
paused, recording, nothing bound, ...) and which pane has focus. Each key of the key table names
the moments it acts in; the footer shows those of the moments that hold now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from replay_engine import RunState

RECORDING = "recording"
"""Record mode, while calls are being recorded."""
LOAD_FAILED = "load-failed"
"""The last load failed (the banner says why)."""
UNFINISHED = "unfinished"
"""The load failed on what the override editor fixes (``o``): a primary call that never
finished, or a sidecar that does not load."""
ZOOMED = "zoomed"
"""A pane is zoomed (``z`` restores the layout: offered before anything else)."""
UNBOUND = "unbound"
"""Serving a loaded scenario, and no session of the followed run is bound yet."""
PAUSED = "paused"
"""A call of the followed run is held by the step gate."""
HANGING = "hanging"
"""A hang entry of the followed run waits for cancellation."""
STREAMING = "streaming"
"""A call of the followed run is streaming."""
IDLE = "idle"
"""Sessions are bound and nothing is in flight: time for the verdict."""
GOING_LIVE = "going-live"
"""Calls of a session went live to the upstream (``--upstream`` without ``--record``)."""
CAN_GO_LIVE = "can-go-live"
"""A loaded scenario served with an upstream to go live to."""

SCRIPTS = "scripts"
CALL = "call"
LIVE = "live"
BANNER = "banner"
"""The focused pane (the error banner is one while it shows)."""
SEARCH = "search"
"""The search box has focus (typing goes to it: only its own keys act)."""
SPARE = "spare"
"""Offered in any moment, when the footer has room left."""


@dataclass(frozen=True, slots=True)
class Situation:
    """What the moments are computed from (the app's state, without Textual)."""

    recording: bool = False
    live: bool = False
    """Calls went live and are recorded (the review is pending)."""
    can_go_live: bool = False
    """An upstream to go live to (``--upstream`` without ``--record``)."""
    load_failed: bool = False
    unfinished: bool = False
    loaded: bool = False
    serving: bool = False
    state: RunState | None = None
    focus: str | None = None
    """The focused pane (scripts, call, live, banner), None when none has focus."""
    zoomed: bool = False


def moments(now: Situation) -> tuple[str, ...]:
    """The moments that hold now: state moments first (most pressing first), then the focus."""
    out: list[str] = [ZOOMED] if now.zoomed else []
    if now.recording:
        out.append(RECORDING)
    if now.live:
        out.append(GOING_LIVE)
    if now.can_go_live:
        out.append(CAN_GO_LIVE)
    if now.load_failed:
        out.append(LOAD_FAILED)
        if now.unfinished:
            out.append(UNFINISHED)
    statuses: Sequence[str] = [b.status for b in now.state.bindings] if now.state else ()
    if "paused" in statuses:
        out.append(PAUSED)
    if "hanging" in statuses:
        out.append(HANGING)
    if "streaming" in statuses:
        out.append(STREAMING)
    if now.loaded and now.serving and not now.recording and not statuses:
        out.append(UNBOUND)
    elif statuses and all(s == "idle" for s in statuses):
        out.append(IDLE)
    if now.focus is not None:
        out.append(now.focus)
    return tuple(out)
