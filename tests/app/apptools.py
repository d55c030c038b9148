"""Helpers for the debugger tests: a factory for the real app, and waits on its repaints."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import openai
from dsh_replay_tui.app import AppOptions, ReplayApp

from replay_engine.engine import Pace

LIMIT_S = 10.0
"""A bound on waiting for the app; never a timing assertion."""
FIXED_URL = "http://127.0.0.1:8765"


def make_app(scenario: Path, *, watch: bool = False, serve: bool = True, ready_dir: Path | None = None,
             pace: Pace | None = None, url_label: str | None = None, **options: Any) -> ReplayApp:
    """The real debugger on a free port (``options``: any other AppOptions field)."""
    return ReplayApp(AppOptions(**{"port": 0, **options}, scenario=scenario, watch=watch,
                                serve=serve, ready_dir=ready_dir, pace=pace or Pace(),
                                url_label=url_label))


def copy_sample(samples: Path, name: str, dest: Path) -> Path:
    """A private copy of a sample scenario (tests that edit files)."""
    target = dest / name
    shutil.copytree(samples / name, target)
    return target


async def until(app: ReplayApp, predicate: Callable[[], Any], what: str = "condition") -> None:
    """Wait through the app's repaints until ``predicate()`` holds (bounded by LIMIT_S)."""
    try:
        with anyio.fail_after(LIMIT_S):
            while not predicate():
                await app.next_flush()
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}; log: {app.live_pane.lines[-8:]}") from None


def client(app: ReplayApp, session: str | None = None) -> openai.AsyncOpenAI:
    """The openai SDK pointed at the app's embedded server."""
    assert app.url is not None
    headers = {"X-Session-Id": session} if session is not None else {}
    return openai.AsyncOpenAI(base_url=app.url + "/v1", api_key="replay", default_headers=headers,
                              max_retries=0)


async def stream_text(sdk: openai.AsyncOpenAI, messages: list[dict[str, Any]] | None = None) -> str:
    """Stream one call and return its text (raises the SDK's error on failure)."""
    stream = await sdk.chat.completions.create(
        model="replay", messages=messages or [{"role": "user", "content": "hi"}],  # type: ignore[arg-type]
        stream=True)
    out: list[str] = []
    try:
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                out.append(chunk.choices[0].delta.content)
    finally:
        await stream.close()
    return "".join(out)


BASIC_PROMPT = [{"role": "user", "content": "What files are in the workspace? Then say hello."}]
"""basic-chat's recorded first request; ``BASIC_TOOL_TURN`` is its second, with the tool result."""
BASIC_TOOL_TURN = [
    *BASIC_PROMPT,
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_ls_1", "type": "function",
        "function": {"name": "bash", "arguments": '{"command":"ls"}'}}]},
    {"role": "tool", "tool_call_id": "call_ls_1", "content": "README.md\nsrc\n"},
]
