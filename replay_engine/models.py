"""Pydantic models of everything a user authors or configures, plus script records.

User-authored documents (sidecars, provider catalogs, config) are validated
completely with pydantic. Derived entries are built with ``model_construct``
because they come from already-parsed logs and sit on the hot path.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictStr,
    model_validator,
)

from .chunkshape import chunk_shape_problem
from .jsonnumbers import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
from .jsonnumbers import as_safe_integer as as_safe_integer
from .jsonnumbers import is_number as is_number
from .jsonnumbers import plain_number

CHUNK_TYPES: frozenset[str] = frozenset(
    {
        "block-start",
        "text-delta",
        "reasoning-delta",
        "tool-call-delta",
        "block-end",
        "usage",
        "finish",
    }
)
"""Chunk ``type`` values a sidecar entry may carry (docs/format.md#override-sidecar)."""

PLAIN_MESSAGES: dict[str, str] = {
    "missing": "missing required key",
    "string_too_short": "must be a non-empty string",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "greater_than_equal": "must be an integer >= 0",
    "bool_type": "must be true or false",
}
"""The words a validation error of a user's document says for pydantic's common error types."""


def plain_message(error: Mapping[str, Any]) -> str:
    """One pydantic error's message as the docs say it: the common types in plain words, a
    validator's own text without pydantic's ``Value error,`` prefix (sidecar and config alike)."""
    plain = PLAIN_MESSAGES.get(str(error.get("type")))
    if plain is not None:
        return plain
    return str(error.get("msg", "")).removeprefix("Value error, ")


Origin = Literal["derived", "patched", "replaced", "appended"]
"""Where a loaded entry came from: the log, a patch over it, a bare-list sidecar, or a patch
past the end."""


def _check_chunk(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("a chunk must be a JSON object")
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in CHUNK_TYPES:
        allowed = ", ".join(sorted(CHUNK_TYPES))
        raise ValueError(f"chunk type {kind!r} is not one of: {allowed}")
    problem = chunk_shape_problem(value)
    if problem is not None:
        raise ValueError(problem.removeprefix("the ").replace(f"{kind} chunk's ", "", 1))
    return value


def _check_integer(value: object) -> int:
    number = as_safe_integer(value)
    if number is None:
        raise ValueError(f"must be an integer, got {value!r}")
    return number


Chunk = Annotated[dict[str, Any], BeforeValidator(_check_chunk)]
"""One recorded stream chunk, kept whole (every field it carries)."""

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]


def _check_text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if not value:
        raise ValueError("must be a non-empty string")
    return value


_UNSAFE_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters and bidirectional formatting characters: a name holding one prints as
another name (a newline splits a log line, U+202E shows ``txt.exe`` as ``exe.txt``)."""


def ready_file_problem(name: str) -> str | None:
    """Why ``name`` is no readyFile name, or None: the one rule of the sidecar check,
    ``validate``, the override editor and serving. A readyFile is a plain relative name
    inside the ready directory: no NUL, control or bidirectional formatting character, no
    character this system's file names cannot encode, not absolute, no ``..``."""
    if "\x00" in name:
        return ("holds a NUL byte (\\x00), which no file name can hold; give a plain relative "
                "file name")
    unsafe = _UNSAFE_IN_NAMES.search(name)
    if unsafe is not None:
        char = unsafe.group()
        kind = "a control" if char <= "\x9f" else "a bidirectional formatting"
        return (f"holds {kind} character (U+{ord(char):04X} at character {unsafe.start() + 1}), "
                "which would print as another name; give a plain relative file name")
    try:
        os.fsencode(name)
    except UnicodeEncodeError as exc:
        return (f"holds {exc.object[exc.start:exc.end]!r}, which no file name of this system can "
                "encode (a lone surrogate?); give a plain relative file name")
    pure = PurePosixPath(name)
    if pure.is_absolute():
        return ("is an absolute path; give a plain relative file name, created inside the ready "
                "directory (--ready-dir)")
    if ".." in pure.parts:
        return ("contains '..'; give a plain relative file name, created inside the ready "
                "directory (--ready-dir)")
    return None


def _check_ready_file(value: object) -> str:
    name = _check_text(value)
    problem = ready_file_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


Text = Annotated[str, PlainValidator(_check_text)]
"""A non-empty string, any code points (a lone surrogate escape too, as ``JSON.parse`` and the
logs accept it)."""
ReadyFile = Annotated[str, PlainValidator(_check_ready_file)]
JsonInt = Annotated[int, BeforeValidator(_check_integer)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ChunksEntry(_Strict):
    """A model call that streams its chunks and finishes."""

    kind: Literal["chunks"] = "chunks"
    """Discriminator."""
    chunks: list[Chunk]
    """The chunks served, in order."""


class ThrowEntry(_Strict):
    """A model call that streams a prefix and then fails with ``code``."""

    kind: Literal["throw"] = "throw"
    """Discriminator."""
    chunks: list[Chunk]
    """Prefix chunks served before failing (may be empty)."""
    message: Text
    """The failure message the agent sees."""
    code: Text
    """The failure code, e.g. AUTH, RATE_LIMIT, SERVER, HTTP_503."""
    accepted: StrictBool | None = None
    """The harness's mark that the failure was expected (docs/format.md#v2-scripts-sidecar-headers: kept,
    changes nothing on the wire; only in scenarios read by generation)."""

    @model_validator(mode="before")
    @classmethod
    def _accepted_not_null(cls, data: Any) -> Any:
        if isinstance(data, dict) and "accepted" in data and data["accepted"] is None:
            raise ValueError("accepted, when present, must be true or false (not null)")
        return data


class HangEntry(_Strict):
    """A model call that streams a short prefix, then waits until cancelled."""

    kind: Literal["hang"] = "hang"
    """Discriminator."""
    readyFile: ReadyFile | None = None  # noqa: N815 - wire name
    """Marker file created (empty) once the prefix is served."""

    @model_validator(mode="before")
    @classmethod
    def _ready_file_not_null(cls, data: Any) -> Any:
        if isinstance(data, dict) and "readyFile" in data and data["readyFile"] is None:
            raise ValueError("readyFile, when present, must be a non-empty string (not null)")
        return data


ReplayEntry = Annotated[ChunksEntry | ThrowEntry | HangEntry, Field(discriminator="kind")]
"""One scripted model call."""

AnyEntry = ChunksEntry | ThrowEntry | HangEntry


def entry_to_json(entry: AnyEntry) -> dict[str, Any]:
    """The JSON form of an entry (docs/format.md#override-sidecar: exact keys, chunks untouched)."""
    if isinstance(entry, ChunksEntry):
        return {"kind": "chunks", "chunks": entry.chunks}
    if isinstance(entry, ThrowEntry):
        out_throw: dict[str, Any] = {
            "kind": "throw",
            "chunks": entry.chunks,
            "message": entry.message,
            "code": entry.code,
        }
        if entry.accepted is not None:
            out_throw["accepted"] = entry.accepted
        return out_throw
    out: dict[str, Any] = {"kind": "hang"}
    if entry.readyFile is not None:
        out["readyFile"] = entry.readyFile
    return out


class OverridePatch(_Strict):
    """Replace derived call ``at`` (or append when ``at`` equals the derived length)."""

    at: Annotated[JsonInt, Field(ge=0)]
    """0-based index into the derived primary script."""
    entry: ReplayEntry
    """The entry served instead."""


class OverrideDocument(_Strict):
    """The ``{"patches": [...]}`` sidecar form."""

    patches: list[OverridePatch]
    """Patches applied in document order."""


class ModelConfig(_Strict):
    """One model a replay provider advertises (docs/format.md#provider-catalog)."""

    id: NonEmptyStr
    """Model id the agent requests."""
    name: StrictStr | None = None
    """Display name."""
    description: StrictStr | None = None
    """Free text."""
    contextWindow: Annotated[JsonInt, Field(gt=0)] | None = None  # noqa: N815
    """Context window in tokens, a positive integer."""
    inputModalities: list[Literal["text", "image"]] | None = None  # noqa: N815
    """Accepted inputs."""
    defaultMaxTokens: Annotated[JsonInt, Field(gt=0)] | None = None  # noqa: N815
    """Default completion budget."""
    reasoningEfforts: list[StrictStr] | None = None  # noqa: N815
    """Reasoning effort levels offered."""
    defaultReasoningEffort: StrictStr | None = None  # noqa: N815
    """Must be one of ``reasoningEfforts``."""
    imageRequestTokens: Annotated[JsonInt, Field(gt=0)] | None = None  # noqa: N815
    """Tokens one image costs a request, a positive safe integer; only for a model whose
    ``inputModalities`` include ``image``. A catalog fact: it changes nothing served."""
    systemPromptUpdate: Literal["in-history"] | None = None  # noqa: N815
    """How the harness updates the system prompt (only ``in-history``); a catalog fact."""
    toolUpdate: Literal["in-history", "addition-only"] | None = None  # noqa: N815
    """How the harness updates the tool list; a catalog fact."""

    @model_validator(mode="after")
    def _image_tokens_need_images(self) -> ModelConfig:
        if self.imageRequestTokens is not None and "image" not in (self.inputModalities or []):
            raise ValueError(
                "imageRequestTokens is allowed only when inputModalities includes 'image' "
                f"(it lists {self.inputModalities or []})")
        return self

    @model_validator(mode="after")
    def _effort_known(self) -> ModelConfig:
        if self.defaultReasoningEffort is not None and (
            self.reasoningEfforts is None
            or self.defaultReasoningEffort not in self.reasoningEfforts
        ):
            raise ValueError(
                f"defaultReasoningEffort {self.defaultReasoningEffort!r} must be one of "
                f"reasoningEfforts {self.reasoningEfforts or []}"
            )
        return self


class ProviderConfig(_Strict):
    """A replay-only provider: what a connected agent discovers; never does provider I/O."""

    id: NonEmptyStr
    """Provider id (``owned_by`` on the wire)."""
    name: StrictStr | None = None
    """Display name; defaults to ``id``."""
    retryPolicy: dict[str, Any] | None = None  # noqa: N815
    """Opaque retry policy handed to the agent."""
    models: list[ModelConfig] = Field(default_factory=list)
    """Models offered."""

    @model_validator(mode="after")
    def _default_name(self) -> ProviderConfig:
        if self.name is None:
            self.name = self.id
        return self


class ReplayConfig(_Strict):
    """Everything needed to load a scenario without a directory (and serving knobs)."""

    file: StrictStr | None = None
    """Primary session log; empty or missing means "missing"."""
    overrideFile: StrictStr | None = None  # noqa: N815
    """Sidecar path; ignored when the file does not exist."""
    childFiles: list[StrictStr] = Field(default_factory=list)  # noqa: N815
    """Child session logs."""
    providers: list[ProviderConfig] | None = None
    """Optional provider catalog."""
    paceMs: Annotated[JsonInt, Field(ge=0)] = 0  # noqa: N815
    """Fixed delay before every chunk, in milliseconds."""


class SessionHeader(BaseModel):
    """The first line of a session log; unknown keys are kept in ``extra``."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    """Recorded session id (``""`` unless the header holds a string)."""
    createdAt: float = 0  # noqa: N815
    """Creation time in ms (``0`` unless a number)."""
    seedLength: float = 0  # noqa: N815
    """Events inherited from the parent on fork (``0`` unless a number)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Every other key of the header line."""

    def to_json(self) -> dict[str, Any]:
        """The conformance ``headers`` form: id, createdAt, seedLength."""
        return {"id": self.id, "createdAt": plain_number(self.createdAt),
                "seedLength": plain_number(self.seedLength)}


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One message a request carries: its role (``user`` or ``tool``), text and, for a tool
    result, the tool call it answers."""

    role: str
    text: str
    call_id: str | None = None


@dataclass(slots=True)
class LogContext:
    """What a log holds besides its calls, taken in the same pass: its user messages and tool
    results, each with its line. The recorded context of every call is cut from it
    (``context.script_contexts``), in memory."""

    lines: list[int] = field(default_factory=list)
    items: list[ContextItem | tuple[str, bytes] | bool | None] = field(default_factory=list)
    """Per line: ``None`` for an assistant message (what came before it was answered), a
    ``(type, line)`` pair for a ``user/message`` / ``tool/result`` line, decoded into its
    ``ContextItem`` the first time a context is cut (``False`` when it holds none)."""


@dataclass(slots=True)
class ScriptEntry:
    """One loaded call with what the debugger needs to explain it."""

    entry: AnyEntry
    """What is served."""
    origin: Origin
    """derived, patched, replaced or appended."""
    call_key: str | None = None
    """``turn/step`` of a derived call (None for sidecar entries)."""
    lines: tuple[int, int] | None = None
    """First and last log line of a derived call's events."""
    times: array[int] | None = None
    """Recorded time (ms) of each chunk of a derived call, for recorded pacing."""

    def to_json(self, *, with_origin: bool = False) -> dict[str, Any]:
        """The scenario format's JSON of the entry, optionally with its origin."""
        out = entry_to_json(self.entry)
        if with_origin:
            out["origin"] = self.origin
        return out


@dataclass(slots=True)
class SessionScript:
    """The ordered calls of one recorded session."""

    recorded_id: str
    """The header id of the log."""
    created_at: float
    """The header createdAt (ms)."""
    entries: list[ScriptEntry]
    """The calls, in order."""
    primary: bool
    """True for the parent session."""
    file: str | None = None
    """The log this script came from (None for a sidecar-only primary)."""
    seed_length: float = 0
    """The header seedLength."""
    header: SessionHeader = field(default_factory=SessionHeader)
    """The whole header."""
    untimed: int = 0
    """Chunk events and packed rows of the log that left their time out (a projected log):
    recorded pacing has no gaps for them."""
    said: LogContext | None = None
    """The log's user messages and tool results, read with its calls (None: a script built
    without its log, which has no recorded context)."""

    def to_json(self, *, with_origin: bool = False) -> dict[str, Any]:
        """The conformance JSON of this script."""
        return {
            "recordedId": self.recorded_id,
            "createdAt": plain_number(self.created_at),
            "entries": [e.to_json(with_origin=with_origin) for e in self.entries],
            "primary": self.primary,
        }
