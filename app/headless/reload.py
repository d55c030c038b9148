"""Hot reload: watch a scenario directory and describe what a reload changed.

No Textual here: the app runs ``watch_scenario`` in a worker and reacts to its callback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from watchfiles import awatch

from replay_engine import is_scenario_file

DEBOUNCE_MS = 120


async def watch_scenario(
    root: Path,
    on_change: Callable[[list[str]], Awaitable[None]],
    *,
    debounce_ms: int = DEBOUNCE_MS,
    stop_event: anyio.Event | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Call ``on_change(file names)`` after each debounced burst of changes to scenario files.

    ``on_ready`` is called once the OS watch is in place (changes before it are not seen).
    """
    changes_of = awatch(root, debounce=debounce_ms, step=20, recursive=False,
                        stop_event=stop_event, rust_timeout=500)
    pending = asyncio.ensure_future(anext(changes_of))
    await asyncio.sleep(0)  # one step of the generator: it registers the watch, then waits
    if on_ready is not None:
        on_ready()
    try:
        while True:
            try:
                changes = await pending
            except StopAsyncIteration:
                return
            names = sorted({Path(p).name for _, p in changes if is_scenario_file(Path(p).name)})
            if names:
                await on_change(names)
            pending = asyncio.ensure_future(anext(changes_of))
    finally:
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await pending
        await changes_of.aclose()


async def wait_for_directory(
    root: Path,
    *,
    stop_event: anyio.Event,
    on_ready: Callable[[Path], None] | None = None,
    debounce_ms: int = DEBOUNCE_MS,
) -> bool:
    """Wait until ``root`` is a directory, watching its nearest existing ancestor (again one
    level down as each parent appears). Returns False when ``stop_event`` ends the wait.

    ``on_ready(ancestor)`` is called each time a watch is in place.
    """
    root = root.absolute()
    while not root.is_dir():
        ancestor = next((p for p in root.parents if p.is_dir()), None)
        if ancestor is None or stop_event.is_set():
            return False
        changes_of = awatch(ancestor, debounce=debounce_ms, step=20, recursive=False,
                            stop_event=stop_event, rust_timeout=500)
        pending = asyncio.ensure_future(anext(changes_of))
        await asyncio.sleep(0)  # one step of the generator: it registers the watch, then waits
        if on_ready is not None:
            on_ready(ancestor)
        try:
            # Look again: the directory may have appeared before the watch was in place.
            if not (root.is_dir() or next(p for p in root.parents if p.is_dir()) != ancestor):
                try:
                    await pending
                except StopAsyncIteration:
                    return False
        finally:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
            await changes_of.aclose()
    return True


def describe_changes(changes: list[dict[str, Any]], names: list[str]) -> str:
    """One line per script that changed: calls added / removed / changed."""
    if not changes:
        return "reloaded: no call changed"
    parts = []
    for change in changes:
        i = change["script"]
        name = names[i] if i < len(names) else "(removed script)"
        parts.append(f"[{i}] {name or '(no id)'}: +{change['added']} added, "
                     f"-{change['removed']} removed, ~{change['changed']} changed")
    return "reloaded: " + "; ".join(parts)
