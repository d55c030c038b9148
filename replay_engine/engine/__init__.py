"""The replay engine: binds live sessions to scripts and serves their entries.

The rules: docs/format.md#binding and #serving-entries.

``core`` holds ``ReplayEngine`` and the serving loop; ``handle`` the ``CallHandle`` a
server gets per call; ``binding`` claims scripts and advances cursors; ``placeholders``
resolves ``{{fromRequest}}`` against the live request; ``gate`` the step
modes, breakpoints and pause / step; ``pacing`` the delay before each chunk; ``cancel``
cancellation and the cancellable wait; ``ready`` hang ready files; ``verdict`` the consumed
check; ``state`` the run records, the journal and the read-only views; ``events`` what
observers receive and the hub that delivers it.
"""

from __future__ import annotations

from . import events
from .claims import BindMode
from .core import DEFAULT_RUN, HANG_PREFIX, CallHandle, Observer, ReplayEngine
from .gate import parse_breakpoint
from .pacing import Pace
from .staging import StagedScripts
from .state import (
    DEFAULT_JOURNAL_LIMIT,
    BindingState,
    CallRecord,
    RunState,
    Status,
    StepMode,
    diff_scripts,
    session_label,
)

__all__ = [
    "DEFAULT_JOURNAL_LIMIT",
    "BindMode",
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
    "StagedScripts",
    "StepMode",
    "diff_scripts",
    "events",
    "parse_breakpoint",
    "session_label",
]
