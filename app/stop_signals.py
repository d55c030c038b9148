"""Quitting on SIGTERM as on ``q``: the verdict printed (and ``--verdict-file`` written), a
recording finished, the terminal given back. The default action killed the process mid-frame:
the screen stayed in the terminal's alternate buffer and nothing was said.

SIGHUP keeps its default: it comes when the terminal is gone, and quitting through the screen
then waits forever on a terminal that cannot be written (the process would outlive it)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (signal.SIGTERM,)
"""What ends the debugger from outside as ``q`` does (``kill``, ``timeout``); Ctrl+C is a key
here, the terminal being in raw mode."""


def install(on_signal: Callable[[], Any]) -> Callable[[], None]:
    """Call ``on_signal`` in the running loop on each of STOP_SIGNALS; returns the undo."""
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal)

    def remove() -> None:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)

    return remove
