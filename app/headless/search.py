"""The ``/`` search: a query of words and ``field:value`` terms, matched against calls and lines.

Nothing here imports Textual."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_engine import ChunksEntry, ScriptEntry, ThrowEntry, summarize_entry

FIELDS = ("tool", "kind", "origin")


@dataclass(frozen=True, slots=True)
class Query:
    """Every term must match: free words anywhere, ``field:value`` in that field (prefix match)."""

    words: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when the query matches everything."""
        return not self.words and not self.fields

    def matches_text(self, text: str) -> bool:
        """Whether a plain line holds every word and every field value (lines have no fields)."""
        folded = text.casefold()
        return all(w in folded for w in self.words) and all(v in folded for _, v in self.fields)


def parse_query(text: str) -> Query:
    """``tool:read kind:throw hello`` → fields and words, case-folded."""
    words: list[str] = []
    fields: list[tuple[str, str]] = []
    for term in text.casefold().split():
        name, sep, value = term.partition(":")
        if sep and name in FIELDS and value:
            fields.append((name, value))
        else:
            words.append(term)
    return Query(tuple(words), tuple(fields))


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What a call is searched by."""

    kind: str
    origin: str
    tools: tuple[str, ...]
    text: str
    """Everything else, case-folded: summary text, finish, turn/step key, kind, origin, tools."""


def call_facts(item: ScriptEntry) -> CallFacts:
    """The searchable facts of one call (its whole text, not the cut summary)."""
    info: dict[str, Any] = summarize_entry(item, width=1_000_000)
    entry = item.entry
    chunks = entry.chunks if isinstance(entry, ChunksEntry | ThrowEntry) else []
    tools = tuple(dict.fromkeys(str(c["name"]) for c in chunks
                                if c.get("type") == "tool-call-delta" and isinstance(c.get("name"), str)))
    text = " ".join(str(x) for x in (info["summary"], info["finish"] or "", item.call_key or "",
                                     info["kind"], info["origin"], *tools))
    return CallFacts(str(info["kind"]).casefold(), str(info["origin"]).casefold(),
                     tuple(t.casefold() for t in tools), text.casefold())


def call_matches(query: Query, facts: CallFacts) -> bool:
    """Whether a call matches every term of ``query``."""
    for name, value in query.fields:
        if name == "kind" and not facts.kind.startswith(value):
            return False
        if name == "origin" and not facts.origin.startswith(value):
            return False
        if name == "tool" and not any(value in tool for tool in facts.tools):
            return False
    return all(word in facts.text for word in query.words)
