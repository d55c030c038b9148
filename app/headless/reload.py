"""Hot reload: watch a scenario directory and describe what a reload changed.

No Textual here: the app runs ``watch_scenario`` in a worker and reacts to its callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from watchfiles import awatch

from replay_engine import is_scenario_file

DEBOUNCE_MS = 120


REPLACED = "(the directory was replaced)"
"""What ``on_change`` is told when the scenario directory itself was replaced (renamed over, as
safe re-recording does) or removed and made again: everything in it may have changed."""

FilesState = dict[str, tuple[int, int, int]]


def files_state(root: Path) -> FilesState | None:
    """The scenario files of ``root`` as the OS has them (inode, size, mtime; the directory's
    own inode under ``""``), to tell whether anything changed since; None: no directory."""
    try:
        state: FilesState = {"": (root.stat().st_ino, 0, 0)}
        with os.scandir(root) as entries:
            for entry in entries:
                if is_scenario_file(entry.name):
                    info = entry.stat()
                    state[entry.name] = (info.st_ino, info.st_size, info.st_mtime_ns)
    except OSError:
        return None
    return state


async def watch_scenario(
    root: Path,
    on_change: Callable[[list[str]], Awaitable[None]],
    *,
    debounce_ms: int = DEBOUNCE_MS,
    stop_event: anyio.Event | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Call ``on_change(file names)`` after each debounced burst of changes to scenario files;
    ``[REPLACED]`` when the directory itself was replaced (the watch then moves to the new one).

    ``on_ready`` is called each time the OS watch is in place (changes before it are not seen).
    """
    root = root.absolute()
    while stop_event is None or not stop_event.is_set():
        if not root.is_dir() and not await wait_for_directory(
                root, stop_event=stop_event or anyio.Event(), debounce_ms=debounce_ms):
            return
        if not await _watch_one(root, on_change, debounce_ms, stop_event, on_ready):
            return
        await on_change([REPLACED])


async def _watch_one(root: Path, on_change: Callable[[list[str]], Awaitable[None]],
                     debounce_ms: int, stop_event: anyio.Event | None,
                     on_ready: Callable[[], None] | None) -> bool:
    """Watch the directory ``root`` names now (and its parent, for ``root`` itself) until it
    is replaced (True) or the watch stops (False)."""
    inode = root.stat().st_ino
    paths = [root] if root.parent == root else [root, root.parent]
    changes_of = awatch(*paths, debounce=debounce_ms, step=20, recursive=False,
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
                return False
            if any(Path(p) == root for _, p in changes) and _inode(root) != inode:
                return True
            names = sorted({Path(p).name for _, p in changes
                            if Path(p).parent == root and is_scenario_file(Path(p).name)})
            if names:
                await on_change(names)
            pending = asyncio.ensure_future(anext(changes_of))
    finally:
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await pending
        await changes_of.aclose()


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


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
