"""What quitting records at the moment the user quits: the ``--verdict-file`` document says what
the printed verdict says (a call paused then is paused, not a client that went away)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from replay_engine import DEFAULT_RUN, run_verdict
from tests.app.apptools import BASIC_PROMPT, client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio


async def test_quitting_while_paused_says_paused_in_the_verdict_and_its_file() -> None:
    app = make_app(SAMPLES / "basic-chat", mode="call")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        call = asyncio.create_task(stream_text(sdk, BASIC_PROMPT))
        await until(app, lambda: any(b.status == "paused"
                                     for b in app.engine.state().bindings), "the pause")
        await pilot.press("q")
    with pytest.raises(openai.APIError):
        await call
    await sdk.close()
    printed = str(app.return_value)
    written = app.verdict_document
    assert written is not None
    assert "paused" in printed and "went away" not in printed
    assert any("paused" in p for p in written["problems"]), written["problems"]
    assert not any("went away" in p for p in written["problems"]), written["problems"]
    after = run_verdict(app.engine, DEFAULT_RUN)  # taken after the shutdown, as it was before
    assert after["problems"] != written["problems"]
