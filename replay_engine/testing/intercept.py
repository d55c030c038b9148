"""Every httpx client of the test's process is served in process when it calls one of the
plugin's replay servers: ``HTTPTransport.handle_request`` and
``AsyncHTTPTransport.handle_async_request`` of httpx and httpx2 are wrapped (as respx and vcrpy
wrap them) so that a request whose address is a plugin server goes to its app on the servers'
loop, with no socket; every other request, and every client in another process, goes over the
network as before. A test that builds its own SDK client with the base URL the plugin gives
thus costs what a cassette costs, without changing. ``--dsh-replay-socket`` (or the ini key
``dsh_replay_socket``) turns it off.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .transport import Resolve, serve_async, serve_sync

MODULES = ("httpx", "httpx2")
"""The httpx-like modules whose transports are wrapped (openai and anthropic build on httpx2
today, most other clients on httpx)."""


def _on_asyncio() -> bool:
    """The running async library is asyncio (a trio client goes over the network)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Interception:
    """The wrapped transports of one pytest session; ``remove`` restores the originals."""

    def __init__(self, resolve: Resolve, loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.resolve = resolve
        self.loop = loop
        self._undo: list[tuple[type, str, Any]] = []

    def app_for(self, request: Any) -> Any:
        """The app of the plugin server ``request`` is for (None: not one of ours)."""
        url = request.url
        return self.resolve(url.host, url.port or (443 if url.scheme == "https" else 80))

    def install(self) -> None:
        """Wrap the transports of every installed module of ``MODULES``."""
        for name in MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            self._wrap_sync(module)
            self._wrap_async(module)

    def remove(self) -> None:
        """Put the original methods back."""
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()

    def _wrap_sync(self, module: ModuleType) -> None:
        owner = module.HTTPTransport
        original = owner.__dict__["handle_request"]
        app_for, loop = self.app_for, self.loop

        def handle_request(transport: Any, request: Any) -> Any:
            app = app_for(request)
            if app is None:
                return original(transport, request)
            return serve_sync(module, app, request, loop())

        self._undo.append((owner, "handle_request", original))
        owner.handle_request = handle_request

    def _wrap_async(self, module: ModuleType) -> None:
        owner = module.AsyncHTTPTransport
        original = owner.__dict__["handle_async_request"]
        app_for, loop = self.app_for, self.loop

        async def handle_async_request(transport: Any, request: Any) -> Any:
            app = app_for(request)
            if app is None or not _on_asyncio():
                return await original(transport, request)
            return await serve_async(module, app, request, loop())

        self._undo.append((owner, "handle_async_request", original))
        owner.handle_async_request = handle_async_request
