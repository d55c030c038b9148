"""Text from requests made safe to print: control characters escaped, one line stays one line."""

from __future__ import annotations

import re

__all__ = ["MAX_ECHO", "printable", "shown"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x00``…), safe to print on one line."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


MAX_ECHO = 120
"""Most characters of a rejected value an error message repeats."""


def shown(value: object, limit: int = MAX_ECHO) -> str:
    """A rejected value as an error message quotes it: its ``repr``, printable, and cut to
    ``limit`` characters with its full size said (a 20 MB value gives no 20 MB message)."""
    text = printable(repr(value))
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(text)} characters shown"
    return f"{text[:limit]}… ({size})"
