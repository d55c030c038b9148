"""Where the recorder sends a call: the upstream base URL checked, and each route's path on it."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import ConfigError


def check_upstream(upstream: str) -> str:
    """The upstream base URL without a trailing slash; ConfigError unless http(s) with a host."""
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--upstream {upstream!r}: give the provider's base URL, e.g. "
                          "https://api.deepseek.com or http://127.0.0.1:8765 (http or https).")
    return upstream.rstrip("/")


def upstream_url(base: str, path: str, query: str) -> str:
    """Where a call of ``path`` goes: ``base + path``, not doubling a ``/v1`` the base ends with."""
    if base.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return base + path + (f"?{query}" if query else "")


def forwarded_path(route: str, params: dict[str, Any]) -> str:
    """The upstream path of a model route: its template (``/v1beta/models/{model}:...``) with
    the request's own values, without the recorder's ``/runs`` or ``/sessions`` prefix."""
    if "{" not in route:
        return route
    return route.format_map({k: quote(str(v), safe="") for k, v in params.items()})
