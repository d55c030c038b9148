"""The seam between the server and a wire dialect: what one dialect must say to be served.

A ``Dialect`` names its routes, reads a model-call request (model, stream flag, the corpus
``{{fromRequest}}`` searches: its ``requests`` reading, ``replay_engine.requests``, says which
part of the body that is and reads it as messages for every comparison), makes the stream
encoder of one bound call (opening bytes sent when the call binds, bytes per chunk, closing
bytes, failure bytes) and its non-streaming assembler, and maps errors to its status, body and
no-retry handling. The server composes dialects; it knows none of their formats.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from ..chunkshape import is_error_finish as is_error_finish
from ..errors import BadRequest, ReplayError
from ..models import AnyEntry
from ..requests import READERS, RequestReader
from ..statuscodes import status_for_code as status_for_code

SSE_MEDIA_TYPE = b"text/event-stream; charset=utf-8"

ChatErrorFinish = Literal["error", "reason"]
CHAT_ERROR_FINISHES: tuple[ChatErrorFinish, ...] = ("error", "reason")
ResponsesReasoning = Literal["summary", "content"]
RESPONSES_REASONING: tuple[ResponsesReasoning, ...] = ("summary", "content")


@dataclass(frozen=True, slots=True)
class WireOptions:
    """How the dialects put what a provider's wires say two ways (``--chat-error-finish``,
    ``--responses-reasoning``): one set for a server, shared by every front end."""

    chat_error_finish: ChatErrorFinish = "error"
    """Chat route, a recorded error finish: ``error`` ends the stream like a throw after its
    prefix (an error event, no ``[DONE]``; ``stream: false`` an HTTP error), so every
    OpenAI-style client raises; ``reason`` sends ``finish_reason`` = the code in lower case."""
    responses_reasoning: ResponsesReasoning = "summary"
    """Responses route, reasoning items: ``summary`` (``summary_text`` parts and the
    ``reasoning_summary_*`` events, as OpenAI's reasoning models send) or ``content``
    (``reasoning_text`` content and the ``reasoning_text`` events, the open-weight form)."""


class StreamEncoder(Protocol):
    """One call's chunks as bytes on the wire; pure, one instance per call."""

    def opening(self) -> bytes:
        """What goes out as soon as the call is bound, before any pace wait or step gate."""
        ...

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        """The bytes of one recorded chunk (None when it maps to nothing)."""
        ...

    def close(self) -> bytes:
        """What ends a stream whose chunks ran out."""
        ...

    def fail(self, message: str, code: str) -> bytes:
        """What ends a stream failing after its first byte (a throw after its prefix, an abort)."""
        ...


class Assembler(Protocol):
    """Folds one call's chunks into the ``stream: false`` answer."""

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk in."""
        ...


@dataclass(frozen=True, slots=True)
class CallRequest:
    """What a dialect reads from one model-call request body."""

    model: str | None
    """The model named by the request (echoed on the wire, kept in the journal)."""
    stream: bool
    """True: answer an event stream; False: one assembled JSON answer."""
    corpus: Any
    """What the engine gets as the call's messages: searched by ``{{fromRequest}}`` (every
    string leaf) and shown by the debugger's Request view."""
    options: dict[str, Any] = field(default_factory=dict)
    """Dialect-specific request flags (e.g. chat's ``stream_options.include_usage``)."""


@dataclass(frozen=True, slots=True)
class RouteInfo:
    """Where a model-call request arrived: for dialects whose path or query says what the body
    does not (Gemini's model and method in the path, ``alt=sse`` in the query)."""

    path: str
    """The request path without run and session prefixes."""
    params: Mapping[str, str] = field(default_factory=dict)
    """The route's path parameters (``model`` on Gemini routes)."""
    query: Mapping[str, str] = field(default_factory=dict)
    """The query parameters."""


@dataclass(frozen=True, slots=True)
class Kept:
    """What a later request can fetch again of one served call (``GET /v1/responses/{id}``)."""

    id: str
    """The id the client was given for the answer."""
    render: Callable[[], dict[str, Any]]
    """The answer as it stands when fetched (in progress, or final)."""


class Dialect(ABC):
    """One wire dialect: routes, request reading, encoder, assembler and error mapping."""

    name: ClassVar[str]
    """Short name, recorded per call in the journal: openai, native, anthropic, responses, gemini."""
    routes: ClassVar[tuple[str, ...]]
    """``POST`` paths served (each also under ``/runs/{run}`` and ``/sessions/{id}``)."""
    media_type: ClassVar[bytes] = SSE_MEDIA_TYPE
    """Content type of a streamed answer."""
    session_in_body: ClassVar[bool] = False
    """The body's ``sessionId`` field names the session too (the native route)."""
    errors_as_status: ClassVar[bool] = True
    """A failure before the first chunk answers an HTTP error instead of opening a stream."""
    no_retry: ClassVar[bool] = True
    """Error answers carry ``x-should-retry: false`` (unless the server lets SDKs retry)."""

    def owns(self, path: str) -> bool:
        """True when ``path`` (without run and session prefixes) belongs to this dialect."""
        return any(path == route or path.startswith(route + "/") for route in self.routes)

    @property
    def requests(self) -> RequestReader:
        """How this dialect reads its requests (``replay_engine.requests``): the corpus, and
        the conversation the engine compares with the recording."""
        return READERS[self.name]

    def corpus(self, body: dict[str, Any]) -> Any:
        """What ``{{fromRequest}}`` searches in a request body and the debugger's Request view
        shows (the dialect's request reading says which part of the body it is)."""
        return self.requests.corpus(body)

    @abstractmethod
    def request(self, body: dict[str, Any]) -> CallRequest:
        """Read a request body (BadRequest when the dialect cannot serve it)."""

    def read(self, body: dict[str, Any], route: RouteInfo) -> CallRequest:
        """Read a request from its body and where it arrived (most dialects need the body only)."""
        return self.request(body)

    def stream_media_type(self, call: CallRequest) -> bytes:
        """Content type of this call's streamed answer (one per dialect unless it says otherwise)."""
        return self.media_type

    @abstractmethod
    def encoder(self, call: CallRequest, entry: AnyEntry) -> StreamEncoder:
        """The stream encoder of one bound call (``entry`` is known when the call binds)."""

    def assembler(self, call: CallRequest) -> Assembler:
        """The non-streaming assembler of one bound call."""
        raise NotImplementedError(f"the {self.name} dialect always streams")

    def answer(self, assembler: Assembler, call: CallRequest, label: str) -> dict[str, Any]:
        """The assembled JSON answer; ``label`` names the call in errors (ReplayError)."""
        raise NotImplementedError(f"the {self.name} dialect always streams")

    def kept(self, made: object) -> Kept | None:
        """What can be fetched again by id of a call's encoder or assembler (``made``); None
        for dialects whose answers cannot be fetched again."""
        return None

    def error_status(self, code: str) -> int:
        """The HTTP status of a failure code."""
        return status_for_code(code)

    @abstractmethod
    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        """The JSON body of an error answer; ``refused``: the request itself was refused."""

    def error_answer(self, exc: ReplayError) -> tuple[int, dict[str, Any]]:
        """Status and body answering ``exc`` (a refused request keeps its own status)."""
        refused = isinstance(exc, BadRequest)
        status = exc.status if isinstance(exc, BadRequest) else self.error_status(exc.code)
        return status, self.error_body(exc.message, exc.code, status, refused=refused)


def failure_of(reason: dict[str, Any]) -> tuple[str, str]:
    """Message and code of a recorded error finish (its ``failure``, else the reason itself)."""
    failure = reason.get("failure")
    failure = failure if isinstance(failure, dict) else reason
    message, code = failure.get("message"), failure.get("code")
    return (message if isinstance(message, str) and message else "the recorded call failed",
            code if isinstance(code, str) and code else "ERROR")


def openai_error_body(message: str, code: str, *, refused: bool = False) -> dict[str, Any]:
    """``{"error": {"message", "type", "code"}}``: the OpenAI-style body (docs/format.md#wire-openai-chat)."""
    kind = "invalid_request_error" if refused else "replay_error"
    return {"error": {"message": message, "type": kind, "code": code}}
