"""Limits every JSON document dsh-replay reads obeys: nesting depth and finite numbers.

One depth limit for session logs, sidecars, ``--chunks-file``, ``--config`` and request
bodies, so that nothing accepted can later overflow the stack of a decoder, a validator or an
encoder on another route. Free of pydantic (``validate`` imports it).
"""

from __future__ import annotations

import math
import re
from itertools import accumulate
from typing import Any

import msgspec

from .errors import NonFiniteNumber as NonFiniteNumber

MAX_JSON_DEPTH = 256
"""Arrays and objects nested deeper than this are refused wherever JSON is read."""

DEPTH_PROBLEM = (
    f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects, the limit for every "
    "JSON document dsh-replay reads"
)

_STRING_B = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STRING_S = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)


def too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text nests arrays and objects deeper than ``limit``.

    Counts brackets outside strings; documents with at most ``limit`` opening brackets in all
    are answered after two C-speed counts.
    """
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return False
        raw = _STRING_S.sub("", data).encode("utf-8", "surrogatepass")
    else:
        if data.count(b"[") + data.count(b"{") <= limit:
            return False
        raw = _STRING_B.sub(b"", data)
    brackets = raw.translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return False
    return max(accumulate(map(_STEP.__getitem__, brackets))) > limit


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first occurrence of ``needle`` in ``text`` (1 when absent)."""
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


_MAX_DOUBLE_INT = int(1.7976931348623157e308)


def finite_float(literal: str) -> float:
    """``json.loads``'s ``parse_float``: the double, refusing what overflows to infinity."""
    value = float(literal)
    if not math.isfinite(value):
        raise NonFiniteNumber(literal)
    return value


def finite_int(literal: str) -> int:
    """``json.loads``'s ``parse_int``: the integer, refusing what no double can hold."""
    value = int(literal)
    if len(literal) > 300 and abs(value) > _MAX_DOUBLE_INT:
        raise NonFiniteNumber(literal)
    return value


def _no_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A ``\\uD800``-``\\uDFFF`` escape in JSON bytes: the only thing ``JSON.parse`` accepts that
msgspec refuses."""


def loads_strict(text: str) -> Any:
    """JSON text decoded by the standard library under the logs' rules: lone surrogate escapes
    kept, numbers finite, no ``NaN`` / ``Infinity``; ValueError otherwise (check the depth
    first: this decoder recurses)."""
    import json

    return json.loads(text, parse_float=finite_float, parse_int=finite_int,
                      parse_constant=_no_constant)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its ``\\uXXXX`` escape: inside a JSON string
    that is the same string again, and everywhere it is valid UTF-8."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps`` (non-ASCII kept) whose text always encodes as UTF-8: lone surrogates,
    which ``JSON.parse`` accepts in input, are kept as their escapes (lossless)."""
    import json  # only writers need it: ``validate`` does not pay for the import

    return escape_surrogates(json.dumps(value, ensure_ascii=False, **options))


_fast_encode = msgspec.json.Encoder().encode


def encode_json(value: Any) -> bytes:
    """Compact JSON bytes of ``value`` (msgspec); a value holding a lone surrogate, which UTF-8
    cannot carry, is re-encoded with it as a ``\\uXXXX`` escape (the same JSON string)."""
    try:
        return _fast_encode(value)
    except UnicodeEncodeError:
        return json_text(value, separators=(",", ":")).encode("utf-8")


def non_finite_problem(literal: str) -> str:
    """What is wrong with a refused number literal, in words."""
    if literal in ("NaN", "Infinity", "-Infinity"):
        return f"{literal} is not JSON (numbers must be finite); write a finite number"
    return f"the number {literal[:40]} is not finite (it overflows a double); write a finite number"
