"""In-process HTTP for replayed tests: httpx clients whose requests to this process's replay
servers are handed to the replay app on the servers' loop, with no socket, connection or
HTTP parsing in between; requests to any other address go over the network as usual.

The app answers exactly as it does over a socket (status, headers and body bytes, each
body write arriving whole); a client that stops reading (a closed response, a read timeout, a cancelled
task) disconnects as a closed connection would, so a hanging call ends as cancelled.
Clients come from ``httpx2`` where it is installed (today's openai and anthropic SDKs are
built on it), else from ``httpx``; given a module, from that one (the two share one API).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import queue
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

from starlette.types import ASGIApp, Message

from ..server.frontdoor import internal_error_body

LOG = logging.getLogger(__name__)

Resolve = Callable[[str, int], ASGIApp | None]
"""The app serving ``host``:``port`` in this process (None: that address is not ours)."""
Deliver = Callable[["list[Message] | Ended"], None]


class Ended:
    """The app returned (``error`` None) or raised ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class Exchange:
    """One request served by the app on the servers' loop. What the app sends reaches the
    client through ``deliver`` (called on that loop), the writes of one turn of the loop
    together (a head with the body writes that follow it at once, an answer served without a
    wait in one delivery), so the client wakes once per turn, never mid-write."""

    def __init__(self, app: ASGIApp, scope: dict[str, Any], body: bytes,
                 loop: asyncio.AbstractEventLoop, deliver: Deliver) -> None:
        self.app = app
        self.scope = scope
        self.body: bytes | None = body
        self.loop = loop
        self.deliver = deliver
        self.done = False
        """The app has returned (set on the servers' loop)."""
        self._gone = asyncio.Event()  # bound to the servers' loop when first awaited there
        self._pending: list[Message] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Run the app on the servers' loop (called from the client's thread)."""
        self.loop.call_soon_threadsafe(self._spawn)

    def disconnect(self) -> None:
        """The client went away (called from the client's thread): the app's next
        ``receive`` says so, as it would for a closed connection."""
        if not self.done:
            self.loop.call_soon_threadsafe(self._gone.set)

    def _spawn(self) -> None:
        self._task = self.loop.create_task(self._run())

    async def _run(self) -> None:
        error: BaseException | None = None
        try:
            await self.app(self.scope, self._receive, self._send)
        except BaseException as exc:  # reported to the client; cancellation is not an app bug
            error = exc
            if not isinstance(exc, asyncio.CancelledError):
                LOG.error("the replay app failed on %s %s", self.scope["method"],
                          self.scope["path"], exc_info=exc)
        finally:
            self.done = True
            self._flush()
            self.deliver(Ended(error))

    async def _receive(self) -> Message:
        body, self.body = self.body, None
        if body is not None:
            return {"type": "http.request", "body": body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if self._gone.is_set():
            return  # the client is gone: what it would have read goes nowhere
        pending = self._pending
        if not pending:
            self.loop.call_soon(self._flush)  # once the app waits, or its turn ends
        pending.append(message)
        if message["type"] != "http.response.start" and not message.get("more_body", False):
            self._gone.set()  # a complete answer: the app's next receive is a disconnect
            self._flush()

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            self.deliver(pending)


def asgi_scope(request: Any) -> dict[str, Any]:
    """The ASGI scope uvicorn would give the app for an httpx ``request``."""
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)
    raw_path, _, query = url.raw_path.partition(b"?")
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": request.method, "scheme": url.scheme,
        "path": url.path, "raw_path": raw_path, "query_string": query, "root_path": "",
        "headers": [(key.lower(), value) for key, value in request.headers.raw],
        "server": (url.host, port), "client": ("127.0.0.1", 0), "state": {},
    }


class Answer:
    """The client's side of one exchange: the messages as they arrive, read with the
    request's read timeout, turned into what httpx raises for a broken connection."""

    def __init__(self, module: ModuleType, request: Any, exchange: Exchange) -> None:
        self.module = module
        self.request = request
        self.exchange = exchange
        self.timeout: float | None = request.extensions.get("timeout", {}).get("read")
        self.complete = False

    def wait(self, inbox: queue.SimpleQueue[Any]) -> list[Message] | Ended:
        """The next delivery for a sync client (ReadTimeout after the read timeout; an
        interrupt disconnects as a closed connection would)."""
        try:
            item: list[Message] | Ended = inbox.get(timeout=self.timeout)
        except queue.Empty:
            raise self.timed_out() from None
        except BaseException:
            self.close()
            raise
        return item

    def timed_out(self) -> Exception:
        """What httpx raises when no byte came within the read timeout."""
        self.close()
        exc: Exception = self.module.ReadTimeout(
            f"the replay server sent nothing for {self.timeout:g} s", request=self.request)
        return exc

    def head(self, item: list[Message] | Ended) -> tuple[Message, list[bytes]]:
        """The response head and any body bytes that came with it; an app that failed
        before answering is the JSON 500 the server's front door answers for it."""
        if isinstance(item, Ended):
            if item.error is None or isinstance(item.error, asyncio.CancelledError):
                raise self.broken("the replay server ended without answering", item.error)
            self.complete = True
            body = internal_error_body()
            return {"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode())]}, [body]
        head, *rest = item
        return head, self.chunks(rest)

    def chunks(self, messages: list[Message]) -> list[bytes]:
        """The body bytes of ``messages`` (marks the answer complete at its last write)."""
        parts = []
        for message in messages:
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.complete = True
        return parts

    def broken(self, what: str, error: BaseException | None) -> Exception:
        """What httpx raises when a server drops the connection mid-answer."""
        self.close()
        exc: Exception = self.module.RemoteProtocolError(what, request=self.request)
        exc.__cause__ = error
        return exc

    def response(self, head: Message, stream: Any) -> Any:
        """The httpx response of ``head`` whose body is ``stream``."""
        return self.module.Response(
            head["status"], headers=list(head.get("headers", [])), stream=stream,
            request=self.request, extensions={"http_version": b"HTTP/1.1"})

    def close(self) -> None:
        """The client is done reading: an unfinished answer is disconnected."""
        if not self.complete:
            self.complete = True
            self.exchange.disconnect()


class SyncBody:
    """The body of an answer read by a sync client (mixed into the module's SyncByteStream)."""

    def __init__(self, answer: Answer, first: list[bytes], inbox: queue.SimpleQueue[Any]) -> None:
        self.answer = answer
        self.first = first
        self.inbox = inbox

    def __iter__(self) -> Iterator[bytes]:
        answer = self.answer
        yield from (part for part in self.first if part)
        while not answer.complete:
            item = answer.wait(self.inbox)
            if isinstance(item, Ended):
                raise answer.broken("the replay server ended the answer early", item.error)
            yield from (part for part in answer.chunks(item) if part)

    def close(self) -> None:
        self.answer.close()


class AsyncBody:
    """The body of an answer read by an async client (mixed into the module's AsyncByteStream)."""

    def __init__(self, answer: Answer, first: list[bytes], inbox: asyncio.Queue[Any]) -> None:
        self.answer = answer
        self.first = first
        self.inbox = inbox

    async def __aiter__(self) -> AsyncIterator[bytes]:
        answer = self.answer
        for part in self.first:
            if part:
                yield part
        try:
            while not answer.complete:
                try:
                    async with asyncio.timeout(answer.timeout):
                        item = await self.inbox.get()
                except TimeoutError:
                    raise answer.timed_out() from None
                if isinstance(item, Ended):
                    raise answer.broken("the replay server ended the answer early", item.error)
                for part in answer.chunks(item):
                    if part:
                        yield part
        except BaseException:
            answer.close()
            raise

    async def aclose(self) -> None:
        self.answer.close()


class InProcess:
    """What the sync and async transports share: where requests go, and how they start."""

    def __init__(self, module: ModuleType, resolve: Resolve,
                 loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.module = module
        self.resolve = resolve
        self.loop = loop
        self._network: Any = None

    def app_for(self, request: Any) -> ASGIApp | None:
        """The replay app ``request`` goes to, or None when it goes to the network."""
        url = request.url
        return self.resolve(url.host, url.port or (443 if url.scheme == "https" else 80))

    def network(self, factory: str) -> Any:
        """The module's own transport, made on first use (most clients never need it)."""
        if self._network is None:
            self._network = getattr(self.module, factory)()
        return self._network


def serve_sync(module: ModuleType, app: ASGIApp, request: Any,
               loop: asyncio.AbstractEventLoop) -> Any:
    """``module``'s response to ``request``, answered by ``app`` on ``loop`` (a sync client's
    thread waits for it)."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    exchange = Exchange(app, asgi_scope(request), request.read(), loop, inbox.put)
    answer = Answer(module, request, exchange)
    exchange.start()
    head, first = answer.head(answer.wait(inbox))
    return answer.response(head, _flavour(module).sync_body(answer, first, inbox))


async def serve_async(module: ModuleType, app: ASGIApp, request: Any,
                      loop: asyncio.AbstractEventLoop) -> Any:
    """``serve_sync`` for a client on an asyncio loop (not ``loop``, the servers' own)."""
    mine = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    def deliver(item: list[Message] | Ended) -> None:
        with contextlib.suppress(RuntimeError):  # the client's loop is closed: nobody reads
            mine.call_soon_threadsafe(inbox.put_nowait, item)

    exchange = Exchange(app, asgi_scope(request), await request.aread(), loop, deliver)
    answer = Answer(module, request, exchange)
    exchange.start()
    try:
        async with asyncio.timeout(answer.timeout):
            item = await inbox.get()
    except TimeoutError:
        raise answer.timed_out() from None
    except BaseException:
        answer.close()  # a cancelled task leaves as a closed connection would
        raise
    head, first = answer.head(item)
    return answer.response(head, _flavour(module).async_body(answer, first, inbox))


class SyncTransport(InProcess):
    """A sync httpx transport (mixed into the module's BaseTransport)."""

    def handle_request(self, request: Any) -> Any:
        app = self.app_for(request)
        if app is None:
            return self.network("HTTPTransport").handle_request(request)
        return serve_sync(self.module, app, request, self.loop())

    def close(self) -> None:
        if self._network is not None:
            self._network.close()


class AsyncTransport(InProcess):
    """An async httpx transport for clients on an asyncio loop (mixed into the module's
    AsyncBaseTransport)."""

    async def handle_async_request(self, request: Any) -> Any:
        app = self.app_for(request)
        if app is None:
            return await self.network("AsyncHTTPTransport").handle_async_request(request)
        return await serve_async(self.module, app, request, self.loop())

    async def aclose(self) -> None:
        if self._network is not None:
            await self._network.aclose()


class _Flavour:
    """The transport and stream classes of one httpx-like module."""

    def __init__(self, module: ModuleType) -> None:
        self.sync_transport = type("ReplayTransport", (SyncTransport, module.BaseTransport), {})
        self.async_transport = type("AsyncReplayTransport",
                                    (AsyncTransport, module.AsyncBaseTransport), {})
        self.sync_body = type("ReplayBody", (SyncBody, module.SyncByteStream), {})
        self.async_body = type("AsyncReplayBody", (AsyncBody, module.AsyncByteStream), {})


@functools.cache
def _flavour(module: ModuleType) -> _Flavour:
    return _Flavour(module)


def default_module() -> ModuleType:
    """``httpx2`` where it is installed, else ``httpx``."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


def http_client(resolve: Resolve, loop: Callable[[], asyncio.AbstractEventLoop],
                module: ModuleType | None = None, **kwargs: Any) -> Any:
    """A sync ``Client`` of ``module`` (``default_module()`` if None) serving the addresses
    ``resolve`` knows in process; ``kwargs`` go to the client."""
    module = module or default_module()
    transport = _flavour(module).sync_transport(module, resolve, loop)
    return module.Client(transport=transport, **kwargs)


def async_http_client(resolve: Resolve, loop: Callable[[], asyncio.AbstractEventLoop],
                      module: ModuleType | None = None, **kwargs: Any) -> Any:
    """An ``AsyncClient`` of ``module`` (``default_module()`` if None), for use on an asyncio
    loop, serving the addresses ``resolve`` knows in process; ``kwargs`` go to the client."""
    module = module or default_module()
    transport = _flavour(module).async_transport(module, resolve, loop)
    return module.AsyncClient(transport=transport, **kwargs)
