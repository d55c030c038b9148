"""The recorded context of every call, as loaded with the scripts (``SessionScript.said``, read
in the same pass over the log as the calls) and replaced with them on reload: what each live
request is compared with (divergence, retries, binding by content). No file is read here."""

from __future__ import annotations

from collections.abc import Sequence

from ..context import script_contexts
from ..models import ContextItem, SessionScript

Context = tuple[ContextItem, ...]


class RecordedContexts:
    """Per script, the recorded context before each call (None where the log holds none)."""

    __slots__ = ("_cache", "_scripts")

    def __init__(self, scripts: Sequence[SessionScript]) -> None:
        self._scripts = scripts
        self._cache: dict[int, list[Context | None]] = {}

    def replace(self, scripts: Sequence[SessionScript]) -> None:
        """Take the contexts of reloaded scripts (those of the old ones are forgotten)."""
        self._scripts = scripts
        self._cache.clear()

    def at(self, script_index: int, call_index: int) -> Context | None:
        """What the recording held before call ``call_index`` of script ``script_index``."""
        found = self._cache.get(script_index)
        if found is None:
            if not 0 <= script_index < len(self._scripts):  # -1 is no script, not the last
                return None
            found = self._cache[script_index] = script_contexts(self._scripts[script_index])
        return found[call_index] if 0 <= call_index < len(found) else None
