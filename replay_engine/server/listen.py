"""The listening flags of every front end (``--host``, ``--port``, ``--allow-host``), checked
before anything is loaded as usage errors (exit 2), and the off-loopback warning.

A port outside 0..65535 would otherwise be wrapped by the socket layer onto another port,
and an address that is not this machine's would only fail at bind time with a message about
the port.
"""

from __future__ import annotations

import argparse
import errno
import socket

from ..errors import CannotListenError
from .guard import is_loopback

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "add_listen_arguments",
    "host_arg",
    "loopback_warning",
    "port_arg",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def port_arg(text: str) -> int:
    """``--port``: an integer 0..65535 (0 picks a free port)."""
    try:
        port = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0..65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{port} is outside 0..65535 (0 picks a free port)")
    return port


def host_arg(text: str) -> str:
    """``--host``: a name or address this machine can listen on (checked by binding port 0)."""
    try:
        infos = socket.getaddrinfo(text, 0, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise argparse.ArgumentTypeError(
            f"{text!r} does not resolve to an address ({reason}); give an address of this "
            "machine, e.g. 127.0.0.1") from None
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRNOTAVAIL:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not an address of this machine; listen on one of its own "
                "addresses, e.g. 127.0.0.1 (loopback) or 0.0.0.0 (every interface)") from None
        raise argparse.ArgumentTypeError(f"cannot listen on {text!r} ({exc.strerror})") from None
    return text


def allow_host_arg(text: str) -> str:
    """``--allow-host``: a host name (what a ``Host`` or ``Origin`` header names), or ``*``."""
    name = text.strip()
    if not name or any(c.isspace() or c in "/@?#" or not c.isprintable() for c in name):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a host name; give the name clients put in their Host header "
            "(e.g. replay.internal, 10.0.0.5) or '*' for any")
    return name


def add_listen_arguments(parser: argparse.ArgumentParser, *, allow_hosts: bool = True) -> None:
    """``--host``, ``--port`` (and ``--allow-host``): where a front end listens, whom it answers."""
    parser.add_argument("--host", default=DEFAULT_HOST, type=host_arg,
                        help=f"address to listen on (default {DEFAULT_HOST}, loopback)")
    parser.add_argument("--port", type=port_arg, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")
    if not allow_hosts:
        return
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        type=allow_host_arg,
                        help="also answer requests whose Host or Origin names NAME (repeatable; "
                        "'*' for any); by default only loopback names and the --host address "
                        "are served")


SERVING_EXPOSES = "drive the replay and read the recorded sessions"
RECORDING_EXPOSES = "make calls with the keys your agent sends"


def loopback_warning(host: str, exposes: str = SERVING_EXPOSES, *,
                     allow_hosts: bool = True) -> str | None:
    """The warning every front end gives when it listens off loopback (None on loopback):
    what anyone who reaches it can do, and which Host values are answered."""
    if is_loopback(host):
        return None
    text = (f"warning: listening on {host}, not loopback: anyone who can reach this address "
            f"can {exposes}. Requests are answered only when their Host names a loopback "
            "address or this --host")
    if allow_hosts:
        text += "; add --allow-host NAME for the names clients use to reach it"
    return text + "."


def cannot_listen(host: str, port: int, exc: OSError) -> CannotListenError:
    """The error of a server that could not listen, for every front end (exit 4 in each)."""
    return CannotListenError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick "
                             "another --port (0 picks a free one).")
