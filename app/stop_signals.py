"""Quitting on SIGTERM and SIGHUP as on ``q``: the verdict printed (and ``--verdict-file``
written), a recording finished, the terminal given back. The default action killed the process
mid-frame: the screen stayed in the terminal's alternate buffer and nothing was said."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""What ends the debugger from outside (``kill``, ``timeout``, a closed terminal); Ctrl+C is a
key here, the terminal being in raw mode."""


def install(on_signal: Callable[[], Any]) -> Callable[[], None]:
    """Call ``on_signal`` in the running loop on each of STOP_SIGNALS; returns the undo."""
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal)

    def remove() -> None:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)

    return remove
