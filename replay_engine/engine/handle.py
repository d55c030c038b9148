"""The handle a server gets for one bound call: its entry, its chunks, cancel and readiness."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..models import AnyEntry
from .cancel import cancel_call
from .serving import CallServing
from .state import Call


class CallHandle:
    """A bound call: iterate ``chunks()`` to serve it; ``cancel()`` ends it as aborted."""

    def __init__(self, serving: CallServing, call: Call) -> None:
        self._serving = serving
        self._call = call

    @property
    def entry(self) -> AnyEntry:
        """The entry being served (placeholders resolved)."""
        return self._call.entry

    @property
    def call_index(self) -> int:
        """0-based index of the call in its script."""
        return self._call.call_index

    @property
    def script_index(self) -> int:
        """Index of the script the session is bound to."""
        return self._call.script_index

    @property
    def call_id(self) -> int:
        """Engine-wide id of the call."""
        return self._call.id

    def cancel(self) -> None:
        """Cancel the call; its stream fails with AbortedError at the next check."""
        cancel_call(self._call)

    def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """The chunks of the entry; raises ScriptedFailure / AbortedError as the entry says."""
        return self._serving.serve(self._call)

    def ready(self) -> bool:
        """True when the next step of ``chunks()`` will not wait (no pace delay, gate or hang).

        Servers use it to coalesce chunks into one write only while nothing would hold them.
        """
        return self._serving.next_is_immediate(self._call)
