"""The debugger's record mode: an openai-SDK agent records through the TUI against a replay
server upstream, each call shows in Live as it is recorded, stopping loads the recording into
the scripts pane, and the TUI's own server replays it to the same agent, consumed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from dsh_replay_tui.__main__ import build_parser, options_from_args
from dsh_replay_tui.app import AppOptions, ReplayApp

from replay_engine import ReplayError
from replay_engine.server import serve_scenario
from tests.app.apptools import until
from tests.record.agent import API_KEY, Agent
from tests.record.recordtools import every_byte
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

TOOL_CALL = {"kind": "chunks", "chunks": [
    {"type": "block-start", "index": 0, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 0, "id": "call-1", "name": "ls",
     "argumentsDelta": '{"path":'},
    {"type": "tool-call-delta", "index": 0, "id": "call-1", "name": "ls", "argumentsDelta": '"."}'},
    {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "call-1", "name": "ls",
                                                "arguments": '{"path":"."}'}},
    {"type": "usage", "usage": {"inputTokens": 4, "outputTokens": 2}},
    {"type": "finish", "reason": {"kind": "tool-calls"}}]}
ENTRIES = [TOOL_CALL, text_entry("the listing is short", parts=3), text_entry("bye now", parts=2)]


def rows(app: ReplayApp) -> list[str]:
    view = app.scripts_view
    return [view.row_text(i).plain for i in range(view.row_count)]


async def test_records_through_the_tui_then_replays_the_recording(tmp_path: Path) -> None:
    source = write_scenario(tmp_path / "source", ENTRIES)
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        app = ReplayApp(AppOptions(scenario=target, port=0, watch=False, upstream=upstream.url))
        async with app.run_test(size=(160, 40)) as pilot:
            assert app.record is not None
            await app.ready.wait()
            recording = app.record.recording
            assert recording is not None and app.url == recording.url
            transcript = await Agent(recording.base_url, [3]).run()
            await until(app, lambda: sum("● rec" in line for line in app.live_pane.lines) == 3,
                        "three recorded calls in Live")
            recorded = [line for line in app.live_pane.lines if "● rec" in line]
            assert "session.jsonl #0 1/1: 6 chunks, finish tool-calls" in recorded[0]
            assert "#1 1/2" in recorded[1] and "#2 2/1" in recorded[2]
            assert app.scenario is None  # nothing is served while recording
            await pilot.press("s")
            await app.replay_ready.wait()
            assert app.load_error is None and app.scenario is not None
            assert app.url is not None and app.server is not None
            assert app.url.endswith(f":{app.record.port}")  # the agent keeps its URL
            listed = rows(app)
            assert sum(row.lstrip(" ›").startswith(("#0", "#1", "#2")) for row in listed) == 3, (
                listed)
            again = await Agent(app.url + "/v1", [3]).run()
            assert again == transcript
            await until(app, lambda: app.engine.consumed_problems() == [], "consumed")
            await pilot.press("q")
        assert app.return_code == 0
    assert API_KEY.encode() not in every_byte(target)
    header = json.loads((target / "session.jsonl").read_text().splitlines()[0])
    assert header["type"] == "session"


async def test_quitting_while_recording_finishes_the_logs_and_prints_what_was_recorded(
        tmp_path: Path) -> None:
    source = write_scenario(tmp_path / "source", ENTRIES)
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        app = ReplayApp(AppOptions(scenario=target, port=0, watch=False, upstream=upstream.url))
        async with app.run_test(size=(120, 30)) as pilot:
            await app.ready.wait()
            assert app.record is not None and app.record.recording is not None
            await Agent(app.record.recording.base_url, [1]).run()
            await until(app, lambda: any("● rec" in line for line in app.live_pane.lines),
                        "a recorded call")
            await pilot.press("q")
        assert app.return_code == 0
        assert app.return_value is not None
        assert app.return_value.startswith("recorded 1 call(s) of 1 session(s)")
    assert len((target / "session.jsonl").read_text().splitlines()) > 3


async def test_record_refuses_a_directory_holding_a_scenario(tmp_path: Path) -> None:
    existing = write_scenario(tmp_path / "existing", ENTRIES)
    async with serve_scenario(existing) as upstream:
        app = ReplayApp(AppOptions(scenario=existing, port=0, watch=False, upstream=upstream.url))
        async with app.run_test(size=(120, 30)) as pilot:
            await app.replay_ready.wait()
            assert app.server is None and app.scenario is None
            assert any("not recording" in line and "--force" in line
                       for line in app.live_pane.lines)
            await pilot.pause()
            assert app.header.text.plain.strip()  # the header says what state this is
            assert app.call_pane.view is None
            assert "Nothing recorded: the banner above says why" in app.call_pane._about.plain  # type: ignore[union-attr]
            await pilot.press("q")
        assert app.return_code == 1
        verdict = str(app.return_value)
        assert verdict.startswith("NOT recorded: ") and "--force" in verdict
        assert "never loaded" not in verdict


def test_record_flags_go_together() -> None:
    parser = build_parser()
    for argv in (["--record", "dir"], ["--force", "dir"]):
        args = parser.parse_args(argv)
        args.scenario_path = Path(args.scenario)
        with pytest.raises(argparse.ArgumentTypeError):  # a usage error: exit 2
            options_from_args(args)
    args = parser.parse_args(["--record", "--upstream", "ftp://x", "dir"])
    args.scenario_path = Path(args.scenario)
    with pytest.raises(ReplayError):  # an upstream that cannot work: exit 1
        options_from_args(args)
    args = parser.parse_args(["--record", "--upstream", "https://api.deepseek.com", "dir"])
    args.scenario_path = Path(args.scenario)
    assert options_from_args(args).upstream == "https://api.deepseek.com"
    args = parser.parse_args(["--upstream", "http://x", "dir"])  # no --record: live from a call
    args.scenario_path = Path(args.scenario)
    assert options_from_args(args).live_from


async def test_record_mode_says_recording_and_the_demo_agent_records_then_replays(
        tmp_path: Path) -> None:
    source = write_scenario(tmp_path / "source", ENTRIES)
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        app = ReplayApp(AppOptions(scenario=target, port=0, watch=False, upstream=upstream.url))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.ready.wait()
            app.main.flush()  # paint now (nothing else may repaint)
            await pilot.pause()
            first, second = app.header.render().plain.splitlines()
            assert first.startswith(f"● RECORDING → {upstream.url}  0 calls recorded"), first
            assert second.startswith(f"agent → {app.url}/v1  s: stop and replay"), second
            assert "bound 0/0" not in app.header.text.plain and "mode" not in first
            keys = [k for k, _ in app.main.footer.shown]
            assert keys[:2] == ["d", "s"] and keys[-2:] == ["?", "q"]
            # No agent at hand: the demo agent says a fixed conversation through the recorder.
            await pilot.press("d", "enter")
            await until(app, lambda: any("conversation done: 2 call(s) answered" in line
                                         for line in app.live_pane.lines), "the conversation")
            await until(app, lambda: "2 calls recorded  demo-conversation 2"
                        in app.header.text.plain, "the counts in the header")
            await pilot.press("s")
            await app.replay_ready.wait()
            assert app.load_error is None and app.scenario is not None
            assert len(app.scenario.scripts[0].entries) == 2
            await until(app, lambda: app.header.text.plain.startswith("waiting for the agent  bound 0/1"),
                        "the replay header")
            # ... and replays what it recorded, in the same app.
            await pilot.press("d", "enter")
            await until(app, lambda: "consumed ✓" in app.header.text.plain, "consumed")
            await pilot.press("q")
        assert app.return_code == 0


async def test_recording_from_an_upstream_that_does_not_answer_says_nothing_was_reached(
        tmp_path: Path) -> None:
    import socket

    import openai

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        upstream = f"http://127.0.0.1:{closed.getsockname()[1]}"
    target = tmp_path / "recorded"
    app = ReplayApp(AppOptions(scenario=target, port=0, watch=False, upstream=upstream))
    async with app.run_test(size=(120, 30)) as pilot:
        await app.ready.wait()
        assert app.record is not None and app.record.recording is not None
        sdk = openai.AsyncOpenAI(base_url=app.record.recording.base_url, api_key=API_KEY,
                                 max_retries=0)
        with pytest.raises(openai.APIStatusError) as refused:
            await sdk.chat.completions.create(model="m", messages=[{"role": "user",
                                                                     "content": "hi"}])
        await sdk.close()
        assert refused.value.status_code == 502
        await until(app, lambda: any(f"nothing reached {upstream}" in line
                                     for line in app.live_pane.lines), "the warning")
        await pilot.press("q")
    summary = str(app.return_value)
    assert "recorded 1 call(s)" in summary
    assert "1 of them never reached the upstream: it did not answer" in summary
