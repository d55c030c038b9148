"""The ``dsh_replay`` fixture's in-process HTTP clients (mixed into the fixture's object).

Kept apart from the transport so that loading the plugin loads nothing of it: only a test
that asks for a client does.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .servers import ServerPool


class InProcessClients:
    """``http_client`` and ``async_http_client`` of the ``dsh_replay`` fixture."""

    _pool: ServerPool

    def http_client(self, module: ModuleType | None = None, **kwargs: Any) -> Any:
        """An httpx2 ``Client`` (httpx's where httpx2 is not installed, or ``module``'s) whose
        requests to the replay servers are served in this process, with no socket; other
        addresses go out as usual."""
        from .transport import http_client

        pool = self._pool
        return http_client(pool.app_at, lambda: pool.loop.loop, module, **kwargs)

    def async_http_client(self, module: ModuleType | None = None, **kwargs: Any) -> Any:
        """``http_client`` for asyncio code: an ``AsyncClient`` of the same module."""
        from .transport import async_http_client

        pool = self._pool
        return async_http_client(pool.app_at, lambda: pool.loop.loop, module, **kwargs)
