"""Whether a live request is still the recorded conversation: its new content against the
recorded context of the call it took (the verdict's divergence and content binding).

User messages compare in order, tool results by the tool call they answer (the order parallel
tool results arrive in is the client's business). Texts compare with whitespace collapsed, and
a harness ``{{…}}`` token in the recording matches any text. What clients legitimately add
(system prompts, tool schemas, metadata) is not new content, so it never counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .context import ContextItem

_TOKEN = re.compile(r"\{\{[^{}]*\}\}")
QUOTE_WIDTH = 80


def _squeeze(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def _pattern(recorded: str) -> re.Pattern[str] | None:
    """The recorded text as a pattern when it holds ``{{…}}`` tokens (None: compare as is)."""
    pieces = _TOKEN.split(recorded)
    if len(pieces) == 1:
        return None
    return re.compile(".*?".join(re.escape(p) for p in pieces), re.DOTALL)


def same_text(live: str, recorded: str) -> bool:
    """Whether ``live`` says what ``recorded`` said (whitespace and tokens tolerated)."""
    a, b = _squeeze(live), _squeeze(recorded)
    if a == b:
        return True
    pattern = _pattern(b)
    return pattern is not None and pattern.fullmatch(a) is not None


def _same_id(live: str | None, recorded: str | None) -> bool:
    if live is None or recorded is None:
        return live is recorded
    return same_text(live, recorded)


def _quote(item: ContextItem) -> str:
    text = _squeeze(item.text)
    if len(text) > QUOTE_WIDTH:
        text = text[: QUOTE_WIDTH - 1] + "…"
    return repr(text)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place a live request left the recording."""

    kind: str
    """user-differs, user-extra, user-missing, tool-differs, tool-unknown or tool-missing."""
    where: str
    """Which message: ``user message 2`` or ``tool result call_1``."""
    recorded: ContextItem | None
    live: ContextItem | None

    def describe(self) -> str:
        """One line naming what the recording had and what came."""
        if self.kind == "tool-unknown":
            assert self.live is not None
            return (f"{self.where}: the live request answers tool call {self.live.call_id!r}, "
                    "which the recording never issued here")
        if self.kind == "tool-missing" or self.kind == "user-missing":
            assert self.recorded is not None
            return (f"{self.where}: the recording had {_quote(self.recorded)}, "
                    "missing from the live request")
        if self.kind == "user-extra":
            assert self.live is not None
            return (f"{self.where}: the live request has {_quote(self.live)}, "
                    "which the recording does not have here")
        assert self.live is not None and self.recorded is not None
        return f"{self.where}: recorded {_quote(self.recorded)}, live {_quote(self.live)}"

    def to_json(self) -> dict[str, Any]:
        """JSON form (the journal's ``divergence``)."""
        def side(item: ContextItem | None) -> dict[str, Any] | None:
            if item is None:
                return None
            return {"role": item.role, "text": item.text, "toolCallId": item.call_id}
        return {"kind": self.kind, "where": self.where, "recorded": side(self.recorded),
                "live": side(self.live), "text": self.describe()}


def divergence(live: Sequence[ContextItem],
               recorded: Sequence[ContextItem]) -> Divergence | None:
    """The first difference between a live request's new content and the recorded context
    (None when the live request is the recorded conversation)."""
    users_live = [i for i in live if i.role != "tool"]
    users_rec = [i for i in recorded if i.role != "tool"]
    for n in range(max(len(users_live), len(users_rec))):
        where = f"user message {n + 1}"
        a = users_live[n] if n < len(users_live) else None
        b = users_rec[n] if n < len(users_rec) else None
        if a is None:
            return Divergence("user-missing", where, b, None)
        if b is None:
            return Divergence("user-extra", where, None, a)
        if not same_text(a.text, b.text):
            return Divergence("user-differs", where, b, a)
    tools_rec = [i for i in recorded if i.role == "tool"]
    unmatched = list(tools_rec)
    for n, a in enumerate(i for i in live if i.role == "tool"):
        found = next((b for b in unmatched if _same_id(a.call_id, b.call_id)), None)
        if found is None and a.call_id is None and unmatched:
            found = unmatched[0]  # a client that names no id: compare in order
        if found is None:
            if a.call_id is None:
                return Divergence("user-extra", f"tool result {n + 1}", None, a)
            return Divergence("tool-unknown", f"tool result {a.call_id}", None, a)
        unmatched.remove(found)
        if not same_text(a.text, found.text):
            return Divergence("tool-differs", f"tool result {found.call_id or n + 1}", found, a)
    if unmatched:
        b = unmatched[0]
        return Divergence("tool-missing", f"tool result {b.call_id or len(tools_rec)}", b, None)
    return None


def same_content(a: Sequence[ContextItem], b: Sequence[ContextItem]) -> bool:
    """Whether two requests carry the same new content (a retry of the other)."""
    return divergence(a, b) is None
