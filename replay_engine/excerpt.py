"""What the journal keeps of a request's messages: a bounded excerpt and a digest of the whole.

A client may send tens of megabytes of messages on every call, refused calls included; the
journal keeps each call for as long as its run lives, so it keeps the messages' shape with
long strings cut and, past a budget, the oldest items dropped. The newest items (the new
messages the debugger's Request view and the divergence report read) are kept first. A cut
string ends in a marker naming how much was cut and the SHA-256 of the whole string, so a
cut live text can still be told equal to a recorded one (``texts_match``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import msgspec

from .jsonlimits import encode_json

__all__ = ["EXCERPT_BUDGET", "EXCERPT_TEXT", "Excerpt", "excerpt", "texts_match"]

EXCERPT_TEXT = 8 * 1024
"""Characters of one string (or object key) the journal keeps; the rest is cut."""
EXCERPT_BUDGET = 64 * 1024
"""Characters of one call's messages the journal keeps in all (strings and keys, newest first;
every other value and every item counts a few); past it older items are dropped."""
_DIGEST_CHARS = 16
_CUT = re.compile(r"…\[cut: (?P<more>\d+) more characters; sha256 (?P<digest>[0-9a-f]{16})\]\Z")


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A request's messages as the journal keeps them."""

    value: Any
    """The messages, same shape, long strings cut and the oldest items dropped past the budget."""
    digest: str
    """SHA-256 (hex) of the whole messages' compact JSON: tells two requests apart when cut."""
    size: int
    """Bytes of the whole messages' compact JSON."""
    cut: bool
    """Whether anything was cut or dropped."""


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]


def _cut_text(text: str, keep: int) -> str:
    return (f"{text[:keep]}…[cut: {len(text) - keep} more characters; "
            f"sha256 {_text_digest(text)}]")


class _Budget:
    __slots__ = ("left", "cut")

    def __init__(self) -> None:
        self.left = EXCERPT_BUDGET
        self.cut = False

    def text(self, value: str) -> str:
        keep = max(min(len(value), EXCERPT_TEXT, self.left), 0)
        self.left -= keep + 2
        if keep == len(value):
            return value
        self.cut = True
        return _cut_text(value, keep)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            out: list[Any] = []
            for index in range(len(value) - 1, -1, -1):  # newest first
                if self.left <= 0:
                    self.cut = True
                    out.append(f"…[cut: {index + 1} earlier item(s)]")
                    break
                out.append(self.walk(value[index]))
            out.reverse()
            return out
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for number, (key, item) in enumerate(value.items()):
                if self.left <= 0:
                    self.cut = True
                    kept["…"] = f"[cut: {len(value) - number} more key(s)]"
                    break
                kept[self.text(key) if isinstance(key, str) else key] = self.walk(item)
            return kept
        self.left -= 8
        return value


def excerpt(messages: Any) -> Excerpt:
    """The bounded excerpt of ``messages`` with the digest and size of the whole (messages an
    in-process caller passed that are not JSON are digested as their ``repr``)."""
    try:
        whole = encode_json(messages)
    except (TypeError, ValueError, msgspec.MsgspecError):
        whole = repr(messages).encode("utf-8", "surrogatepass")
    budget = _Budget()
    value = budget.walk(messages) if len(whole) > EXCERPT_TEXT else messages
    return Excerpt(value, hashlib.sha256(whole).hexdigest(), len(whole), budget.cut)


def texts_match(kept: str, full: str) -> bool:
    """Whether a journal text (maybe cut) says what ``full`` says: whitespace collapsed, or, when
    it was cut, the whole text's digest equal to ``full``'s."""
    if " ".join(kept.split()) == " ".join(full.split()):
        return True
    found = _CUT.search(kept)
    return found is not None and _text_digest(full) == found["digest"]
