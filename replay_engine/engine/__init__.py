"""The replay engine: binds live sessions to scripts and serves their entries (SPEC 5-6).

``core`` holds ``ReplayEngine`` and ``CallHandle``; ``events`` the observer events;
``state`` the read-only views it hands out (journal records, run state, script diffs).
"""

from __future__ import annotations

from . import events
from .core import DEFAULT_RUN, HANG_PREFIX, CallHandle, Observer, ReplayEngine
from .state import (
    BindingState,
    CallRecord,
    Pace,
    RunState,
    Status,
    StepMode,
    diff_scripts,
    session_label,
)

__all__ = [
    "DEFAULT_RUN",
    "HANG_PREFIX",
    "BindingState",
    "CallHandle",
    "CallRecord",
    "Observer",
    "Pace",
    "ReplayEngine",
    "RunState",
    "Status",
    "StepMode",
    "diff_scripts",
    "events",
    "session_label",
]
