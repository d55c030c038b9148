"""The client's secrets kept out of everything the recorder writes.

A secret is learnt from the request: its secret-bearing headers (``Authorization``,
``x-api-key``, ``x-goog-api-key``, cookies, anything naming a key, token, secret or auth) and
its secret query parameters (``?key=``, ``?api_key=``, ``?token=``…). It is then removed from
the text actually written: every line (in its raw and its JSON-escaped form), and across the
deltas of one block, whose pieces may each hold part of a key no single line shows whole.
Text that is cut for a message is redacted before the cut, so a cut never splits a key.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Values shorter than this are not searched for (they would match ordinary text)."""
_SECRET_WORDS = ("key", "token", "secret", "auth", "password", "signature", "sig", "credential")
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})

DELTA_FIELDS = {"text-delta": "text", "reasoning-delta": "text",
                 "tool-call-delta": "argumentsDelta"}
"""The string each delta chunk adds to its block (pieces of one text across chunks)."""


def shown_url(url: str) -> str:
    """A URL as a message shows it: its user info and query left out (they may hold
    credentials), e.g. ``http://***@host:8080/v1?***``."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")
    netloc = f"***@{host[2]}" if host[1] else host[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


def _secret_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_HEADERS or any(word in lowered for word in _SECRET_WORDS)


def replace_spans(pieces: list[str], spans: list[tuple[int, int, str]]) -> list[str]:
    """The pieces of one text with each span ``(start, end, replacement)`` of their
    concatenation replaced (spans sorted, not overlapping): the piece where a span starts gets
    its replacement, the rest of the span is removed from the pieces it ran into."""
    if not spans:
        return pieces
    whole = "".join(pieces)
    out: list[str] = []
    start = 0
    k = 0
    for piece in pieces:
        end = start + len(piece)
        parts: list[str] = []
        at = start
        while at < end:
            while k < len(spans) and spans[k][1] <= at:
                k += 1
            if k < len(spans) and spans[k][0] <= at:
                if spans[k][0] == at:
                    parts.append(spans[k][2])
                at = min(spans[k][1], end)
            else:
                upto = min(spans[k][0], end) if k < len(spans) else end
                parts.append(whole[at:upto])
                at = upto
        out.append("".join(parts))
        start = end
    return out


class Redactor:
    """Removes the client's secrets (API keys, tokens) from every text the recorder writes."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._raw: list[str] = []
        """The secrets as values hold them (not escaped), longest first."""

    def _add(self, value: str) -> None:
        value = value.strip()
        if len(value) < MIN_SECRET_LENGTH or value in self._secrets:
            return
        forms = {value, json.dumps(value, ensure_ascii=False)[1:-1],
                 json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value)}
        self._secrets.update(form for form in forms if len(form) >= MIN_SECRET_LENGTH)
        self._raw = sorted({*self._raw, value}, key=len, reverse=True)

    def learn(self, headers: Iterable[tuple[str, str]], query: str = "") -> None:
        """Remember the secret-bearing header values and query parameters of one request."""
        for name, value in headers:
            if _secret_name(name):
                self._add(value)
                self._add(value.partition(" ")[2])  # "Bearer sk-…": the token alone too
        if query:
            for name, value in parse_qsl(query, keep_blank_values=False):
                if _secret_name(name):
                    self._add(value)

    def learn_url(self, url: str) -> None:
        """Remember the credentials of a URL (``--upstream``): the password and ``user:password``
        of its user info, in their written, decoded and Basic-auth forms, and its secret query
        parameters."""
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        if userinfo:
            for value in (userinfo, unquote(userinfo)):
                self._add(value)
                self._add(value.partition(":")[2])
                self._add(base64.b64encode(value.encode("utf-8")).decode("ascii"))  # Basic
        self.learn((), parts.query)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def cut(self, text: str, limit: int) -> str:
        """``text`` redacted, then cut to ``limit`` characters (never splitting a key)."""
        return self(text)[:limit]

    def pieces(self, pieces: list[str]) -> list[str]:
        """The pieces of one text (a block's deltas) with every secret of their concatenation
        replaced: the piece where a secret starts gets the marker, the rest of the secret is
        removed from the pieces it ran into. Joined, they read as the whole text redacted."""
        whole = "".join(pieces)
        return replace_spans(pieces, [(a, b, REDACTED) for a, b in self._spans(whole)])

    def _spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        at = 0
        while self._raw:
            found = [(i, -len(s)) for s in self._raw if (i := text.find(s, at)) != -1]
            if not found:
                break
            i, negative = min(found)
            spans.append((i, i - negative))
            at = i - negative
        return spans

    def chunks(self, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``chunks`` with every secret split across the deltas of one block redacted (chunks
        that change are copies; the others are the same objects)."""
        if not self._raw:
            return chunks
        return map_deltas(chunks, self.pieces)


def map_deltas(chunks: list[dict[str, Any]],
               pieces: Callable[[list[str]], list[str]]) -> list[dict[str, Any]]:
    """``chunks`` with the delta texts of each block (``text-delta`` / ``reasoning-delta``
    texts, ``tool-call-delta`` arguments, grouped by field and index) replaced by what
    ``pieces`` makes of them as one text (chunks that change are copies)."""
    groups: dict[tuple[str, Any], list[int]] = {}
    for n, chunk in enumerate(chunks):
        kind = chunk.get("type")
        field = DELTA_FIELDS.get(kind) if isinstance(kind, str) else None
        if field is not None and isinstance(chunk.get(field), str):
            index = chunk.get("index")
            key = (field, index if isinstance(index, int | str) else repr(index))
            groups.setdefault(key, []).append(n)
    out = list(chunks)
    for (field, _), members in groups.items():
        before = [chunks[n][field] for n in members]
        after = pieces(before)
        for n, old, new in zip(members, before, after, strict=True):
            if new != old:
                out[n] = {**chunks[n], field: new}
    return out
