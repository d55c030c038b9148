"""The debugger steers the run it follows: its step keys switch that run's mode only, so an
agent on another run keeps streaming."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.app.apptools import make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio


def _run_client(url: str, run: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/runs/{run}/v1", api_key="replay", max_retries=0)


async def test_step_mode_keys_hold_the_followed_run_only() -> None:
    app = make_app(SAMPLES / "basic-chat")
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None
        a, b = _run_client(app.url, "A"), _run_client(app.url, "B")
        try:
            await stream_text(a)  # run A binds first: the screen follows it
            await until(app, lambda: app.state.run_name == "A", "following run A")
            await pilot.press("2")
            assert app.engine.mode_of("A") == "call"
            assert app.engine.mode == "run" and app.engine.mode_of("B") == "run"
            held = asyncio.create_task(stream_text(a))
            await until(app, lambda: app.engine.paused_sessions("A") == [None], "A to pause")
            await asyncio.wait_for(stream_text(b), 10)  # run B is not held
            await asyncio.wait_for(stream_text(b), 10)
            assert not held.done()
            await pilot.press("c")
            await asyncio.wait_for(held, 10)
            assert app.engine.mode_of("A") == "run"
        finally:
            await a.close()
            await b.close()
        await pilot.press("q")
