"""The demo agent against the real replay server, in process: every call driven, the run consumed."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine import WireOptions
from replay_engine.cli.dispatch import main as cli_main
from replay_engine.errors import ConfigError, ServerUnreachableError
from replay_engine.server import serve_scenario
from replay_engine.testing.demo_agent import run_demo_agent

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _chunks_entry(text: str) -> dict[str, Any]:
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}


def _write_scenario(root: Path, entries: list[dict[str, Any]], *, child_from: Path | None = None) -> Path:
    """A scenario whose primary is a bare-list sidecar, optionally with one child log."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "session.jsonl").write_text(
        json.dumps({"type": "session", "id": "primary", "createdAt": 1}) + "\n")
    (root / "replay.override.json").write_text(json.dumps(entries, indent=1))
    if child_from is not None:
        lines = child_from.read_text().splitlines()
        header = json.loads(lines[0])
        header.update(id="child-one", createdAt=2)
        (root / "session.1.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return root


async def test_basic_chat_is_driven_to_consumed(samples: Path) -> None:
    lines: list[str] = []
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        result = await run_demo_agent(server.url, out=lines.append)
        journal = server.engine.journal()
    assert result.consumed and result.problems == []
    assert result.failures == []
    assert [(c.session, c.call_index, c.kind, c.ok) for c in result.calls] == [
        ("demo-0", 0, "chunks", True), ("demo-0", 1, "chunks", True)]
    assert "tools bash" in result.calls[0].outcome
    assert "finish tool_calls" in result.calls[0].outcome
    assert "The workspace has README.md and src. Hello!" in result.calls[1].outcome
    # One printed line per call, then the verdict.
    # In the debugger's terms: call #index (recorded turn/step), recorded chunks.
    assert len(lines) == 3
    assert lines[0].startswith("ok   demo-0 call #0 (1/1) chunks: 10 recorded chunk(s)"), lines
    assert lines[1].startswith("ok   demo-0 call #1 (1/2) chunks: 6 recorded chunk(s)"), lines
    assert lines[-1].startswith("consumed")
    # The second request carried the first call's tool call and a tool result.
    assert [r.outcome for r in journal] == ["finished", "finished"]
    second = journal[1].messages
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command":"ls"}'}
    assert second[2]["tool_call_id"] == "call_ls_1"


async def test_hang_and_throws_with_a_child_session(tmp_path: Path, samples: Path) -> None:
    scenario = _write_scenario(tmp_path / "scenario", [
        _chunks_entry("first answer"),
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
        {"kind": "throw", "chunks": _chunks_entry("half")["chunks"][:2], "message": "boom",
         "code": "SERVER"},
        {"kind": "hang", "readyFile": "marks/hang-ready"},
        _chunks_entry("after the hang"),
    ], child_from=samples / "basic-chat" / "session.jsonl")
    ready = tmp_path / "ready"
    ready.mkdir()
    lines: list[str] = []
    async with serve_scenario(scenario, port=0, ready_dir=ready) as server:
        result = await run_demo_agent(server.url, ready_dir=str(ready), out=lines.append)
        journal = server.engine.journal()
    assert result.failures == [], lines
    assert result.consumed
    assert [(c.session, c.kind) for c in result.calls] == [
        ("demo-0", "chunks"), ("demo-0", "throw"), ("demo-0", "throw"), ("demo-0", "hang"),
        ("demo-0", "chunks"), ("demo-1", "chunks"), ("demo-1", "chunks")]
    assert "threw RATE_LIMIT as scripted (HTTP 429)" in result.calls[1].outcome
    assert "threw SERVER as scripted (after" in result.calls[2].outcome
    assert "readyFile marks/hang-ready" in result.calls[3].outcome
    assert "ABORTED" in result.calls[3].outcome
    assert (ready / "marks" / "hang-ready").is_file()
    # The server saw the same story: the child bound second, the hang was cancelled.
    assert [(r.session, r.script_index, r.outcome) for r in journal] == [
        ("demo-0", 0, "finished"), ("demo-0", 0, "failed"), ("demo-0", 0, "failed"),
        ("demo-0", 0, "cancelled"), ("demo-0", 0, "finished"),
        ("demo-1", 1, "finished"), ("demo-1", 1, "finished")]


async def test_hang_without_ready_file_waits_for_the_state(tmp_path: Path) -> None:
    scenario = _write_scenario(tmp_path / "s", [{"kind": "hang"}, _chunks_entry("done")])
    async with serve_scenario(scenario, port=0, ready_dir=tmp_path) as server:
        # A URL without its scheme (host:port) is taken as http.
        result = await run_demo_agent(server.url.removeprefix("http://"), out=lambda line: None)
    assert result.failures == [] and result.consumed
    assert "state hanging" in result.calls[0].outcome


async def test_stale_ready_file_falls_back_to_the_state(tmp_path: Path) -> None:
    # An empty marker left by an earlier run says nothing; the agent asks the state instead.
    scenario = _write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "ready.marker"}])
    (tmp_path / "ready.marker").touch()
    async with serve_scenario(scenario, port=0, ready_dir=tmp_path) as server:
        result = await run_demo_agent(server.url, ready_dir=str(tmp_path), out=lambda line: None)
    assert result.failures == [] and result.consumed
    assert "state hanging" in result.calls[0].outcome


async def test_ready_file_in_another_directory_is_reported(tmp_path: Path) -> None:
    scenario = _write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "ready.marker"}])
    (tmp_path / "server").mkdir()
    (tmp_path / "agent").mkdir()
    async with serve_scenario(scenario, port=0, ready_dir=tmp_path / "server") as server:
        result = await run_demo_agent(server.url, ready_dir=str(tmp_path / "agent"),
                                      out=lambda line: None, hang_timeout=0.3)
    # The call is still cancelled (the run is consumed), but the mismatch is a failure that
    # names both places and the fix.
    assert result.consumed
    [failure] = result.failures
    assert str(tmp_path / "agent" / "ready.marker") in failure
    assert str(tmp_path / "server" / "ready.marker") in failure and "--ready-dir" in failure


async def test_without_ready_dir_the_servers_own_directory_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `dsh-replay serve` without --ready-dir makes its markers in a directory of its own; the
    # demo agent without --ready-dir finds the marker where the server's state says it is,
    # not in the current directory.
    scenario = _write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "ready.marker"}])
    (tmp_path / "server").mkdir()
    (tmp_path / "agent").mkdir()
    monkeypatch.chdir(tmp_path / "agent")
    async with serve_scenario(scenario, port=0, ready_dir=tmp_path / "server") as server:
        result = await run_demo_agent(server.url, out=lambda line: None, hang_timeout=2.0)
    assert result.failures == [] and result.consumed
    assert f"hung (readyFile {tmp_path / 'server' / 'ready.marker'})" in result.calls[0].outcome
    assert not (tmp_path / "agent" / "ready.marker").exists()


async def test_named_run_leaves_the_default_run_alone(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        result = await run_demo_agent(server.url + "/v1/", run="alpha", out=lambda line: None)
        assert result.consumed and result.failures == []
        assert server.engine.state("alpha").consumed
        default = server.engine.state()
        assert default.bindings == () and not default.consumed


async def test_a_run_already_half_played_is_reported_not_consumed(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        # Another client binds the only script and plays one of its two calls.
        client = openai.AsyncOpenAI(api_key="replay", base_url=server.url + "/v1", max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            extra_headers={"X-Session-Id": "someone-else"})
        async for _ in stream:
            pass
        await client.close()
        result = await run_demo_agent(server.url, out=lambda line: None)
    assert not result.consumed
    assert any("someone-else consumed 1/2" in p for p in result.problems)
    assert len(result.failures) == 2
    assert all("UNRECORDED_SESSION" in c.outcome for c in result.calls)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_unreachable_server_raises_a_typed_error() -> None:
    with pytest.raises(ServerUnreachableError, match="cannot reach the replay server"):
        await run_demo_agent(f"http://127.0.0.1:{_closed_port()}", out=lambda line: None)


def test_cli_unreachable_server_exits_1_with_one_paragraph(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    assert cli_main(["demo-agent", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dsh-replay demo-agent: cannot reach the replay server at " + url)
    assert "dsh-replay serve SCENARIO" in err and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("flags", "said"), [
    (["--run", "a b"], "argument --run: run id 'a b' is not accepted: use 1 to 128 printable"),
    (["--delay-ms", "-3"], "argument --delay-ms: -3: must be a non-negative integer"),
])
def test_cli_refuses_a_run_or_delay_the_server_would_not_take(
        capsys: pytest.CaptureFixture[str], flags: list[str], said: str) -> None:
    # A usage error before any request, not "is this a dsh-replay server?" after a 400.
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["demo-agent", url, *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "cannot reach" not in err and "Traceback" not in err


async def test_a_recorder_is_named_as_the_reason_nothing_can_be_driven(tmp_path: Path) -> None:
    # The recorder is a dsh-replay server too, but it serves no scripts: say so.
    from replay_engine.record import record_scenario

    async with record_scenario(tmp_path / "rec", "http://127.0.0.1:9") as recording:
        with pytest.raises(ServerUnreachableError) as caught:
            await run_demo_agent(recording.url, out=lambda line: None)
    assert "answered HTTP 404" in caught.value.message
    assert "A recorder serves no scripts to drive." in caught.value.message


@pytest.mark.parametrize("url", ["", "ftp://127.0.0.1:8765", "http://", "https:///v1"])
def test_cli_refuses_what_is_not_a_server_url(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["demo-agent", url])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"error: argument url: {url!r} is not a server URL; pass the URL "
                        "`dsh-replay serve` or the debugger prints, e.g. http://127.0.0.1:8765\n")
    assert "cannot reach" not in err


async def test_cli_exits_3_when_the_run_is_not_consumed(samples: Path) -> None:
    exe = shutil.which("dsh-replay")
    command = [exe] if exe else [sys.executable, "-m", "replay_engine.cli"]
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        async def run(*extra: str) -> tuple[int, str]:
            proc = await asyncio.create_subprocess_exec(
                *command, "demo-agent", server.url, *extra,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            out, _ = await proc.communicate()
            assert proc.returncode is not None
            return proc.returncode, out.decode()

        # (Exit 0 on a consumed run is covered end to end in tests/app/test_e2e_tmux.py.)
        # Run "beta": another client already bound the only script, so nothing is left to the
        # demo agent and the verdict is "not consumed".
        client = openai.AsyncOpenAI(api_key="replay", base_url=server.url + "/runs/beta/v1",
                                    max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            extra_headers={"X-Session-Id": "someone-else"})
        async for _ in stream:
            pass
        await client.close()
        code, out = await run("--run", "beta", "--delay-ms", "1")
        assert code == 3, out
        assert "UNRECORDED_SESSION" in out
        assert out.splitlines()[-1].startswith("NOT consumed: session someone-else consumed 1/2")


# -- the Messages, Responses and Gemini dialects ----------------------------------------------

DIALECT_FINISH = {"anthropic": ("tool_use", "end_turn"), "responses": ("completed", "completed"),
                  "gemini": ("STOP", "STOP")}
LIMITS = {"anthropic": "max_tokens", "responses": "incomplete (max_output_tokens)",
          "gemini": "MAX_TOKENS", "openai": "length"}


@pytest.mark.parametrize("dialect", ["anthropic", "responses", "gemini"])
async def test_basic_chat_on_each_dialect_is_driven_to_consumed(samples: Path, dialect: str) -> None:
    lines: list[str] = []
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        result = await run_demo_agent(server.url, out=lines.append, dialect=dialect)
        journal = server.engine.journal()
    assert result.failures == [] and result.consumed, lines
    tool_finish, text_finish = DIALECT_FINISH[dialect]
    assert f"finish {tool_finish}, tools bash" in result.calls[0].outcome
    assert f"finish {text_finish}, 'The workspace has README.md and src. Hello!'" in result.calls[1].outcome
    assert [(r.outcome, r.dialect) for r in journal] == [("finished", dialect)] * 2
    # The second request carried the recorded tool call back with a result, in the dialect's shape.
    second = journal[1].messages
    if dialect == "anthropic":
        turns = second["messages"]
        assert [m["role"] for m in turns] == ["user", "assistant", "user"]
        assert turns[1]["content"] == [{"type": "tool_use", "id": "call_ls_1", "name": "bash",
                                        "input": {"command": "ls"}}]
        assert turns[2]["content"][0]["type"] == "tool_result"
        assert turns[2]["content"][0]["tool_use_id"] == "call_ls_1"
    elif dialect == "gemini":
        contents = second["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        assert contents[1]["parts"] == [{"functionCall": {"id": "call_ls_1", "name": "bash",
                                                          "args": {"command": "ls"}}}]
        answer = contents[2]["parts"][0]["functionResponse"]
        assert (answer["id"], answer["name"]) == ("call_ls_1", "bash")
    else:
        items = second["input"]
        assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
        assert items[1] == {"type": "function_call", "call_id": "call_ls_1", "name": "bash",
                            "arguments": '{"command":"ls"}'}
        assert items[2]["call_id"] == "call_ls_1"


@pytest.mark.parametrize(("dialect", "error_finish"), [
    ("openai", "error"), ("openai", "reason"), ("anthropic", "error"), ("responses", "error"),
    ("gemini", "error")])
async def test_hang_throws_and_finishes_on_each_dialect(tmp_path: Path, dialect: str,
                                                        error_finish: str) -> None:
    text = _chunks_entry("x")["chunks"]
    scenario = _write_scenario(tmp_path / "scenario", [
        {"kind": "throw", "chunks": [], "message": "who are you", "code": "AUTH"},
        {"kind": "throw", "chunks": text[:2], "message": "boom", "code": "SERVER"},
        {"kind": "hang", "readyFile": "hang-ready"},
        {"kind": "chunks", "chunks": [*text[:3], {"type": "finish", "reason": {"kind": "max-tokens"}}]},
        {"kind": "chunks", "chunks": [*text[:3], {"type": "finish", "reason": {
            "kind": "error", "failure": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "full"}}}]},
        _chunks_entry("after all that"),
    ])
    ready = tmp_path / "ready"
    ready.mkdir()
    lines: list[str] = []
    wire = WireOptions(chat_error_finish="reason" if error_finish == "reason" else "error")
    async with serve_scenario(scenario, port=0, ready_dir=ready, wire=wire) as server:
        result = await run_demo_agent(server.url, ready_dir=str(ready), out=lines.append,
                                      dialect=dialect)
        journal = server.engine.journal()
    assert result.failures == [] and result.consumed, lines
    outcomes = [c.outcome for c in result.calls]
    assert "threw AUTH as scripted (HTTP 401)" in outcomes[0]
    assert "threw SERVER as scripted (after" in outcomes[1]
    assert "readyFile hang-ready" in outcomes[2] and "ABORTED" in outcomes[2]
    limit = LIMITS[dialect]
    assert f"finish {limit}, 'x'" in outcomes[3]
    if error_finish == "reason":  # the code as finish_reason, which the demo agent accepts
        assert "finish context_window_exceeded" in outcomes[4]
    else:
        assert "recorded error finish CONTEXT_WINDOW_EXCEEDED" in outcomes[4]
    assert "'after all that'" in outcomes[5]
    assert [(r.outcome, r.dialect) for r in journal] == [
        ("failed", dialect), ("failed", dialect), ("cancelled", dialect), ("finished", dialect),
        ("finished", dialect), ("finished", dialect)]  # an error finish is served, not thrown


def test_expected_finish_reads_each_dialects_names() -> None:
    from replay_engine.testing import demo_agent

    assert demo_agent._expected_finish(_chunks_entry("a")["chunks"], "anthropic") == "end_turn"
    assert demo_agent._expected_finish(_chunks_entry("a")["chunks"], "responses") == "completed"
    error = {"type": "finish", "reason": {"kind": "error", "failure": {"code": "SERVER"}}}
    assert demo_agent._expected_finish([error], "openai") == "error SERVER"
    assert demo_agent._expected_finish([error], "responses") == "error SERVER"
    assert demo_agent._expected_finish([], "anthropic") is None
    assert demo_agent._expected_finish(_chunks_entry("a")["chunks"], "gemini") == "STOP"
    assert demo_agent._expected_finish([error], "gemini") == "error SERVER"


async def test_an_unknown_dialect_is_a_config_error(samples: Path) -> None:
    with pytest.raises(ConfigError,
                       match="unknown demo-agent dialect 'grpc'.*openai, anthropic, responses, gemini"):
        await run_demo_agent("http://127.0.0.1:1", out=lambda line: None, dialect="grpc")


@pytest.mark.parametrize(("dialect", "finish"), [("anthropic", "end_turn"), ("gemini", "STOP")])
async def test_cli_dialect_flag_drives_the_dialects_route(samples: Path, dialect: str,
                                                         finish: str) -> None:
    exe = shutil.which("dsh-replay")
    command = [exe] if exe else [sys.executable, "-m", "replay_engine.cli"]
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        proc = await asyncio.create_subprocess_exec(
            *command, "demo-agent", server.url, "--dialect", dialect,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        journal = server.engine.journal()
    assert proc.returncode == 0, out.decode()
    assert f"finish {finish}" in out.decode()
    assert [r.dialect for r in journal] == [dialect, dialect]
