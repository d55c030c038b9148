"""Each verdict case in the debugger, with real clients on its embedded server: a refused call,
a client that dropped its stream mid-way, diverged calls (the ≠ column, the header's earliest
``diverged at #N``, how each session was bound), ``--strict`` on a diverged and a faithful
replay, and a model call while the scenario is not loaded."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.screens.verdict import VerdictScreen

from tests.app.apptools import BASIC_PROMPT, BASIC_TOOL_TURN, client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
NESTED = SAMPLES / "nested-subagents"
NARROW = (80, 24)


def header(app: ReplayApp) -> str:
    return app.header.text.plain


def rows(app: ReplayApp) -> list[str]:
    view = app.scripts_view
    return [view.row_text(i).plain for i in range(view.row_count)]


async def recorded_messages(app: ReplayApp, script: int, call: int) -> list[dict[str, Any]]:
    """What the recording said before a call, as chat messages (a faithful request)."""
    async with httpx.AsyncClient() as http:
        found = (await http.get(f"{app.url}/replay/v1/context/{script}/{call}")).json()
    out: list[dict[str, Any]] = []
    for item in found["context"]:
        if item["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": item.get("toolCallId") or "",
                        "content": item["text"]})
        else:
            out.append({"role": "user", "content": item["text"]})
    return out


async def test_a_refused_call_is_not_consumed_in_the_header_on_a_and_on_q() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        await stream_text(sdk, BASIC_PROMPT)
        await stream_text(sdk, BASIC_TOOL_TURN)
        with pytest.raises(openai.APIStatusError) as refused:
            await stream_text(sdk, BASIC_TOOL_TURN)
        assert refused.value.status_code == 409
        await until(app, lambda: "not consumed (1 refused)" in header(app), "the header")
        assert "consumed ✓" not in header(app)
        assert any("binding failed SCRIPT_EXHAUSTED" in line for line in app.live_pane.lines)
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen) and not screen.ok
        assert "session s: call #2 of script 0 was refused with SCRIPT_EXHAUSTED" in screen.text
        await pilot.press("escape", "q")
        await sdk.close()
    assert app.return_code == 3
    assert app.return_value is not None and "refused with SCRIPT_EXHAUSTED" in app.return_value


async def test_a_client_that_dropped_its_stream_mid_way_is_not_consumed() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        await stream_text(sdk, BASIC_PROMPT)
        await pilot.press("3")  # hold every chunk: the client gets one, then goes away
        async with httpx.AsyncClient(base_url=app.url or "", timeout=10) as http:
            body = {"model": "m", "stream": True, "messages": BASIC_TOOL_TURN}
            async with http.stream("POST", "/v1/chat/completions", json=body,
                                   headers={"X-Session-Id": "s"}) as response:
                await until(app, lambda: "PAUSED 1" in header(app), "the pause")
                await pilot.press("n")
                lines = response.aiter_lines()
                first = await anext(lines)
                assert first.startswith("data: ")
        await until(app, lambda: "not consumed (1 cut)" in header(app), "the cut stream")
        assert rows(app)[2].startswith("  ✗ #1"), rows(app)  # not marked served
        await pilot.press("1", "a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen) and not screen.ok
        assert "session s: call #1 of script 0 (turn/step 1/2) ended after 1 of its 6 chunk(s)" \
            in screen.text
        await pilot.press("escape", "q")
        await sdk.close()
    assert app.return_code == 3


async def test_diverged_calls_are_marked_and_the_header_names_the_earliest() -> None:
    app = make_app(NESTED)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        parent, docs = client(app, "parent"), client(app, "docs")
        await stream_text(parent, await recorded_messages(app, 0, 0))  # faithful: binds by content
        await stream_text(docs, [{"role": "user", "content": "something else entirely"}])
        await stream_text(parent, [{"role": "user", "content": "another prompt"}])
        await until(app, lambda: rows(app)[2].startswith("  ✓≠#1"), "the parent's call #1 marked")
        # The earliest in call order is the docs child's first call, though the parent bound first.
        assert header(app).startswith("diverged at #0 of script 1  not consumed"), header(app)
        listed = rows(app)
        assert listed[2].startswith("  ✓≠#1"), listed  # the parent's call #1
        assert listed[5].startswith("  ✓≠#0"), listed  # the docs child's call #0
        assert listed[1].startswith("  ✓ #0"), listed  # the faithful one
        # How each session was bound: in the event log and in Live.
        assert any(line.startswith("bound parent → script [0] nest-parent, by content")
                   for line in app.live_pane.lines), app.live_pane.lines
        assert any(line.startswith("bound docs → script [1] nest-child-docs, by order")
                   for line in app.live_pane.lines), app.live_pane.lines
        assert app.live_pane.sessions[0].split()[-2:] == ["by", "content"]
        assert app.live_pane.sessions[1].split()[-2:] == ["by", "order"]
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, VerdictScreen)
        assert "first divergence: session docs: call #0 of script 1" in screen.text
        await pilot.press("escape", "q")
        await parent.close()
        await docs.close()
    assert app.return_code == 3


@pytest.mark.parametrize("faithful", [True, False], ids=["faithful", "diverged"])
async def test_strict_fails_a_diverged_replay_and_passes_a_faithful_one(faithful: bool) -> None:
    app = make_app(BASIC, strict=True)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        await stream_text(sdk, BASIC_PROMPT if faithful else [{"role": "user", "content": "hi"}])
        await stream_text(sdk, BASIC_TOOL_TURN)
        await until(app, lambda: "bound 1/1" in header(app) and "strict" in header(app), "header")
        await until(app, lambda: app.engine.state().bindings[0].cursor == 2, "both calls")
        if faithful:
            await until(app, lambda: "consumed ✓" in header(app), "consumed")
        else:
            await until(app, lambda: "diverged at #0" in header(app), "the divergence")
            assert "consumed ✓" not in header(app)
        await pilot.press("q")
        await sdk.close()
    assert app.return_code == (0 if faithful else 3)
    assert app.return_value is not None
    if not faithful:
        assert "left the recording (strict)" in app.return_value


async def test_a_model_call_while_the_scenario_is_not_loaded_gets_503() -> None:
    app = make_app(SAMPLES / "broken-json-line")
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await until(app, lambda: "SCENARIO_NOT_LOADED" in " ".join(
            app.live_pane.session_list.hint), "Live's hint")
        sdk = client(app, "s")
        with pytest.raises(openai.APIStatusError) as refused:
            await stream_text(sdk)
        assert refused.value.status_code == 503
        body: Any = refused.value.body
        assert "SCENARIO_NOT_LOADED" in str(body) or refused.value.code == "SCENARIO_NOT_LOADED"
        assert "session.jsonl:5" in str(body)  # it names the load error
        await pilot.press("q")
        await sdk.close()
    assert app.return_code == 1
