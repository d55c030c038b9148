"""What every serving command does around its server: stop on SIGINT or SIGTERM, and announce
the base URL (atomically into ``--url-file``, then as stdout's first line)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError
from ..files import atomic_write

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event the running loop sets on SIGINT or SIGTERM, for as long as the block runs."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def announce(url: str, url_file: Path | None) -> None:
    """Write ``url`` to ``url_file`` (whole or not at all), then print it."""
    if url_file is not None:
        try:
            atomic_write(url_file, (url + "\n").encode("utf-8"))
        except OSError as exc:
            raise InputError(f"--url-file {url_file}: cannot write the URL "
                             f"({exc.strerror or exc}); give a file in a writable directory.",
                             file=str(url_file)) from None
    print(url, flush=True)
