"""What the debugger makes of its start options and of quitting: breakpoints on calls the
scenario lacks are removed with a message; the ``--verdict-file`` document says what the printed
verdict says (a call paused when quitting is paused, not a client that went away)."""

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


async def test_breakpoints_on_calls_the_scenario_lacks_are_removed_with_a_message() -> None:
    app = make_app(SAMPLES / "basic-chat", breaks=((5, 0), (0, 99), (0, 1)))
    async with app.run_test(size=(80, 24)):
        await app.ready.wait()
        assert app.engine.breakpoints == frozenset({(0, 1)})
        lines = app.live_pane.lines
        assert any(x.startswith("breakpoint 5:0 removed: no such call (the scenario has 1 "
                                "script(s)") for x in lines), lines
        assert any(x.startswith("breakpoint 0:99 removed: no such call (script [0] has 2 "
                                "call(s))") for x in lines), lines
        assert "breakpoints 1" in app.header.text.plain
        # One settings line, with the count that holds (it read 2, then 1, on two lines).
        await until(app, lambda: any(x.startswith("settings:") for x in app.live_pane.lines))
        settings = [x for x in app.live_pane.lines if x.startswith("settings:")]
        assert settings == ["settings: mode run, pace no delay, 1 breakpoint(s)"], lines


async def test_each_n_of_a_burst_releases_one_chunk() -> None:
    app = make_app(SAMPLES / "basic-chat", mode="chunk")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        call = asyncio.create_task(stream_text(sdk, BASIC_PROMPT))

        def held_after() -> int | None:
            bindings = app.engine.state().bindings
            paused = [b for b in bindings if b.status == "paused"]
            return paused[0].chunks_served if paused else None

        await until(app, lambda: held_after() == 0, "the first pause")
        for _ in range(7):  # a burst read at once: no chunk goes out between the presses
            app.main.action_step("chunk")
        await until(app, lambda: held_after() == 7, "seven chunks, then a pause")
        await pilot.press("e")
        await call
        await sdk.close()


async def test_a_call_refused_503_while_nothing_is_loaded_is_logged_in_live() -> None:
    app = make_app(SAMPLES / "broken-sidecar")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        with pytest.raises(openai.APIStatusError) as refused:
            await stream_text(sdk, BASIC_PROMPT)
        assert refused.value.status_code == 503
        await until(app, lambda: any("SCENARIO_NOT_LOADED" in x for x in app.live_pane.lines),
                    "the refusal in Live")
        line = next(x for x in app.live_pane.lines if "SCENARIO_NOT_LOADED" in x)
        assert "answered 503: the scenario is not loaded [SIDECAR_INVALID]" in line
        await sdk.close()
        await pilot.press("q")
    assert app.return_code == 1 and "never loaded" in str(app.return_value)
