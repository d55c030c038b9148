"""Limits every JSON document dsh-replay reads obeys: nesting depth and finite numbers.

One depth limit for session logs, sidecars, ``--chunks-file``, ``--config`` and request
bodies, so that nothing accepted can later overflow the stack of a decoder, a validator or an
encoder on another route. Free of pydantic (``validate`` imports it).
"""

from __future__ import annotations

import math
import re
from itertools import accumulate
from typing import Annotated, Any, Union

import msgspec

from .errors import NonFiniteNumber as NonFiniteNumber
from .jsonnumbers import overflows_double

MAX_JSON_DEPTH = 256
"""Arrays and objects nested deeper than this are refused wherever JSON is read."""

DEPTH_PROBLEM = (
    f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects, the limit for every "
    "JSON document dsh-replay reads"
)

SIDECAR_CHUNK_LEVELS = 5
"""How deep a chunk sits in a sidecar at most: ``{"patches":[{"entry":{"chunks":[CHUNK]}}]}``."""
MAX_CHUNK_DEPTH = MAX_JSON_DEPTH - SIDECAR_CHUNK_LEVELS
"""How deep a chunk read from a log may nest (the chunk object itself is level 1), so that any
sidecar entry holding it, as ``dsh-replay override`` writes them, stays within the limit."""
CHUNK_DEPTH_PROBLEM = (
    f"nested deeper than {MAX_CHUNK_DEPTH} levels of arrays and objects, the most a chunk may "
    f"nest so that a sidecar holding it stays within the {MAX_JSON_DEPTH}-level limit of every "
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


SHALLOW_LEVELS = 4
"""How deep ``ShallowJson`` nests (each level doubles what building a decoder of it costs)."""
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63) + 1, le=2**63 - 1)]


def _shallow(levels: int) -> Any:
    value: Any = Union[str, _Int64, float, bool, None]  # noqa: UP007 (a runtime type object)
    for _ in range(levels):
        value = Union[str, _Int64, float, bool, None, list[value], dict[str, value]]  # noqa: UP007
    return value


ShallowJson: Any = _shallow(SHALLOW_LEVELS)
"""A JSON value as the fast readers of settlement streams decode a chunk's values: nested at
most ``SHALLOW_LEVELS`` deep, integers within int64 (doubles are finite by decoding). What
decodes so fits any sidecar (``MAX_CHUNK_DEPTH``, finite numbers) without a further look;
anything else fails to decode and is read again by the exact rules, which walk it."""

_CONTAINERS = (dict, list)


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether a decoded JSON value nests arrays and objects deeper than ``limit`` (the value
    itself, when a container, is level 1). Level by level: safe for any depth."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        children: list[Any] = []
        for item in level:
            children.extend(item.values() if type(item) is dict else item)
        level = [child for child in children if type(child) in _CONTAINERS]
    return False


_DIGIT_RUN = re.compile(rb"[0-9]{309}")
"""The shortest digit run an integer beyond a double can be written with."""
_SAMPLE_STEP = 103
"""A run of 309 digits holds three consecutive samples taken this far apart."""
_DIGIT_MARKS = bytes(49 if 48 <= b <= 57 else 48 for b in range(256))
"""Each digit as ``1``, every other byte as ``0``."""


def may_hold_huge_integer(raw: bytes) -> bool:
    """Whether JSON bytes may write an integer no double holds (one of at least 309 digits).

    False is certain; True only says to look closer (the digits may be inside a string). A
    sample of every 103rd byte is looked at first: a 309-digit run puts three digits in a row
    there, so most text is answered after reading a few bytes of it.
    """
    return (len(raw) >= 309 and raw[::_SAMPLE_STEP].translate(_DIGIT_MARKS).find(b"111") >= 0
            and _DIGIT_RUN.search(raw) is not None)


def huge_integer_at(value: Any, path: str = "$") -> tuple[str, int] | None:
    """The JSON path and value of the first integer in a decoded value that no double holds
    (refused like ``1e999``), or None."""
    stack = [value]
    while stack:  # a walk without paths first: most values hold none
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int and overflows_double(item):
            break
    else:
        return None
    paths: list[tuple[Any, str]] = [(value, path)]
    while paths:
        item, where = paths.pop()
        if type(item) is int:
            if overflows_double(item):
                return where, item
        elif isinstance(item, dict):
            paths.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            paths.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first occurrence of ``needle`` in ``text`` (1 when absent)."""
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def finite_float(literal: str) -> float:
    """``json.loads``'s ``parse_float``: the double, refusing what overflows to infinity."""
    value = float(literal)
    if not math.isfinite(value):
        raise NonFiniteNumber(literal)
    return value


def _overflows(literal: str) -> bool:
    """Whether a JSON integer literal is beyond what a double holds (long ones never parsed:
    a JSON integer has no leading zeros, so 310 digits are already too many)."""
    digits = len(literal) - literal.startswith("-")
    return digits > 309 or digits == 309 and overflows_double(int(literal))


def finite_int(literal: str) -> int:
    """``json.loads``'s ``parse_int``: the integer, refusing what no double can hold."""
    if len(literal) > 300 and _overflows(literal):
        raise NonFiniteNumber(literal)
    return int(literal)


class _Refused(str):
    """A number literal no double holds, kept as its text while its place is looked for."""


def _float_or_refused(literal: str) -> Any:
    value = float(literal)
    return value if math.isfinite(value) else _Refused(literal)


def _int_or_refused(literal: str) -> Any:
    return _Refused(literal) if len(literal) > 300 and _overflows(literal) else int(literal)


def non_finite_at(text: str | bytes, path: str = "$") -> tuple[str, str] | None:
    """The JSON path and literal of the first number in a document that no double holds
    (``1e999``, an integer of 309 digits and more, ``NaN``, ``Infinity``), or None (also when
    the text is no JSON). For error messages: it decodes again with the standard library."""
    import json

    if too_deep(text):
        return None
    try:
        doc = json.loads(text, parse_float=_float_or_refused, parse_int=_int_or_refused,
                         parse_constant=_Refused)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(doc, path)]
    while stack:
        item, where = stack.pop()
        if type(item) is _Refused:
            return where, str(item)
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


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
