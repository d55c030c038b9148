"""Which script a new live session claims, and the live ids recorded sessions bound to
(the binding extension of docs/format.md#binding, and #session-tokens).

A run records, per script index, the live id of the session bound to it (a session that
carries an id) or announced for it: a parent's request whose text says ``started subagent
ID`` fills the first script index > 0 with no live id yet. A new session then claims the
unclaimed script announced for its id, else the one unclaimed script whose first recorded
context its request matches, else the next unclaimed script (first-call order).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

from .state import Run

ANNOUNCEMENT = re.compile(r"started subagent ([^\s\"'<>]+)")
"""How a parent's messages announce a child's live id (docs/format.md#session-tokens)."""
_NEEDLE = "started subagent "

BindRule = Literal["announced", "content", "order"]
BindMode = Literal["content", "order"]
"""``content`` (default): announced, then by content, then by order; ``order``: first-call order
alone (docs/format.md#binding)."""


def _string_leaves(value: Any) -> Iterator[str]:
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list | tuple):
            stack.extend(reversed(node))


def note_announcements(run: Run, script_count: int, messages: Any) -> None:
    """Record the children a request announces: each id not yet recorded fills the first
    script index > 0 without a live id; the scan stops when none is left."""
    if all(i in run.live_ids for i in range(1, script_count)):
        return
    known = set(run.live_ids.values())
    for text in _string_leaves(messages):
        if _NEEDLE not in text:
            continue
        for match in ANNOUNCEMENT.finditer(text):
            ident = match.group(1)
            if ident in known:
                continue
            slot = next((i for i in range(1, script_count) if i not in run.live_ids), None)
            if slot is None:
                return
            run.live_ids[slot] = ident
            known.add(ident)


def claim_script(run: Run, script_count: int, session_id: str | None, *,
                 matches: Callable[[int], bool] | None = None) -> tuple[int, BindRule] | None:
    """The script a new session claims and the rule that chose it (None: none is left).

    ``matches(i)`` says whether the request is script ``i``'s first recorded context; given,
    the one unclaimed script that matches wins over first-call order (a tie or none: order).
    """
    taken = {b.script_index for b in run.bindings.values()}
    if session_id is not None:
        for index, ident in run.live_ids.items():
            if ident == session_id and index not in taken and index < script_count:
                return index, "announced"
    free = [i for i in range(script_count) if i not in taken]
    if not free:
        return None
    if matches is not None and len(free) > 1:
        # a slot announced for another live id is that session's, never claimed by content
        announced = {i for i in run.live_ids if i not in taken}
        fitting = [i for i in free if i not in announced and matches(i)]
        if len(fitting) == 1:
            return fitting[0], "content"
    return free[0], "order"
