"""The consumed check: whether a run drained every recorded script (SPEC 5).

``consumed_problems`` lists each reason in the section 5 wording; the engine raises
``NotConsumedError`` with them from ``assert_consumed``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import SessionScript
from .state import Run, script_length, session_label


def consumed_problems(scripts: Sequence[SessionScript], run: Run) -> list[str]:
    """Every reason ``run`` is not consumed; empty when it is."""
    problems: list[str] = []
    unbound = len(scripts) - len(run.bindings)
    if unbound > 0:
        problems.append(f"{unbound} recorded script(s) never bound to a live session")
    for b in run.bindings.values():
        total = script_length(scripts, b.script_index)
        if b.cursor < total:
            problems.append(f"{session_label(b.key)} consumed {b.cursor}/{total} "
                            "recorded call(s)")
    return problems
