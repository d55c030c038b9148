"""``{{fromRequest:PATTERN}}`` placeholders, resolved against the live request
(docs/format.md#serving-entries)."""

from __future__ import annotations

import re
from typing import Any

import regex

from ..errors import PlaceholderError
from ..models import AnyEntry, ChunksEntry, HangEntry, ThrowEntry

MARKER = "{{fromRequest:"
EMPTY_PLACEHOLDER = MARKER + "}}"
"""A placeholder of the empty pattern: it matches the empty text of any request, so it
resolves to nothing. ``literal`` puts one inside text that would otherwise read as a token."""
_TOKEN_OPENING = re.compile(r"\{\{(?=fromRequest:|session:)")
PATTERN_TIMEOUT_S = 1.0
"""A pattern that runs longer than this against one request fails the call instead of the server."""


def literal(text: str) -> str:
    """``text`` written so that it replays as itself: every ``{{`` that opens a placeholder or
    a ``{{session:N}}`` token is followed by an empty placeholder, so neither reads as one, and
    resolving the empty placeholder gives back ``text`` (model text that merely looks like a
    token, e.g. ``{{fromRequest:x}}`` becomes ``{{{{fromRequest:}}fromRequest:x}}``)."""
    if "{{" not in text:
        return text
    return _TOKEN_OPENING.sub(lambda _: "{{" + EMPTY_PLACEHOLDER, text)


def literal_value(value: Any) -> Any:
    """``value`` with ``literal`` applied to every string in it (keys left as they are)."""
    if isinstance(value, str):
        return literal(value)
    if isinstance(value, dict):
        return {k: literal_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal_value(v) for v in value]
    return value


def searched_text(messages: Any) -> str:
    """What ``{{fromRequest}}`` searches: every string leaf of the call's corpus (the messages a
    dialect read from the request), depth first, in order, joined by newlines."""
    leaves: list[str] = []
    stack: list[Any] = [messages]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            leaves.append(node)
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list | tuple):
            stack.extend(reversed(node))
    return "\n".join(leaves)


def split_placeholder(text: str, start: int) -> tuple[str, int]:
    """The pattern of the placeholder at ``start`` and the index just past it (docs/format.md#edge-cases)."""
    body = start + len(MARKER)
    close = text.find("}}", body)
    if close < 0:
        raise PlaceholderError(
            f"unterminated placeholder {text[start:start + 60]!r}: "
            "{{fromRequest:PATTERN}} must end with }}"
        )
    end = close
    while end < len(text) and text[end] == "}":
        end += 1
    return text[body : end - 2], end


def _resolve_text(text: str, corpus: str, cache: dict[str, str]) -> str:
    out: list[str] = []
    pos = 0
    while True:
        start = text.find(MARKER, pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:start])
        pattern, pos = split_placeholder(text, start)
        if pattern not in cache:
            cache[pattern] = _match_last(pattern, corpus)
        out.append(cache[pattern])


def _match_last(pattern: str, corpus: str) -> str:
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        raise PlaceholderError(f"invalid pattern in {{{{fromRequest:{pattern}}}}}: {exc}") from None
    last = None
    try:
        for match in compiled.finditer(corpus, timeout=PATTERN_TIMEOUT_S):
            last = match
    except TimeoutError:
        raise PlaceholderError(
            f"pattern {pattern!r} of a fromRequest placeholder ran longer than "
            f"{PATTERN_TIMEOUT_S:g}s against the request; simplify the pattern"
        ) from None
    if last is None:
        raise PlaceholderError(
            f"no match for {{{{fromRequest:{pattern}}}}} in the request's messages; the agent "
            "did not send what the recording expected"
        )
    if compiled.groups and last.group(1) is not None:
        return str(last.group(1))
    return str(last.group(0))


def _walk(value: Any, corpus_fn: Any, cache: dict[str, str]) -> tuple[bool, Any]:
    if isinstance(value, str):
        if MARKER not in value:
            return False, value
        return True, _resolve_text(value, corpus_fn(), cache)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            did, new = _walk(item, corpus_fn, cache)
            changed = changed or did
            out[key] = new
        return (True, out) if changed else (False, value)
    if isinstance(value, list):
        changed = False
        items: list[Any] = []
        for item in value:
            did, new = _walk(item, corpus_fn, cache)
            changed = changed or did
            items.append(new)
        return (True, items) if changed else (False, value)
    return False, value


def _contains(entry: ChunksEntry | ThrowEntry) -> bool:
    stack: list[Any] = [entry.chunks]
    if isinstance(entry, ThrowEntry):
        stack += [entry.message, entry.code]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if MARKER in node:
                return True
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def resolve_scripted_entry(entry: AnyEntry, messages: Any) -> AnyEntry:
    """Resolve every placeholder in ``entry``; an entry without any is returned unchanged.

    A hang is always returned unchanged: its only string, ``readyFile``, names a file the
    replay creates, and the agent's request must not choose where (it is refused there).
    """
    if isinstance(entry, HangEntry) or not _contains(entry):
        return entry
    corpus_cache: list[str] = []

    def corpus() -> str:
        if not corpus_cache:
            corpus_cache.append(searched_text(messages))
        return corpus_cache[0]

    cache: dict[str, str] = {}
    _, chunks = _walk(entry.chunks, corpus, cache)
    if isinstance(entry, ThrowEntry):
        return ThrowEntry.model_construct(
            kind="throw",
            chunks=chunks,
            message=_walk(entry.message, corpus, cache)[1],
            code=_walk(entry.code, corpus, cache)[1],
            accepted=entry.accepted,
        )
    return ChunksEntry.model_construct(kind="chunks", chunks=chunks)
