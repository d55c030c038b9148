"""The model-call endpoint, one per dialect: read the request, bind the call, answer it.

The wire's common rules (docs/format.md#wire) are the same for every dialect: the body is read and the session
taken from the header, the ``/sessions/{id}`` path (and the body for the native route) before the
engine is touched; refusals, binding errors and scripted throws answer in the dialect's error
shape with ``x-should-retry: false`` unless SDK retries are allowed; retries are marked. A run
with an overflow handler (``Served.overflow``) hands its binding errors to it instead: the
pytest plugin's ``new_episodes`` forwards them upstream and records them.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from ..errors import BindingError, ReplayError
from ..wire.dialect import Dialect, RouteInfo
from ..wire.jsonbytes import JSONResponse
from .calls import CallCompletion, CallStream
from .preamble import bare_path, is_retry, request_session
from .request_body import parse_json_body, read_body
from .served import Overflowed, Served


class ModelCall:
    """``POST`` on one of a dialect's routes."""

    def __init__(self, served: Served, dialect: Dialect, route: str = "") -> None:
        self.served = served
        self.dialect = dialect
        self.route = route
        """The route template this endpoint serves (what an overflow forwards to)."""
        self.no_retry = served.no_retry if dialect.no_retry else {}
        self.no_retry_raw = served.no_retry_raw if dialect.no_retry else []

    def error(self, exc: ReplayError) -> Response:
        """``exc`` as the dialect answers it, with the no-retry header."""
        status, body = self.dialect.error_answer(exc)
        return JSONResponse(body, status_code=status, headers=self.no_retry)

    async def endpoint(self, request: Request) -> ASGIApp:
        """Serve one model call (the route's endpoint)."""
        dialect = self.dialect
        run = self.served.run(request)
        try:
            body = parse_json_body(raw := await read_body(request))
            session = request_session(request, body if dialect.session_in_body else None)
            call = dialect.read(body, RouteInfo(
                bare_path(request.url.path), dict(request.path_params), dict(request.query_params)))
            self.served.named(call.model)
            handle = await self.served.engine.open_call_async(
                session, call.corpus, run=run, model=call.model, retry=is_retry(request),
                dialect=dialect.name)
        except BindingError as exc:
            overflow = self.served.overflow.get(run)
            if overflow is None or dialect.name not in overflow[1]:
                return self.error(exc)
            return overflow[0](Overflowed(request, self.route, dialect.name, session, raw, body,
                                          exc))
        except ReplayError as exc:
            return self.error(exc)
        if call.stream:
            encoder = dialect.encoder(call, handle.entry)
            self._keep(run, encoder)
            return CallStream(handle, encoder, dialect, self.served.streams, self.no_retry_raw,
                              media_type=dialect.stream_media_type(call))
        label = (f"session {session or 'anonymous'}, script {handle.script_index}, call "
                 f"{handle.call_index}, run {run}")
        assembler = dialect.assembler(call)
        self._keep(run, assembler)
        return CallCompletion(handle, dialect, call, label, self.no_retry_raw,
                              assembler=assembler)

    def _keep(self, run: str, made: object) -> None:
        """Keep what a later request can fetch of this call (a Responses answer by its id)."""
        kept = self.dialect.kept(made)
        if kept is not None:
            self.served.answers.keep(run, kept)
