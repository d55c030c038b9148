"""Checking ``--host`` and ``--port`` before anything is loaded, as usage errors (exit 2).

A port outside 0..65535 would otherwise be wrapped by the socket layer onto another port,
and an address that is not this machine's would only fail at bind time with a message about
the port.
"""

from __future__ import annotations

import argparse
import errno
import socket

__all__ = ["host_arg", "port_arg"]


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
