"""Text from requests made safe to print: control characters escaped, one line stays one line."""

from __future__ import annotations

import re

__all__ = ["printable"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x00``…), safe to print on one line."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)
