"""The front door of every server this project runs: who may talk to it and what ids it takes.

``RequestGuard`` wraps an ASGI app and refuses, before any route runs:

- a ``Host`` that is not loopback, the listening address or an allowed name (a web page
  that rebinds its own DNS name to 127.0.0.1 would otherwise read the recorded sessions);
- an ``Origin`` that is not one of those hosts (a page on another site posting to the
  server: resetting runs, consuming calls, switching modes);
- a ``POST`` whose ``Content-Type`` is given and is not JSON (the only bodies a browser
  can send cross-site without asking first are text/plain and form encodings);
- a run or session id in the path outside the printable set or longer than ``MAX_ID``
  (such ids end up in log lines and the verdict); the model routes hold the ``X-Session-Id``
  header to the same rule (``id_problem``).

A refusal quotes the value it refused capped (``shown``): a 60 KB header gets no 60 KB answer.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..safe_text import printable, shown

__all__ = ["INVALID_ID", "MAX_ID", "RequestGuard", "bad_id", "id_problem", "printable"]

MAX_ID = 128
"""Longest run or session id the server takes in a path."""
_ID = re.compile(rf"[!-~]{{1,{MAX_ID}}}")
_PATH_IDS = re.compile(r"^(?:/runs/(?P<run>[^/]*))?(?:/sessions/(?P<session>[^/]*))?")
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "::1"})


INVALID_ID = "INVALID_ID"
"""Code of the 400 a run or session id outside the rule gets (path or ``X-Session-Id``)."""


def bad_id(value: str) -> bool:
    """True when ``value`` is not a run/session id the server accepts (printable ASCII, no
    space, 1..MAX_ID characters)."""
    return _ID.fullmatch(value) is None


def id_problem(what: str, value: str, where: str = "") -> str | None:
    """Why ``value`` is no ``what`` id (``run``, ``session``) the server takes, or None: the one
    rule for ids in paths and in the ``X-Session-Id`` header (``where`` names the place)."""
    if not bad_id(value):
        return None
    return (f"{what} id {shown(value, MAX_ID)}{where} is not accepted: use 1 to {MAX_ID} "
            "printable ASCII characters, no spaces or control characters")


def is_loopback(host: str) -> bool:
    """True when ``host`` names only the local machine (loopback names and addresses)."""
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _hostname(authority: str) -> str:
    """The host part of a ``Host`` value (``[::1]:8765`` -> ``::1``, ``a:1`` -> ``a``)."""
    authority = authority.strip()
    if authority.startswith("["):
        end = authority.find("]")
        return authority[1:end] if end > 0 else authority
    if authority.count(":") == 1:
        return authority.split(":", 1)[0]
    return authority


def _refuse(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error",
                                   "code": code}}, status_code=status)


class RequestGuard:
    """ASGI middleware refusing foreign hosts and origins, non-JSON posts and bad path ids."""

    def __init__(self, app: ASGIApp, *, host: str = "127.0.0.1",
                 allow_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = {h.lower().strip("[]") for h in (host, *allow_hosts) if h}
        self.any_host = "*" in self.allowed

    def host_allowed(self, name: str) -> bool:
        """Whether a request naming ``name`` as its host (or origin host) is served."""
        name = name.lower()
        return self.any_host or is_loopback(name) or name in self.allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def check(self, scope: Scope) -> JSONResponse | None:
        """The refusal of a request, or None when it may go on."""
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), value)
        host = headers.get(b"host")
        if host is not None:
            name = _hostname(host.decode("latin-1"))
            if not self.host_allowed(name):
                return _refuse(403, "HOST_NOT_ALLOWED",
                               f"Host {shown(name)} is not served: this server answers "
                               "loopback names and its listening address only; start it with "
                               "--allow-host NAME to accept another")
        origin = headers.get(b"origin")
        if origin is not None:
            text = origin.decode("latin-1").strip()
            parts = urlsplit(text)
            if parts.scheme not in ("http", "https") or not parts.hostname \
                    or not self.host_allowed(parts.hostname):
                return _refuse(403, "ORIGIN_NOT_ALLOWED",
                               f"requests from web pages of origin {shown(text)} are "
                               "refused; start the server with --allow-host NAME to accept "
                               "that origin's host")
        if scope.get("method") == "POST":
            kind = headers.get(b"content-type")
            if kind is not None:
                media = kind.decode("latin-1").split(";", 1)[0].strip().lower()
                if media != "application/json" and not media.endswith("+json"):
                    return _refuse(415, "UNSUPPORTED_MEDIA_TYPE",
                                   f"POST bodies must be application/json, got {shown(media)}")
        match = _PATH_IDS.match(scope.get("path", ""))
        if match is not None:
            for what in ("run", "session"):
                value = match.group(what)
                problem = id_problem(what, value) if value is not None else None
                if problem is not None:
                    return _refuse(400, INVALID_ID, problem)
        return None
