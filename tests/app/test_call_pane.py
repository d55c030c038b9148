"""The call pane's tabs over a real served call, and the pure helpers behind them."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from dsh_replay_tui.headless.callview import (
    ContextItem,
    assemble,
    context_range,
    diff_context,
    live_new_messages,
    recorded_context,
)
from dsh_replay_tui.widgets.chunk_list import ChunkList, TextLines
from dsh_replay_tui.widgets.rendered_lines import RenderedLines

from replay_engine.scenario.loading import load_scenario
from tests.app.apptools import BASIC_PROMPT, client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
QUESTION = "What files are in the workspace? Then say hello."


def test_assemble_rebuilds_blocks_usage_and_finish() -> None:
    script = load_scenario(BASIC).scripts[0]
    first = assemble(script.entries[0])
    assert [(b.kind, b.text, b.name) for b in first.blocks] == [
        ("reasoning", "I should list the files first.", None),
        ("tool-call", '{"command":"ls"}', "bash"),
    ]
    assert first.finish == "tool-calls" and first.usage is not None
    assert first.usage["inputTokens"] == 120
    second = assemble(script.entries[1])
    assert [b.text for b in second.blocks] == ["The workspace has README.md and src. Hello!"]


def test_recorded_context_sits_between_the_previous_call_and_this_one() -> None:
    script = load_scenario(BASIC).scripts[0]
    assert script.file is not None
    first, second = context_range(script, 0), context_range(script, 1)
    assert first is not None and second is not None
    assert first[1] < second[0] <= second[1]
    assert recorded_context(script, 0) == [ContextItem("user", QUESTION)]
    assert recorded_context(script, 1) == [ContextItem("tool", "README.md\nsrc\n", "call_ls_1")]


def test_diff_marks_same_different_and_missing_messages() -> None:
    live = live_new_messages([
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": "x"},
        {"role": "tool", "content": "README.md\n src"},
        {"role": "user", "content": [{"type": "text", "text": "extra"}]},
    ])
    recorded = [ContextItem("tool", "README.md\nsrc\n"), ContextItem("user", "other"),
                ContextItem("user", "gone")]
    marks = [m for m, _, _ in diff_context(live, recorded)]
    assert marks == ["=", "≠", "-"]
    assert [m for m, _, _ in diff_context(live, [])] == ["+", "+"]


async def test_tabs_show_output_chunks_request_diff_and_raw_json() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        stream = await sdk.chat.completions.create(
            model="m", messages=[{"role": "user", "content": QUESTION}], stream=True)
        async for _ in stream:
            pass
        await pilot.press("down")  # call #0
        pane = app.call_pane
        output = " ".join(pane.query_one("#output", RenderedLines).text.split())
        assert "call #0 of [0] sample-basic-chat key 1/1 chunks derived 10 chunk(s)" in output
        assert "── tool call bash (call_ls_1)" in output
        assert '{ "command": "ls" }' in output  # arguments pretty-printed
        assert "usage: inputTokens 120" in output and "finish: tool-calls" in output
        await pilot.press("right_square_bracket")
        assert pane.active == "chunks"
        chunks = pane.query_one(ChunkList)
        assert chunks.row_count == 10
        assert chunks.row_text(9).plain.startswith("9 finish {")
        await pilot.press("right_square_bracket")
        assert pane.active == "request"
        await pane.context_loaded.wait()
        assert pane.request_rows == [("=", f"user: {QUESTION}", f"user: {QUESTION}")]
        # Call #1 asked with a different tool result: the difference is marked.
        stream = await sdk.chat.completions.create(model="m", stream=True, messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": ""},
            {"role": "tool", "tool_call_id": "call_ls_1", "content": "README.md\nlib\n"},
        ])
        async for _ in stream:
            pass
        await pilot.press("down")
        await until(app, lambda: pane.request_rows and pane.request_rows[0][0] == "≠", "the diff")
        assert pane.request_rows == [("≠", "tool: README.md\nlib\n", "tool: README.md\nsrc\n")]
        await pilot.press("right_square_bracket")
        assert pane.active == "raw"
        raw = pane.query_one(TextLines)
        text = "\n".join(raw.row_text(i).plain for i in range(raw.row_count))
        assert '"origin": "derived"' in text and '"kind": "chunks"' in text
        await pilot.press("right_square_bracket")
        assert pane.active == "output"
        output = pane.query_one("#output", RenderedLines).text.replace("\n", " ")
        assert "The workspace has README.md and src. Hello!" in output
        await sdk.close()


async def test_the_request_tab_counts_chunks_as_they_are_stepped_and_when_the_call_ends() -> None:
    app = make_app(SAMPLES / "basic-chat", mode="chunk")
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        sdk = client(app, "s")
        call = asyncio.create_task(stream_text(sdk, BASIC_PROMPT))
        pane = app.call_pane
        request = pane.query_one("#request", RenderedLines)

        def paused_at() -> int | None:
            held = [b for b in app.engine.state().bindings if b.status == "paused"]
            return held[0].chunks_served if held else None

        await until(app, lambda: paused_at() == 0, "the first pause")
        await pilot.press("n")
        await until(app, lambda: paused_at() == 1, "one chunk")
        pane.show_tab("request")
        await pilot.pause()
        assert "streaming, 1 chunk(s) served" in request.text
        await pilot.press("n")  # n shows the chunks; the request tab is painted anew when shown
        await until(app, lambda: paused_at() == 2, "the next chunk")
        pane.show_tab("request")
        await pilot.pause()
        assert "streaming, 2 chunk(s) served" in request.text
        await pilot.press("e")
        await call
        await until(app, lambda: not app.engine.state().bindings[0].call_index, "the end")
        await pilot.pause()
        assert "finished, 10 chunk(s) served" in request.text, request.text
        await sdk.close()


async def test_a_hang_shows_the_prefix_it_serves_before_it_waits() -> None:
    from replay_engine import HANG_PREFIX

    app = make_app(SAMPLES / "hang-ready-file")
    async with app.run_test(size=(160, 45)) as pilot:
        await app.ready.wait()
        app.scripts_view.select(0, 1)
        app.call_pane.show_tab("chunks")
        await pilot.pause()
        pane = app.call_pane
        assert pane.view is not None and pane.view.script.entries[1].entry.kind == "hang"
        assert f"hang  replaced  {len(HANG_PREFIX)} chunk(s)" in pane._title().plain
        assert pane.query_one(ChunkList).row_count == len(HANG_PREFIX)


async def test_the_request_tab_reads_a_request_by_the_wire_it_came_on() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None
        async with httpx.AsyncClient(base_url=app.url) as http:
            user = {"role": "user", "parts": [{"text": QUESTION}]}
            first = await http.post("/v1beta/models/g:generateContent", json={"contents": [user]})
            assert first.status_code == 200, first.text
            second = await http.post("/v1beta/models/g:generateContent", json={"contents": [
                user, {"role": "model", "parts": [{"functionCall": {
                    "id": "call_ls_1", "name": "bash", "args": {"command": "ls"}}}]},
                {"role": "function", "parts": [{"functionResponse": {
                    "id": "call_ls_1", "name": "bash", "response": {"output": "README.md\nsrc\n"}}}]},
            ]})
            assert second.status_code == 200, second.text
        await pilot.press("down", "down")  # call #1
        await pilot.press("right_square_bracket", "right_square_bracket")
        pane = app.call_pane
        assert pane.active == "request"
        await until(app, lambda: bool(pane.request_rows), "the request rows")
        assert pane.request_rows == [("=", "tool: README.md\nsrc\n", "tool: README.md\nsrc\n")]


async def test_the_chunks_and_raw_tabs_say_what_to_select_on_a_script_row() -> None:
    # A script row has no chunks and no entry JSON: the tabs said nothing at all (a blank pane).
    app = make_app(SAMPLES / "patch-throw-append")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        assert app.scripts_view.selected() == (0, None)
        pane = app.call_pane
        await pilot.press("right_square_bracket")
        assert pane.active == "chunks"
        assert "select a call in the scripts (↓) for its chunks" in pane.focus_list.render_line(0).text
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert pane.active == "raw"
        assert "for its entry JSON" in pane.focus_list.render_line(0).text
        await pilot.press("down")  # a call: its JSON, no hint
        assert pane.focus_list.render_line(0).text.startswith("{")
        await pilot.press("up")
        assert "for its entry JSON" in pane.focus_list.render_line(0).text
