"""The recording proxy: serves the model routes on loopback and forwards each call upstream.

Each request goes to the same path under the upstream base URL (a ``/runs/{run}`` or
``/sessions/{id}`` prefix of the recorder's own is not forwarded; a session id given in the
path travels on as ``X-Session-Id``) with the client's own headers. The answer is relayed
byte for byte as it arrives while the dialect rebuilds its chunks for the log (``forward``).
Nothing of the request's headers is written anywhere: their secrets are redacted from what is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from ..errors import BadRequest, ConfigError
from ..safe_text import shown
from ..server import is_loopback
from ..server.guard import RequestGuard
from ..server.preamble import NO_RETRY, request_session
from ..server.request_body import parse_json_body, read_body
from ..server.runner import EmbeddedUvicorn
from ..wire.jsonbytes import JSONResponse
from .dialect import RecordDialect
from .dialects import DIALECTS
from .forward import DELIBERATE_DROP, NETWORK, Forward, upstream_error
from .passthrough import Passthrough
from .redact import shown_url
from .writer import ScenarioRecorder

_HOP_BY_HOP = frozenset({
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
    "upgrade", "proxy-connection", "accept-encoding",
})


def check_upstream(upstream: str, option: str = "--upstream") -> str:
    """The upstream base URL without a trailing slash; ConfigError unless http(s) with a host
    (naming ``option``, the flag the user gave it with)."""
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{option} {shown_url(upstream)!r}: give the provider's base URL, e.g. "
                          "https://api.deepseek.com or http://127.0.0.1:8765 (http or https).")
    return upstream.rstrip("/")


def upstream_url(base: str, path: str, query: str) -> str:
    """Where a call of ``path`` goes: ``base + path``, not doubling a ``/v1`` the base ends
    with; a query the base carries (``?key=…``) comes before the request's own."""
    parts = urlsplit(base)
    prefix = parts.path.rstrip("/")
    if prefix.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    queries = "&".join(q for q in (parts.query, query) if q)
    return urlunsplit((parts.scheme, parts.netloc, prefix + path, queries, ""))


def forwarded_path(route: str, params: dict[str, Any]) -> str:
    """The upstream path of a model route: its template (``/v1beta/models/{model}:...``) with
    the request's own values, without the recorder's ``/runs`` or ``/sessions`` prefix."""
    if "{" not in route:
        return route
    return route.format_map({k: quote(str(v), safe="") for k, v in params.items()})


class RecordProxy:
    """The recorder's HTTP server: uvicorn on loopback, run as a task of the current loop."""

    def __init__(self, recorder: ScenarioRecorder, upstream: str, *, host: str = "127.0.0.1",
                 port: int = 0, dialects: tuple[RecordDialect, ...] = DIALECTS) -> None:
        self.recorder = recorder
        self.upstream = check_upstream(upstream)
        recorder.redact.learn_url(self.upstream)  # its credentials are never written
        self.host = host
        self.port = port
        self.dialects = dialects
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0))
        self.app = self._create_app()
        self._runner: EmbeddedUvicorn | None = None
        self._in_flight: set[anyio.CancelScope] = set()
        """The calls being relayed: a stop ends them before the server shuts down."""
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. ``http://127.0.0.1:8765`` (once started)."""
        if self._url is None:
            raise RuntimeError("the recorder is not started")
        return self._url

    def _create_app(self) -> Starlette:
        routes: list[Route] = []

        def add(path: str, endpoint: Callable[[Request], Any], methods: list[str],
                sessions: bool) -> None:
            prefixes = ["", "/runs/{run}"]
            if sessions:
                prefixes += ["/sessions/{session}", "/runs/{run}/sessions/{session}"]
            routes.extend(Route(p + path, endpoint, methods=methods) for p in prefixes)

        for dialect in self.dialects:
            for path in dialect.routes:
                add(path, self._model_call(dialect, path), ["POST"], True)
        add("/v1/models", self._passthrough("/v1/models"), ["GET"], True)
        add("/v1/models/{model:path}", self._passthrough(None), ["GET"], True)
        routes.append(Route("/healthz", self._healthz, methods=["GET"]))
        return Starlette(routes=routes, exception_handlers={
            404: _not_found(404, "NOT_FOUND", self.dialects),
            405: _not_found(405, "METHOD_NOT_ALLOWED", self.dialects)})

    async def _healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "recording": str(self.recorder.directory)})

    def _headers(self, request: Request, session: str | None) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["accept-encoding"] = "identity"
        if session is not None and "x-session-id" not in request.headers:
            headers["x-session-id"] = session
        return headers

    def _model_call(self, dialect: RecordDialect, path: str) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> ASGIApp:
            try:  # the replay server's own rules: what it would refuse is never recorded
                session = request_session(request)
                body = parse_json_body(raw := await read_body(request))
            except BadRequest as bad:
                return bad.response(NO_RETRY)
            return self.forward(request, dialect, path, session, raw, body)

        return endpoint

    def forward(self, request: Request, dialect: RecordDialect, path: str, session: str | None,
                raw: bytes, body: dict[str, Any]) -> ASGIApp:
        """Record one model call of route ``path`` (its body read) and relay it upstream; the
        pytest plugin's ``new_episodes`` calls it for the calls past a replayed recording."""
        recorder = self.recorder
        recorder.redact.learn(request.headers.items(), request.url.query)
        call = recorder.record_call(session, dialect.messages, body)
        if (failure := recorder.failure) is not None:
            return upstream_error(f"the recording stopped: {failure.message}", 503, failure.code)
        url = upstream_url(self.upstream, forwarded_path(path, request.path_params),
                           request.url.query)
        outgoing = self.client.build_request("POST", url, content=raw,
                                             headers=self._headers(request, session))
        forward = Forward(self.client, self.upstream, recorder.redact, outgoing, call, dialect)
        forward.stops = self._in_flight
        return forward

    def _passthrough(self, path: str | None) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> ASGIApp:
            tail = path if path is not None else f"/v1/models/{request.path_params['model']}"
            url = upstream_url(self.upstream, tail, request.url.query)
            outgoing = self.client.build_request("GET", url, headers=self._headers(request, None))
            answer = Passthrough(self.client, self.upstream, self.recorder.redact, outgoing)
            answer.stops = self._in_flight
            return answer

        return endpoint

    async def start(self) -> str:
        """Bind, start serving and return the base URL (the port is resolved when 0)."""
        if self._url is not None:
            return self._url
        logging.getLogger("uvicorn.error").addFilter(DELIBERATE_DROP)
        runner = EmbeddedUvicorn(RequestGuard(self.app, host=self.host), graceful_s=1)
        self._url = await runner.listen(self.host, self.port)
        self._runner, self.port = runner, runner.port
        return self._url

    async def stop(self) -> None:
        """Finish the recording (calls still streaming are dropped and their relays ended, so
        the server shuts down without cancelling them mid-answer), then shut down."""
        self.recorder.close()
        for relay in list(self._in_flight):
            relay.cancel()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.stop()
        await self.client.aclose()


def _not_found(status: int, code: str, dialects: tuple[RecordDialect, ...]
               ) -> Callable[[Request, Exception], Any]:
    """404 / 405 as JSON naming the routes the recorder serves (the path echoed capped)."""
    served = ", ".join(path for dialect in dialects for path in dialect.routes)

    async def handle(request: Request, exc: Exception) -> Response:
        path = shown(request.url.path)
        what = f"no route {path}" if status == 404 else \
            f"{shown(request.method)} is not allowed on {path}"
        return JSONResponse({"error": {"message": f"{what}; the recorder serves the model "
                                       f"routes (POST {served}) and GET /v1/models",
                                       "type": "replay_error", "code": code}},
                            status_code=status)

    return handle


__all__ = ["NETWORK", "RecordProxy", "check_upstream", "is_loopback", "upstream_url"]
