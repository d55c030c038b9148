"""The embedded runner: the replay app on uvicorn inside an already running event loop.

``ReplayServer`` binds, serves and stops cleanly without installing signal handlers (the
debugger and test harnesses own the loop); ``ReplayServer.serving`` is the one way every front
end builds it from the serve option set (``options.ServeOptions``); ``serve_scenario`` loads a
scenario directory and serves it for the length of an ``async with``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from ..engine import Pace, ReplayEngine
from ..engine.staging import StagedScripts
from ..models import ProviderConfig
from ..scenario.loading import Scenario, load_scenario
from ..wire.dialect import WireOptions
from .accepting import burst_listener
from .app import create_app, served_by, set_app_scenario
from .frontdoor import MAX_HEAD_BYTES, HttpParser, http_protocol
from .guard import RequestGuard
from .listen import cannot_listen
from .options import ServeOptions
from .served import OverflowHandler, ReloadSource, ScenarioSource

HEADER_TIMEOUT_S = 10.0
"""A connection that has not sent a whole request head this long after connecting (or after
its previous answer) is closed: slow clients cannot hold sockets open for ever."""
KEEP_ALIVE_S = 5
"""An idle keep-alive connection is closed after this many seconds."""
MAX_CONNECTIONS = 1000
"""At this many connections the one idle the longest is closed for a newcomer; when none is
idle, requests beyond the cap are answered 503 (JSON) at once."""


class _EmbeddedServer(uvicorn.Server):
    """uvicorn that leaves signal handling to whoever owns the event loop and accepts every
    waiting connection in one turn of it (``accepting``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start on the given sockets, each watched by a ``BurstListener`` (the
        loop's own server where it cannot watch sockets)."""
        if not sockets:
            await super().startup(sockets)
            return
        await self.lifespan.startup()
        config = self.config
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.Protocol:
            made: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state,
                _loop=loop)
            return made

        self.servers = []
        for sock in sockets:
            listener = burst_listener(loop, sock, protocol, config.backlog)
            self.servers.append(listener if listener is not None else  # type: ignore[arg-type]
                                await loop.create_server(protocol, sock=sock, backlog=config.backlog))
        self.started = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, without its fixed 0.1 s pause for connections when none is
        open (a pytest process stops its servers at its end, every run)."""
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


def bind_socket(host: str, port: int) -> socket.socket:
    """A non-blocking listening-ready socket bound to ``host``:``port`` (0: any free port)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
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


def socket_url(host: str, sock: socket.socket) -> str:
    """The base URL a bound socket serves, e.g. ``http://127.0.0.1:8765``."""
    port = sock.getsockname()[1]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


class EmbeddedUvicorn:
    """uvicorn serving one ASGI app on a bound socket as a task of the running loop, with the
    front door's limits (head deadline, keep-alive, idle-first connection cap, JSON refusals:
    ``frontdoor``); shared by the replay server and the recorder."""

    def __init__(self, app: ASGIApp, *, graceful_s: int = 3,
                 header_timeout: float = HEADER_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, http: HttpParser = "auto") -> None:
        """``http``: which HTTP parser serves (``auto``: httptools when installed)."""
        self.config = uvicorn.Config(
            app, log_config=None, log_level="warning", access_log=False, lifespan="off",
            ws="none", timeout_graceful_shutdown=graceful_s, server_header=False,
            http=http_protocol(header_timeout, max_connections, http),
            timeout_keep_alive=KEEP_ALIVE_S, limit_concurrency=None,
            # h11's own buffer cap is only a backstop: the front door answers 431 first
            h11_max_incomplete_event_size=2 * MAX_HEAD_BYTES,
        )
        self._task: asyncio.Task[None] | None = None
        self._exit = asyncio.Event()
        self.port = 0
        """The bound port, once listening."""

    @property
    def running(self) -> bool:
        """Whether it serves now."""
        return self._task is not None

    async def listen(self, host: str, port: int) -> str:
        """Bind ``host``:``port`` (0: any free port), start serving on it and return the base
        URL (``port`` then holds the bound port); ``CannotListenError`` (exit 4 in every front
        end) when it cannot bind."""
        try:
            sock = bind_socket(host, port)
        except OSError as exc:
            raise cannot_listen(host, port, exc) from None
        await self.start(sock)
        self.port = sock.getsockname()[1]
        return socket_url(host, sock)

    async def start(self, sock: socket.socket) -> None:
        """Start serving on ``sock`` (closed again if uvicorn cannot start)."""
        self.config.load()
        server = _EmbeddedServer(self.config)
        server.lifespan = self.config.lifespan_class(self.config)
        try:
            await server.startup(sockets=[sock])
        except BaseException:
            sock.close()
            raise
        self._exit = asyncio.Event()
        self._task = asyncio.create_task(self._main(server, sock))

    async def _main(self, server: _EmbeddedServer, sock: socket.socket) -> None:
        counter = 0
        while not self._exit.is_set():
            await server.on_tick(counter)
            counter = (counter + 10) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), 1.0)
        await server.shutdown(sockets=[sock])

    async def stop(self) -> None:
        """Shut down cleanly (connections drain up to the graceful timeout)."""
        if self._task is None:
            return
        self._exit.set()
        task, self._task = self._task, None
        await task


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
        reload: ReloadSource | None = None,
        app: ASGIApp | None = None,
        sdk_retries: bool = False,
        allow_hosts: tuple[str, ...] | list[str] = (),
        header_timeout: float = HEADER_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        wire: WireOptions | None = None,
        http: HttpParser = "auto",
    ) -> None:
        """``allow_hosts``: Host / Origin names served besides loopback and ``host``;
        ``header_timeout``: seconds a connection may take to send a request head;
        ``max_connections``: connections beyond it are answered 503; ``wire``: how the
        dialects put what a provider's wires say two ways (``WireOptions``); ``http``: which
        HTTP parser uvicorn runs (``auto``: httptools when installed, else h11)."""
        self.engine = engine
        self.http: HttpParser = http
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.host = host
        self.port = port
        self._routes: Starlette | None = None
        self._scenario: ScenarioSource = scenario
        if app is None:
            app = self._routes = create_app(engine, scenario=scenario, providers=providers,
                                            reload=reload, sdk_retries=sdk_retries, wire=wire)
        self.app: ASGIApp = RequestGuard(app, host=host, allow_hosts=allow_hosts)
        self._runner: EmbeddedUvicorn | None = None
        self._url: str | None = None

    @classmethod
    def serving(cls, engine: ReplayEngine, options: ServeOptions, *, scenario: ScenarioSource,
                reload: ReloadSource | None = None,
                port: int | None = None) -> ReplayServer:
        """The server ``options`` ask for, serving ``engine`` (made by ``options.new_engine``):
        host, port (``port`` stands in, e.g. the port a recording just let go), provider
        catalog, SDK retries, allowed hosts and wire options. Every front end builds its
        server here, so none can drop an option."""
        return cls(engine, host=options.host, port=options.port if port is None else port,
                   providers=options.providers, scenario=scenario, reload=reload,
                   sdk_retries=options.sdk_retries, allow_hosts=options.allow_hosts,
                   wire=options.wire)

    @property
    def scenario(self) -> Scenario | None:
        """The scenario the scripts route reports (a provider is asked now)."""
        if self._routes is not None:
            return served_by(self._routes).scenario
        source = self._scenario
        return source() if callable(source) else source

    def set_scenario(self, scenario: ScenarioSource) -> None:
        """Tell the server the scenario it serves now, e.g. after ``engine.reload(s.scripts)``.

        Takes a Scenario, or a callable returning the current one (asked on every request).
        """
        self._scenario = scenario
        if self._routes is not None:
            set_app_scenario(self._routes, scenario)

    def set_overflow(self, run: str, handler: OverflowHandler | None,
                     dialects: frozenset[str] = frozenset()) -> None:
        """Who answers ``run``'s calls past the recording (``Served.set_overflow``)."""
        if self._routes is None:
            raise RuntimeError("this server serves an app of its own; set its overflow there")
        served_by(self._routes).set_overflow(run, handler, dialects)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765`` (once started)."""
        if self._url is None:
            raise RuntimeError("the replay server is not started")
        return self._url

    async def start(self) -> str:
        """Bind, start serving and return the base URL (the port is resolved when 0);
        ``CannotListenError`` when the port cannot be had."""
        if self._runner is not None and self._url is not None:
            return self._url
        # Pay one-time costs now, not in the first call: the placeholder scan and anyio
        # importing its asyncio backend (tens of milliseconds) on its first Event.
        self.engine.prepare()
        anyio.Event()
        runner = EmbeddedUvicorn(self.app, graceful_s=3, header_timeout=self.header_timeout,
                                 max_connections=self.max_connections, http=self.http)
        self._url = await runner.listen(self.host, self.port)
        self._runner, self.port = runner, runner.port
        return self._url

    async def stop(self) -> None:
        """Cancel every call in flight and shut down cleanly."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.engine.cancel_all()
        await runner.stop()

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()


SERVE_SCENARIO_DEFAULTS = ServeOptions(port=0)
"""``serve_scenario``'s options when none are given: every default, on a free port."""


@contextlib.asynccontextmanager
async def serve_scenario(path: str | Path, options: ServeOptions | None = None,
                         **changes: Any) -> AsyncIterator[ReplayServer]:
    """Load a scenario directory and serve it; yields the started server (``.url``, ``.engine``).

    ``options`` is the serve option set (default: ``SERVE_SCENARIO_DEFAULTS``, a free port);
    ``changes`` replace any of its fields by name (``port=0``, ``strict=True``,
    ``journal_limit=50``...), and ``pace_ms=N`` stands for ``pace=Pace("fixed", N)``. A name
    that is not an option raises ``TypeError``."""
    if "pace_ms" in changes:
        changes["pace"] = changes.get("pace") or Pace("fixed", changes["pace_ms"])
        del changes["pace_ms"]
    if "wire" in changes and changes["wire"] is None:
        del changes["wire"]
    if isinstance(changes.get("ready_dir"), str):
        changes["ready_dir"] = Path(changes["ready_dir"])
    chosen = dataclasses.replace(options or SERVE_SCENARIO_DEFAULTS, **changes)
    scenario = load_scenario(path)
    engine = chosen.new_engine(scenario.scripts)

    async def reload() -> Scenario:
        return await reload_scenario(path, engine)

    async with ReplayServer.serving(engine, chosen, scenario=scenario, reload=reload) as server:
        yield server


async def reload_scenario(path: str | Path, engine: ReplayEngine) -> Scenario:
    """Load ``path`` and stage its scripts in a worker thread, then swap them into ``engine`` at
    once on the loop: streams in flight go on while a big scenario loads (a ``reload`` source
    of ``ReplayServer``); ReplayError when it does not load (the engine keeps its scripts)."""
    def read() -> tuple[Scenario, StagedScripts]:
        fresh = load_scenario(path)
        return fresh, engine.stage(fresh.scripts)

    fresh, staged = await anyio.to_thread.run_sync(read)
    engine.reload(staged)
    return fresh
