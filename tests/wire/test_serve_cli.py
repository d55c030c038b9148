"""``dsh-replay serve`` as a real process, and its input errors."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from replay_engine.cli.dispatch import main as cli_main
from replay_engine.errors import ConfigError
from replay_engine.scenario.config import load_serve_config


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "replay_engine.cli", "serve", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_serve_subprocess_driven_by_the_sdk_then_sigterm(tmp_path: Path, samples: Path) -> None:
    url_file = tmp_path / "url.txt"
    config = tmp_path / "replay.toml"
    config.write_text('paceMs = 1\n[[providers]]\nid = "deepseek"\n'
                      '[[providers.models]]\nid = "deepseek-v4-flash"\n')
    proc = _start(str(samples / "basic-chat"), "--port", "0", "--url-file", str(url_file),
                  "--config", str(config))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url_file.read_text() == url + "\n"
        client = openai.OpenAI(base_url=url + "/v1", api_key="replay", max_retries=0)
        assert [m.id for m in client.models.list()] == ["deepseek-v4-flash"]
        for _ in range(2):
            stream = client.chat.completions.create(
                model="deepseek-v4-flash", messages=[{"role": "user", "content": "hi"}],
                stream=True, extra_headers={"X-Session-Id": "agent-1"})
            finish = [c.choices[0].finish_reason for c in stream if c.choices][-1]
            assert finish in ("tool_calls", "stop")
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    # "hi" is not the recorded prompt: consumed by position (no --strict), and the divergence said
    assert out.splitlines() == ["replay consumed (run default)",
                                "  first divergence: session agent-1: call #0 of script 0 "
                                "(turn/step 1/1): user message 1: recorded 'What files are in "
                                "the workspace? Then say hello.', live 'hi'"]
    assert err.splitlines() == [
        "session agent-1 script 0 call #0 of 2: finished (10 chunks)",
        "session agent-1 script 0 call #1 of 2: finished (6 chunks)",
    ]


def test_serve_exits_3_when_not_consumed_and_warns_off_loopback(samples: Path) -> None:
    proc = _start(str(samples / "basic-chat"), "--port", "0", "--host", "0.0.0.0")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        client = openai.OpenAI(base_url=url.replace("0.0.0.0", "127.0.0.1") + "/v1",
                               api_key="replay", max_retries=0)
        client.chat.completions.create(model="m", messages=[])
        client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 3
    assert out.splitlines()[:2] == ["replay NOT consumed (run default):",
                                    "  - the anonymous session consumed 1/2 recorded call(s)"]
    assert out.splitlines()[2].startswith("  first divergence: the anonymous session: call #0")
    assert "warning: listening on 0.0.0.0, not loopback" in err


@pytest.mark.parametrize(("name", "text", "wanted"), [
    ("bad.json", '{"providers": [{"id": "p", "models": [{"id": "m", "contextWindow": 0}]}]}',
     "providers[0].models[0].contextWindow (provider 'p', model 'm'): Input should be greater "
     "than 0"),
    ("bad.json", '{"paceMs": -1}', "paceMs: must be an integer >= 0"),
    ("bad.json", '{"providers": [}', "line 1, column 16: not valid JSON"),
    ("bad.toml", "paceMs = [", "not valid TOML"),
    ("bad.toml", 'file = "x.jsonl"', "file: serve takes the scenario from its SCENARIO argument"),
    ("bad.toml", 'colour = "red"', "colour: Extra inputs are not permitted"),
])
def test_config_errors_name_the_file_and_location(tmp_path: Path, name: str, text: str,
                                                  wanted: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_serve_config(path)
    assert caught.value.message.startswith(f"{path}: ")
    assert wanted in caught.value.message


def test_serve_input_errors_exit_1_without_serving(tmp_path: Path, samples: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"providers": [{"name": "no id"}]}))
    assert cli_main(["serve", str(samples / "basic-chat"), "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dsh-replay: error [CONFIG]: ")
    assert "providers[0].id: missing required key" in err
    broken = tmp_path / "broken"
    shutil.copytree(samples / "basic-chat", broken)
    (broken / "session.jsonl").write_text('{"type":"session"}\n{nope\n')
    assert cli_main(["serve", str(broken), "--port", "0"]) == 1
    assert "broken/session.jsonl:2: " in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # a flag value: a usage error, as in the debugger
        cli_main(["serve", str(samples / "basic-chat"), "--pace", "fast"])
    assert usage.value.code == 2
    assert "expected recorded or recorded:SPEED" in capsys.readouterr().err


def test_serve_on_a_busy_port_exits_4_naming_cannot_listen(samples: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli_main(["serve", str(samples / "basic-chat"), "--port", str(port)]) == 4
    err = capsys.readouterr().err
    assert "[CANNOT_LISTEN]" in err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err


def test_the_wire_options_reach_the_served_wires(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    entry = {"kind": "chunks", "chunks": [
        {"type": "reasoning-delta", "index": 0, "text": "thinking"},
        {"type": "finish", "reason": {"kind": "error", "failure": {"code": "EMPTY_RESPONSE",
                                                                   "message": "nothing"}}}]}
    (root / "replay.override.json").write_text(json.dumps([entry, entry]))
    proc = _start(str(root), "--port", "0", "--chat-error-finish", "reason",
                  "--responses-reasoning", "content")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        client = openai.OpenAI(base_url=url + "/v1", api_key="replay", max_retries=0)
        chunks = list(client.chat.completions.create(model="m", messages=[], stream=True))
        assert chunks[-1].choices[0].finish_reason == "empty_response"  # the code, lower case
        failed = client.responses.create(model="m", input="q")
        assert failed.status == "failed"
        reasoning = failed.output[0]
        assert reasoning.type == "reasoning" and reasoning.summary == []
        assert [c.text for c in reasoning.content or []] == ["thinking"]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
