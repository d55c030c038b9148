"""The ``replay.override.json`` sidecar: parse, validate completely, apply
(docs/format.md#override-sidecar)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from ..errors import MAX_LISTED_PROBLEMS, EntryProblem, SidecarError
from ..jsonlimits import (
    DEPTH_PROBLEM,
    MAX_JSON_DEPTH,
    NonFiniteNumber,
    line_of,
    non_finite_at,
    non_finite_problem,
    too_deep,
)
from ..jsonlimits import (
    finite_float as _finite_float,
)
from ..jsonlimits import (
    finite_int as _finite_int,
)
from ..jsonlocate import JsonPath, TextLocator, deep_at, line_column, parse_location, render_path
from ..models import (
    AnyEntry,
    OverrideDocument,
    ReplayEntry,
    ScriptEntry,
    as_safe_integer,
    plain_message,
)
from .layout import SIDECAR_NAME as SIDECAR_NAME
from .layout import not_a_file
from .logscan import gc_paused as _gc_paused

_ENTRY_KINDS = frozenset({"chunks", "throw", "hang"})
_entries_adapter: TypeAdapter[list[AnyEntry]] = TypeAdapter(list[ReplayEntry])

SidecarForm = Literal["list", "patches"]
_FIX = (
    "Entries are {\"kind\":\"chunks\",\"chunks\":[…]}, {\"kind\":\"throw\",\"chunks\":[…],"
    "\"message\":…,\"code\":…} or {\"kind\":\"hang\",\"readyFile\"?:…}, with exactly those keys."
)


@dataclass(slots=True)
class Sidecar:
    """A validated sidecar: a bare list of entries or a list of (at, entry) patches."""

    form: SidecarForm
    entries: list[AnyEntry]
    patches: list[tuple[int, AnyEntry]]
    file: str
    sha256: str | None = None
    """Hex digest of the file's bytes when read from a file (an editor's compare-and-write)."""


def _render_loc(loc: tuple[int | str, ...], form: SidecarForm) -> str:
    parts: list[str] = []
    items = list(loc)
    i = 0
    entry_next = False
    if form == "list" and items:
        parts.append(f"entry {items[0]}")
        entry_next = True
        i = 1
    elif form == "patches":
        if items[:1] == ["patches"]:
            i = 1
            if len(items) > 1:
                parts.append(f"patch {items[1]}")
                i = 2
            else:
                parts.append("patches")
    while i < len(items):
        seg = items[i]
        if entry_next and isinstance(seg, str) and seg in _ENTRY_KINDS:
            entry_next = False
            i += 1
            continue
        entry_next = False
        if isinstance(seg, int):
            if parts:
                parts[-1] += f"[{seg}]"
            else:
                parts.append(f"[{seg}]")
        else:
            parts.append(seg)
            if seg == "entry":
                entry_next = True
        i += 1
    return ".".join(parts) if parts else "document"


def _problems(exc: ValidationError, form: SidecarForm) -> list[str]:
    out: list[str] = []
    for err in exc.errors(include_url=False):
        message = plain_message(err)
        loc = _render_loc(tuple(err["loc"]), form)
        kind = err["type"]
        if kind == "extra_forbidden":
            message = "unknown key (entries take exactly the keys of their kind)"
        elif kind == "union_tag_invalid":
            message = f"kind {err['input'].get('kind')!r} is not one of chunks, throw, hang"
        elif kind == "union_tag_not_found":
            message = "missing kind (chunks, throw or hang)"
        if message.startswith("readyFile"):
            loc += ".readyFile"
        out.append(f"{loc}: {message}")
    return out


def listed_problems(problems: list[str], indent: str = "  ") -> str:
    """The first :data:`MAX_LISTED_PROBLEMS` problems, one per line, and how many more there are."""
    shown = problems[:MAX_LISTED_PROBLEMS]
    lines = [indent + p for p in shown]
    if len(problems) > len(shown):
        more = len(problems) - len(shown)
        lines.append(f"{indent}… and {more} more problem{'s' if more > 1 else ''}")
    return "\n".join(lines)


_HEAD = re.compile(r"(patch|entry) (\d+)")


def sidecar_path(location: str) -> JsonPath:
    """The JSON path of a sidecar problem's location (``patch 3.entry.chunks[1].type`` is
    ``("patches", 3, "entry", "chunks", 1, "type")``; ``document`` is the root)."""
    match = _HEAD.match(location)
    if match is not None:
        index = int(match.group(2))
        head: JsonPath = ("patches", index) if match.group(1) == "patch" else (index,)
        return head + parse_location(location[match.end():])
    if location == "document":
        return ()
    return parse_location(location)


def sidecar_location(path: JsonPath) -> str:
    """A JSON path in a sidecar as its problems name it (``sidecar_path`` read backwards)."""
    if path[:1] and isinstance(path[0], int):
        rest = render_path(path[1:])
        return f"entry {path[0]}" + (f".{rest}" if rest and not rest.startswith("[") else rest)
    if path[:1] == ("patches",) and len(path) > 1 and isinstance(path[1], int):
        rest = render_path(path[2:])
        return f"patch {path[1]}" + (f".{rest}" if rest and not rest.startswith("[") else rest)
    return render_path(path) or "document"


def located_problems(problems: list[str], text: str) -> list[EntryProblem]:
    """Each ``location: message`` problem of a sidecar with the line and column of its location
    in ``text`` (the deepest value along it that exists; 1, 1 when ``text`` is no JSON)."""
    locator = TextLocator(text)
    out: list[EntryProblem] = []
    for item in problems:
        location, _, message = item.partition(": ")
        line, column = locator.locate(sidecar_path(location)) or (1, 1)
        out.append(EntryProblem(location, line, column, message))
    return out


def _fail(file: str, problems: list[str], text: str | None = None) -> SidecarError:
    located = located_problems(problems, text) if text is not None else None
    listed = problems if located is None else [
        f"line {p.line}, column {p.column}: {item}" for p, item in zip(located, problems,
                                                                     strict=True)]
    err = SidecarError(
        f"{file}: invalid override sidecar ({len(problems)} problem(s)):\n"
        f"{listed_problems(listed)}\n{_FIX}",
        file=file,
        line=located[0].line if located else None,
        location=problems[0].split(":", 1)[0] if problems else None,
    )
    err.problems = problems  # type: ignore[attr-defined]
    err.located = located  # type: ignore[attr-defined]
    return err


def depth_error(text: str, file: str) -> SidecarError:
    """The refusal of a sidecar nested too deep, naming the first array or object past the
    limit: line, column and JSON path."""
    found = deep_at(text, MAX_JSON_DEPTH)
    if found is None:
        return SidecarError(f"{file}: the sidecar is {DEPTH_PROBLEM}. {_FIX}", file=file)
    line, column = line_column(text, found[0])
    where = sidecar_location(found[1])
    return SidecarError(f"{file}:{line}:{column}: {where}: the sidecar is {DEPTH_PROBLEM}. {_FIX}",
                        file=file, line=line, location=where)


def parse_sidecar_text(text: str, file: str, *, derived_length: int | None = None,
                       generations: bool = False) -> Sidecar:
    """Validate sidecar text completely; every problem is listed in the error.

    ``generations``: the scenario is read by generation, so a throw may carry ``accepted``."""
    with _gc_paused():  # a large sidecar is many small objects that all stay alive
        return _parse_sidecar_text(text, file, derived_length, generations)


def _parse_sidecar_text(text: str, file: str, derived_length: int | None,
                        generations: bool) -> Sidecar:
    if too_deep(text):
        raise depth_error(text, file)
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                         parse_int=_finite_int)
    except json.JSONDecodeError as exc:
        raise SidecarError(
            f"{file}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}). {_FIX}",
            file=file,
            line=exc.lineno,
        ) from None
    except NonFiniteNumber as exc:
        line = line_of(text, exc.literal)
        found = non_finite_at(text)
        at = f"{found[0]}: " if found else ""
        raise SidecarError(
            f"{file}:{line}: {at}{non_finite_problem(exc.literal)}.",
            file=file,
            line=line,
        ) from None
    except RecursionError:
        raise depth_error(text, file) from None
    except ValueError as exc:
        raise SidecarError(f"{file}: not valid JSON ({exc}).", file=file) from None
    return validate_sidecar(doc, file, derived_length=derived_length, generations=generations,
                            text=text)


def _reject_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def _raw_at_problems(doc: dict[str, Any], derived_length: int | None) -> list[str]:
    """Duplicate and out-of-range ``at`` values, read from the raw document so they are
    reported alongside every other problem."""
    patches = doc.get("patches")
    if not isinstance(patches, list):
        return []
    problems: list[str] = []
    seen: dict[int, int] = {}
    for i, patch in enumerate(patches):
        at = as_safe_integer(patch.get("at")) if isinstance(patch, dict) else None
        if at is None or at < 0:
            continue
        if at in seen:
            problems.append(
                f"patch {i}.at: {at} is already patched by patch {seen[at]}; each at may appear "
                "once"
            )
        else:
            seen[at] = i
        if derived_length is not None and at > derived_length:
            problems.append(_past_end(i, at, derived_length))
    return problems


def _past_end(i: int, at: int, length: int) -> str:
    replace = f"0..{length - 1} to replace a call or " if length else ""
    return (
        f"patch {i}.at: {at} is past the end of the derived primary script, which has "
        f"{length} call(s); use {replace}{length} to append one"
    )


def _location_order(problem: str) -> tuple[int, str]:
    head = problem.split(":", 1)[0]
    match = re.match(r"(?:patch|entry) (\d+)", head)
    return (int(match.group(1)) if match else -1, head)


def _accepted_problems(doc: Any) -> list[str]:
    """``accepted`` on a throw entry outside a scenario read by generation
    (docs/format.md#v2-scripts-sidecar-headers): an unknown key there, as sections 1-6 define the entries."""
    unknown = "unknown key (entries take exactly the keys of their kind; accepted belongs to " \
              "scenarios whose logs are named session[.N].vK.jsonl)"
    if isinstance(doc, list):
        return [f"entry {i}.accepted: {unknown}" for i, e in enumerate(doc)
                if isinstance(e, dict) and "accepted" in e]
    patches = doc.get("patches") if isinstance(doc, dict) else None
    return [f"patch {i}.entry.accepted: {unknown}" for i, p in enumerate(patches or [])
            if isinstance(p, dict) and isinstance(p.get("entry"), dict)
            and "accepted" in p["entry"]] if isinstance(patches, list) else []


def validate_sidecar(doc: Any, file: str, *, derived_length: int | None = None,
                     generations: bool = False, text: str | None = None) -> Sidecar:
    """Validate an already-decoded sidecar document; with ``derived_length`` also check that
    every ``at`` fits the derived primary script; with the ``text`` it was read from, every
    problem also names its line and column."""
    early = [] if generations else _accepted_problems(doc)
    if isinstance(doc, list):
        try:
            entries = _entries_adapter.validate_python(doc)
        except ValidationError as exc:
            raise _fail(file, early + _problems(exc, "list"), text) from None
        if early:
            raise _fail(file, early, text)
        return Sidecar("list", entries, [], file)
    if isinstance(doc, dict):
        if set(doc) != {"patches"}:
            extra = sorted(set(doc) - {"patches"})
            what = f"unknown key(s) {', '.join(extra)}" if extra else "missing key patches"
            raise _fail(file, [f"document: {what}; the object form is exactly "
                               "{\"patches\": [...]}"], text)
        problems = early + _raw_at_problems(doc, derived_length)
        parsed: OverrideDocument | None = None
        try:
            parsed = OverrideDocument.model_validate(doc)
        except ValidationError as exc:
            problems += _problems(exc, "patches")
        if problems or parsed is None:
            raise _fail(file, sorted(problems, key=_location_order), text)
        return Sidecar("patches", [], [(p.at, p.entry) for p in parsed.patches], file)
    raise _fail(
        file,
        [f"document: expected a list of entries or {{\"patches\": [...]}}, got {type(doc).__name__}"],
        text,
    )


def load_sidecar(path: str | Path, *, derived_length: int | None = None,
                 generations: bool = False) -> Sidecar:
    """Read and validate a sidecar file (``derived_length``: also range-check every ``at``)."""
    file = str(path)
    kind = not_a_file(path)
    if kind is not None:
        raise SidecarError(
            f"{file}: the sidecar is {kind}; make {SIDECAR_NAME} a regular JSON file, or remove "
            "it to replay the recording as derived.",
            file=file,
        )
    try:
        data = Path(path).read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        raise SidecarError(f"{file}: cannot read the sidecar ({exc.strerror}).", file=file) from None
    except UnicodeDecodeError as bad:
        raise utf8_error(file, data, bad) from None
    sidecar = parse_sidecar_text(text.replace("\r\n", "\n").replace("\r", "\n"), file,
                                 derived_length=derived_length, generations=generations)
    sidecar.sha256 = hashlib.sha256(data).hexdigest()
    return sidecar


def utf8_error(file: str, data: bytes, bad: UnicodeDecodeError) -> SidecarError:
    """The refusal of a sidecar that is not UTF-8, naming the first bad byte: its line, column
    (in bytes) and byte offset."""
    line, column = line_column(data, bad.start)
    return SidecarError(f"{file}:{line}:{column}: not UTF-8 text (byte 0x{data[bad.start]:02x} at "
                        f"byte offset {bad.start}: {bad.reason}); save the file as UTF-8 JSON.",
                        file=file, line=line)


def sidecar_is_bare_list(path: str | Path) -> bool:
    """Whether a sidecar file holds the bare-list form (its first non-blank character is ``[``)."""
    if not_a_file(path) is not None:
        return False
    try:
        return Path(path).read_text(encoding="utf-8").lstrip().startswith("[")
    except (OSError, UnicodeDecodeError):
        return False


def validate_entry(doc: Any, where: str = "entry") -> AnyEntry:
    """Validate one entry (the override editor uses this); locations start at ``where``."""
    try:
        return _entries_adapter.validate_python([doc])[0]
    except ValidationError as exc:
        problems = [where + p.removeprefix("entry 0") for p in _problems(exc, "list")]
        raise _fail(where, problems) from None


def apply_sidecar(derived: list[ScriptEntry] | None, sidecar: Sidecar) -> list[ScriptEntry]:
    """The effective primary script: replacement, or derived with patches applied in order."""
    with _gc_paused():
        return _apply_sidecar(derived, sidecar)


def _apply_sidecar(derived: list[ScriptEntry] | None, sidecar: Sidecar) -> list[ScriptEntry]:
    if sidecar.form == "list":
        return [ScriptEntry(entry=e, origin="replaced") for e in sidecar.entries]
    assert derived is not None
    out = list(derived)
    length = len(derived)
    past = [_past_end(i, at, length) for i, (at, _) in enumerate(sidecar.patches) if at > length]
    if past:
        raise _fail(sidecar.file, past)
    for at, entry in sidecar.patches:
        if at == len(out):
            out.append(ScriptEntry(entry=entry, origin="appended"))
        elif at >= length:
            out[at] = ScriptEntry(entry=entry, origin="appended")
        else:
            old = out[at]
            out[at] = ScriptEntry(
                entry=entry, origin="patched", call_key=old.call_key, lines=old.lines
            )
    return out
