"""The HTTP server a connected agent talks to (SPEC 8): OpenAI/DeepSeek, native NDJSON, control.

``create_app`` builds the Starlette app over a ``ReplayEngine``; every route
also exists under ``/runs/{run}/`` with its own bindings. ``ReplayServer``
runs it with uvicorn inside an already running event loop (no signal
handlers), and ``serve_scenario`` loads a scenario directory and serves it.
Whoever reloads the engine itself tells the server with ``ReplayServer.set_scenario``
(or hands it a callable returning the current scenario) so ``/replay/v1/scripts`` follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from .engine import DEFAULT_RUN, Pace, ReplayEngine, diff_scripts
from .errors import ReplayError
from .models import ModelConfig, ProviderConfig, SessionScript
from .request_body import MAX_BODY_BYTES as MAX_BODY_BYTES  # re-exported
from .request_body import BadRequest, read_json_body, session_field
from .responses import CallCompletion, CallStream, NdjsonFormat, SseFormat, StreamCount
from .scenario import Scenario, load_scenario
from .wire_openai import error_body, status_for_code

DEFAULT_PROVIDERS = [ProviderConfig(id="replay", models=[ModelConfig(id="replay")])]
"""What ``/v1/models`` lists when no provider catalog is configured."""

ScenarioSource = Scenario | Callable[[], Scenario | None] | None
"""What the scripts route reports headers from: a scenario, a callable returning the current
one (asked on every request), or nothing."""


NO_RETRY = {"x-should-retry": "false"}
"""On every error answer of a model route: the OpenAI and Anthropic SDKs then do not retry
a scripted failure (which would consume the next recorded call behind the agent's back)."""
RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""The header the Stainless-made SDKs (openai, anthropic) number their retries with."""


def is_retry(request: Request) -> bool:
    """True when the request is an SDK's retry of an earlier one (retry count above 0)."""
    count = request.headers.get(RETRY_COUNT_HEADER, "").strip()
    return count.isdigit() and int(count) > 0


def request_session(request: Request, body: dict[str, Any] | None = None) -> str | None:
    """The caller's session id: ``X-Session-Id``, the ``/sessions/{id}`` path, the body field.

    Absent everywhere is the anonymous session; two that disagree are a BadRequest (400).
    """
    given: list[tuple[str, str | None]] = []
    header = request.headers.get("x-session-id")
    if header:
        given.append(("the X-Session-Id header", header))
    if "session" in request.path_params:
        given.append(("the /sessions/{id} path", str(request.path_params["session"])))
    if body is not None and "sessionId" in body:
        given.append(("the sessionId body field", session_field(body)))
    values = {value for _, value in given}
    if len(values) > 1:
        said = ", ".join(f"{where} says {value!r}" for where, value in given)
        raise BadRequest(400, f"the session id is given twice and disagrees: {said}; send it "
                         "once, or the same in each place", "SESSION_MISMATCH")
    return given[0][1] if given else None


def _error_handler(status: int, code: str) -> Callable[[Request, Exception], Any]:
    async def handle(request: Request, exc: Exception) -> Response:
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
        allow = {k.lower(): v for k, v in headers.items()}.get("allow")
        if status == 404:
            message = f"no route {request.url.path}; see GET /replay/v1/scripts for what is served"
        elif status == 405:
            message = (f"{request.method} is not allowed on {request.url.path}"
                       + (f"; use {allow}" if allow else ""))
        else:
            message = f"internal error while answering {request.method} {request.url.path}"
        return JSONResponse({"error": {"message": message, "type": "replay_error", "code": code}},
                            status_code=status, headers=headers)

    return handle


def with_call_keys(script: SessionScript) -> dict[str, Any]:
    """A script as ``GET /replay/v1/scripts`` answers it: each entry with its origin and, for a
    call taken from the log, its recorded ``callKey`` (turn/step), as the debugger shows it."""
    out = script.to_json(with_origin=True)
    for item, entry in zip(script.entries, out["entries"], strict=True):
        if item.call_key is not None:
            entry["callKey"] = item.call_key
    return out


def scripts_headers(served: list[SessionScript], scenario: Scenario | None) -> dict[str, Any]:
    """Each served log's header by file name, as ``GET /replay/v1/scripts`` answers it.

    The scenario's own headers when it holds exactly the scripts being served; otherwise
    (the engine was reloaded behind the server's back) the served scripts' headers.
    """
    if scenario is not None and len(scenario.scripts) == len(served) and all(
            a is b for a, b in zip(scenario.scripts, served, strict=True)):
        return {name: h.to_json() for name, h in scenario.headers.items()}
    return {Path(s.file).name: s.header.to_json() for s in served if s.file is not None}


class _Handlers:
    """The route endpoints, sharing one engine and its serving context."""

    def __init__(self, engine: ReplayEngine, scenario: ScenarioSource,
                 providers: list[ProviderConfig] | None,
                 reload: Callable[[], object] | None, sdk_retries: bool = False) -> None:
        self.engine = engine
        self.no_retry: dict[str, str] = {} if sdk_retries else NO_RETRY
        self.no_retry_raw = [(k.encode(), v.encode()) for k, v in self.no_retry.items()]
        self.providers = providers if providers else DEFAULT_PROVIDERS
        self.reload_fn = reload
        self.streams = StreamCount()
        self._scenario: Scenario | None = None
        self._provider: Callable[[], Scenario | None] | None = None
        self.set_scenario(scenario)

    def set_scenario(self, scenario: ScenarioSource) -> None:
        """Serve ``scenario`` (or whatever a provider callable returns) from now on."""
        if callable(scenario):
            self._scenario, self._provider = None, scenario
        else:
            self._scenario, self._provider = scenario, None

    @property
    def scenario(self) -> Scenario | None:
        """The scenario as last told (a provider is asked every time)."""
        return self._provider() if self._provider is not None else self._scenario

    @staticmethod
    def run(request: Request) -> str:
        return str(request.path_params.get("run", DEFAULT_RUN))

    # -- model calls --------------------------------------------------------------------

    def _error(self, exc: ReplayError) -> JSONResponse:
        return JSONResponse(error_body(exc.message, exc.code),
                            status_code=status_for_code(exc.code), headers=self.no_retry)

    async def chat_completions(self, request: Request) -> ASGIApp:
        try:
            body = await read_json_body(request)
            session = request_session(request)
        except BadRequest as bad:
            return bad.response(self.no_retry)
        model = body.get("model") if isinstance(body.get("model"), str) else "replay"
        try:
            handle = await self.engine.open_call_async(
                session, body.get("messages"), run=self.run(request), model=model,
                retry=is_retry(request))
        except ReplayError as exc:
            return self._error(exc)
        if body.get("stream") is True:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            return CallStream(handle, SseFormat(str(model), include_usage=include_usage),
                              self.streams, self.no_retry_raw)
        return CallCompletion(handle, str(model), self.no_retry_raw)

    async def native_stream(self, request: Request) -> ASGIApp:
        try:
            body = await read_json_body(request)
            session = request_session(request, body)
        except BadRequest as bad:
            return bad.response(self.no_retry)
        try:
            model = body.get("model") if isinstance(body.get("model"), str) else None
            handle = await self.engine.open_call_async(
                session, body.get("messages"), run=self.run(request), model=model,
                retry=is_retry(request))
        except ReplayError as exc:
            return self._error(exc)
        return CallStream(handle, NdjsonFormat(), self.streams, self.no_retry_raw)

    def _model_list(self) -> list[dict[str, Any]]:
        return [{"id": m.id, "object": "model", "created": 0, "owned_by": p.id}
                for p in self.providers for m in p.models]

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": self._model_list()})

    async def model(self, request: Request) -> Response:
        wanted = str(request.path_params["model"])
        for model in self._model_list():
            if model["id"] == wanted:
                return JSONResponse(model)
        known = ", ".join(m["id"] for m in self._model_list())
        return JSONResponse(
            error_body(f"model {wanted!r} is not in the catalog; it offers: {known}",
                       "MODEL_NOT_FOUND"), status_code=404, headers=self.no_retry)

    # -- control ------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def scripts(self, request: Request) -> Response:
        served = self.engine.scripts
        return JSONResponse({
            "ok": True,
            "scripts": [with_call_keys(s) for s in served],
            "headers": scripts_headers(served, self.scenario),
        })

    async def state(self, request: Request) -> Response:
        return JSONResponse(self.engine.state(self.run(request)).to_json())

    async def journal(self, request: Request) -> Response:
        run = self.run(request)
        return JSONResponse({"run": run, "calls": [r.to_json() for r in self.engine.journal(run)]})

    async def assert_consumed(self, request: Request) -> Response:
        problems = self.engine.consumed_problems(self.run(request))
        if problems:
            return JSONResponse({"ok": False, "problems": problems}, status_code=409)
        return JSONResponse({"ok": True})

    async def reset(self, request: Request) -> Response:
        self.engine.reset(self.run(request))
        return JSONResponse({"ok": True})

    async def cancel(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            session = session_field(body)
        except BadRequest as bad:
            return bad.response()
        run = self.run(request)
        if "sessionId" in body:
            count = self.engine.cancel(session, run=run)
        else:
            count = self.engine.cancel(run=run, all_hanging=True)
        return JSONResponse({"ok": True, "cancelled": count})

    async def step(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            session = session_field(body)
            how = body.get("how", "chunk")
            if how not in ("chunk", "call", "continue"):
                raise BadRequest(400, f"how must be chunk, call or continue, got {how!r}",
                                 "INVALID_REQUEST")
        except BadRequest as bad:
            return bad.response()
        step_how: Literal["chunk", "call", "continue"] = how
        if not self.engine.step(session, run=self.run(request), how=step_how):
            return JSONResponse({"ok": False, "error": "no call in flight for that session"},
                                status_code=404)
        return JSONResponse({"ok": True})

    async def pause(self, request: Request) -> Response:
        try:
            session = session_field(await read_json_body(request))
        except BadRequest as bad:
            return bad.response()
        if not self.engine.pause(session, run=self.run(request)):
            return JSONResponse({"ok": False, "error": "no call in flight for that session"},
                                status_code=404)
        return JSONResponse({"ok": True})

    async def mode(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            mode = body.get("mode")
            if mode not in ("run", "call", "chunk"):
                raise BadRequest(400, f"mode must be run, call or chunk, got {mode!r}",
                                 "INVALID_REQUEST")
        except BadRequest as bad:
            return bad.response()
        step_mode: Literal["run", "call", "chunk"] = mode
        self.engine.set_mode(step_mode)
        return JSONResponse({"ok": True, "mode": step_mode})

    async def reload(self, request: Request) -> Response:
        if self.reload_fn is None:
            return JSONResponse({"ok": False, "error": "this server has no reload source"},
                                status_code=404)
        before = self.engine.scripts
        try:
            result = self.reload_fn()
        except ReplayError as exc:
            return JSONResponse({"ok": False, "error": exc.message, "code": exc.code},
                                status_code=409)
        if isinstance(result, Scenario) and self._provider is None:
            self._scenario = result
        self.engine.prepare()
        return JSONResponse({"ok": True, "changes": diff_scripts(before, self.engine.scripts)})


def create_app(
    engine: ReplayEngine,
    *,
    scenario: ScenarioSource = None,
    providers: list[ProviderConfig] | None = None,
    reload: Callable[[], object] | None = None,
    sdk_retries: bool = False,
) -> Starlette:
    """The ASGI app serving ``engine``: every SPEC 8 route, bare (run ``default``) and per run.

    The model routes also exist under ``/sessions/{id}/`` (after any run prefix), for
    clients that can set a base URL but no header. ``scenario`` may be a callable
    returning the current scenario; ``set_app_scenario`` changes it later.
    ``sdk_retries`` leaves ``x-should-retry: false`` off the model routes' error answers.
    """
    h = _Handlers(engine, scenario, providers, reload, sdk_retries)
    model_routes: list[tuple[str, Callable[[Request], Any], list[str]]] = [
        ("/v1/chat/completions", h.chat_completions, ["POST"]),
        ("/v1/models", h.models, ["GET"]),
        ("/v1/models/{model:path}", h.model, ["GET"]),
        ("/replay/v1/stream", h.native_stream, ["POST"]),
    ]
    table: list[tuple[str, Callable[[Request], Any], list[str]]] = [
        *model_routes,
        ("/replay/v1/scripts", h.scripts, ["GET"]),
        ("/replay/v1/state", h.state, ["GET"]),
        ("/replay/v1/journal", h.journal, ["GET"]),
        ("/replay/v1/assert-consumed", h.assert_consumed, ["POST"]),
        ("/replay/v1/reset", h.reset, ["POST"]),
        ("/replay/v1/cancel", h.cancel, ["POST"]),
        ("/replay/v1/step", h.step, ["POST"]),
        ("/replay/v1/pause", h.pause, ["POST"]),
        ("/replay/v1/mode", h.mode, ["POST"]),
        ("/replay/v1/reload", h.reload, ["POST"]),
        ("/healthz", h.healthz, ["GET"]),
    ]
    routes = []
    for path, endpoint, methods in table:
        routes.append(Route(path, endpoint, methods=methods))
        routes.append(Route("/runs/{run}" + path, endpoint, methods=methods))
    for path, endpoint, methods in model_routes:
        routes.append(Route("/sessions/{session}" + path, endpoint, methods=methods))
        routes.append(Route("/runs/{run}/sessions/{session}" + path, endpoint, methods=methods))
    app = Starlette(routes=routes, exception_handlers={
        404: _error_handler(404, "NOT_FOUND"),
        405: _error_handler(405, "METHOD_NOT_ALLOWED"),
        500: _error_handler(500, "INTERNAL"),
    })
    app.state.replay_handlers = h
    return app


def set_app_scenario(app: Starlette, scenario: ScenarioSource) -> None:
    """Tell an app made by ``create_app`` which scenario it serves now (after a reload)."""
    handlers = getattr(app.state, "replay_handlers", None)
    if not isinstance(handlers, _Handlers):
        raise TypeError("set_app_scenario needs an app made by create_app")
    handlers.set_scenario(scenario)


class _EmbeddedServer(uvicorn.Server):
    """uvicorn that leaves signal handling to whoever owns the event loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def is_loopback(host: str) -> bool:
    """True when ``host`` only listens on the local machine."""
    return host in ("localhost", "::1") or host.startswith("127.")


class ReplayServer:
    """The replay app on uvicorn, run as a task of the current event loop."""

    def __init__(
        self,
        engine: ReplayEngine,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        providers: list[ProviderConfig] | None = None,
        scenario: ScenarioSource = None,
        reload: Callable[[], object] | None = None,
        app: ASGIApp | None = None,
        sdk_retries: bool = False,
    ) -> None:
        self.engine = engine
        self.host = host
        self.port = port
        self._routes: Starlette | None = None
        self._scenario: ScenarioSource = scenario
        if app is None:
            app = self._routes = create_app(engine, scenario=scenario, providers=providers,
                                            reload=reload, sdk_retries=sdk_retries)
        self.app = app
        self._server: _EmbeddedServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._exit = asyncio.Event()
        self._url: str | None = None

    @property
    def scenario(self) -> Scenario | None:
        """The scenario the scripts route reports (a provider is asked now)."""
        if self._routes is not None:
            handlers: _Handlers = self._routes.state.replay_handlers
            return handlers.scenario
        source = self._scenario
        return source() if callable(source) else source

    def set_scenario(self, scenario: ScenarioSource) -> None:
        """Tell the server the scenario it serves now, e.g. after ``engine.reload(s.scripts)``.

        Takes a Scenario, or a callable returning the current one (asked on every request).
        """
        self._scenario = scenario
        if self._routes is not None:
            set_app_scenario(self._routes, scenario)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765`` (once started)."""
        if self._url is None:
            raise RuntimeError("the replay server is not started")
        return self._url

    def _bind(self) -> socket.socket:
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    async def start(self) -> str:
        """Bind, start serving and return the base URL (the port is resolved when 0)."""
        if self._task is not None and self._url is not None:
            return self._url
        # Pay one-time costs now, not in the first call: the placeholder scan and anyio
        # importing its asyncio backend (tens of milliseconds) on its first Event.
        self.engine.prepare()
        anyio.Event()
        sock = self._bind()
        config = uvicorn.Config(
            self.app, log_config=None, log_level="warning", access_log=False, lifespan="off",
            ws="none", timeout_graceful_shutdown=3, server_header=False,
        )
        config.load()
        server = _EmbeddedServer(config)
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup(sockets=[sock])
        except BaseException:
            sock.close()
            raise
        self._server = server
        self.port = sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._url = f"http://{host}:{self.port}"
        self._exit = asyncio.Event()
        self._task = asyncio.create_task(self._main(server, sock))
        return self._url

    async def _main(self, server: _EmbeddedServer, sock: socket.socket) -> None:
        counter = 0
        while not self._exit.is_set():
            await server.on_tick(counter)
            counter = (counter + 10) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), 1.0)
        await server.shutdown(sockets=[sock])

    async def stop(self) -> None:
        """Cancel every call in flight and shut down cleanly."""
        if self._task is None:
            return
        self.engine.cancel_all()
        self._exit.set()
        task, self._task = self._task, None
        await task

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()


@contextlib.asynccontextmanager
async def serve_scenario(
    path: str | Path,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    pace_ms: int = 0,
    pace: Pace | None = None,
    ready_dir: str | Path | None = None,
    providers: list[ProviderConfig] | None = None,
    sdk_retries: bool = False,
) -> AsyncIterator[ReplayServer]:
    """Load a scenario directory and serve it; yields the started server (``.url``, ``.engine``)."""
    scenario = load_scenario(path)
    engine = ReplayEngine(scenario.scripts, pace_ms, pace=pace, ready_dir=ready_dir)

    def reload() -> Scenario:
        fresh = load_scenario(path)
        engine.reload(fresh.scripts)
        return fresh

    async with ReplayServer(engine, host=host, port=port, providers=providers,
                            scenario=scenario, reload=reload, sdk_retries=sdk_retries) as server:
        yield server
