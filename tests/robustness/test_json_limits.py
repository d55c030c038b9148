"""JSON nested past the depth limit, and numbers that overflow to infinity, in every file the
CLI reads and in request bodies: a typed error naming the file (and line), a 400 on the wire."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from replay_engine.jsonlimits import MAX_JSON_DEPTH, too_deep
from replay_engine.server import serve_scenario

from .conftest import assert_typed_failure, cli

SIDE = "replay.override.json"
DEEP = "[" * 1000 + "]" * 1000


def _append_line(log: Path, line: str) -> int:
    text = log.read_text(encoding="utf-8")
    log.write_text(text + line + "\n", encoding="utf-8")
    return text.count("\n") + 1


def test_depth_scan_counts_brackets_outside_strings() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert not too_deep(at_limit) and too_deep("[" + at_limit + "]")
    assert not too_deep(json.dumps(["[" * 5000]))
    assert not too_deep(json.dumps([[1]] * 5000).encode())
    assert too_deep(("{\"a\":" * 300 + "1" + "}" * 300).encode())


@pytest.mark.parametrize("command", [["validate"], ["inspect", "--json"], ["inspect"]])
def test_deep_log_line(scenario: Path, command: list[str]) -> None:
    line = _append_line(scenario / "session.jsonl", '{"type":"x","data":' + DEEP + "}")
    result = cli(*command, str(scenario))
    assert_typed_failure(result, "LOG_PARSE" if command != ["validate"] else None)
    assert f"session.jsonl:{line}: the line is nested deeper than {MAX_JSON_DEPTH}" in (
        result.stdout + result.stderr)


@pytest.mark.parametrize("command", [["validate"], ["inspect", "--json"],
                                     ["override", "--at", "0", "--hang"]])
def test_deep_sidecar(scenario: Path, command: list[str]) -> None:
    (scenario / SIDE).write_text(DEEP)
    result = cli(*command, str(scenario))
    assert_typed_failure(result, None if command == ["validate"] else "SIDECAR_INVALID")
    # named where it first goes too deep: line, column and JSON path
    assert f"{SIDE}:1:{MAX_JSON_DEPTH + 1}: entry 0[0][0]" in result.stdout + result.stderr
    assert f"the sidecar is nested deeper than {MAX_JSON_DEPTH}" in result.stdout + result.stderr
    assert (scenario / SIDE).read_text() == DEEP


def test_deep_chunks_file(scenario: Path, tmp_path: Path) -> None:
    chunks = tmp_path / "chunks.json"
    chunks.write_text(DEEP)
    result = cli("override", str(scenario), "--at", "0", "--chunks-file", str(chunks))
    assert_typed_failure(result, "SIDECAR_INVALID")
    assert f"chunks.json:1:{MAX_JSON_DEPTH + 1}: [0][0][0]" in result.stderr
    assert "nested deeper than" in result.stderr


@pytest.mark.parametrize("name", ["c.json", "c.toml"])
def test_deep_config(scenario: Path, tmp_path: Path, name: str) -> None:
    config = tmp_path / name
    config.write_text('{"paceMs":' + DEEP + "}" if name.endswith(".json")
                      else "paceMs = " + DEEP + "\n")
    result = cli("serve", str(scenario), "--config", str(config))
    assert_typed_failure(result, "CONFIG")
    assert f"{name}: the config file is nested deeper than" in result.stderr


@pytest.mark.anyio
async def test_deep_request_body_is_a_400(scenario: Path) -> None:
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        for path in ("/v1/chat/completions", "/replay/v1/stream", "/v1/messages"):
            body = '{"model":"m","messages":' + DEEP + "}"
            r = await http.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, (path, r.text)
            assert "nested deeper than" in r.text
        r = await http.get("/replay/v1/state")
        assert r.status_code == 200 and r.json()["bindings"] == []


@pytest.mark.parametrize("command", [["validate"], ["inspect", "--json"],
                                     ["override", "--at", "1", "--hang"]])
def test_non_finite_number_in_sidecar(scenario: Path, command: list[str]) -> None:
    (scenario / SIDE).write_text(json.dumps({"patches": [{"at": 0, "entry": {"kind": "chunks",
        "chunks": [{"type": "finish", "finishReason": "stop"}]}}]}, indent=1).replace(
            '"stop"', '"stop", "x": 1e999'))
    result = cli(*command, str(scenario))
    assert_typed_failure(result, None if command == ["validate"] else "SIDECAR_INVALID")
    out = result.stdout + result.stderr
    assert f"{SIDE}:10: $.patches[0].entry.chunks[0].x: the number 1e999 is not finite" in out
    if command[0] == "inspect":
        json.loads(result.stdout)  # JSON, never Infinity
    assert "session.jsonl" not in out


def test_non_finite_number_in_log_line(scenario: Path) -> None:
    line = _append_line(scenario / "session.jsonl", '{"type":"x","seq":99,"time":1e999}')
    for command in (["validate"], ["inspect", "--json"]):
        result = cli(*command, str(scenario))
        assert_typed_failure(result)
        assert (f"session.jsonl:{line}: $.time: the number 1e999 is not finite (it overflows a "
                "double); write a finite number.") in result.stdout + result.stderr


@pytest.mark.parametrize(("name", "text"), [("c.json", '{"paceMs": 1e999}'),
                                            ("c.json", '{"paceMs": NaN}'),
                                            ("c.toml", "paceMs = inf\n")])
def test_non_finite_number_in_config(scenario: Path, tmp_path: Path, name: str, text: str) -> None:
    config = tmp_path / name
    config.write_text(text)
    result = cli("serve", str(scenario), "--config", str(config))
    assert_typed_failure(result, "CONFIG")
    assert f"{name}: line 1: " in result.stderr and "finite number" in result.stderr


def test_non_finite_number_in_chunks_file(scenario: Path, tmp_path: Path) -> None:
    chunks = tmp_path / "chunks.json"
    chunks.write_text('[\n{"type":"finish","finishReason":"stop","x":-1e400}]')
    result = cli("override", str(scenario), "--at", "0", "--chunks-file", str(chunks))
    assert_typed_failure(result, "SIDECAR_INVALID")
    assert "chunks.json:2:1: the number -1e400 is not finite" in result.stderr


def test_deep_call_key_on_the_fast_path(scenario: Path) -> None:
    # The decoder takes 600 levels; reading the call key from them must not overflow either.
    turn = "[" * 600 + "1" + "]" * 600
    line = _append_line(scenario / "session.jsonl", '{"type":"assistant/chunk","seq":99,"time":1,'
                        '"data":{"turn":' + turn + ',"step":1,"chunk":{"type":"finish"}}}')
    for command in (["validate"], ["inspect", "--json"], ["inspect"]):
        result = cli(*command, str(scenario))
        assert_typed_failure(result)
        assert f"session.jsonl:{line}: the line is nested deeper than" in (
            result.stdout + result.stderr)


def test_unhashable_index_is_summarised(scenario: Path) -> None:
    (scenario / SIDE).write_text(json.dumps([{"kind": "chunks", "chunks": [
        {"type": "tool-call-delta", "index": {"a": 1}, "id": "c", "name": "t",
         "argumentsDelta": "{}"}, {"type": "finish", "reason": {"kind": "stop"}}]}]))
    result = cli("inspect", str(scenario))
    assert result.returncode == 0 and "tools: t" in result.stdout, result.stderr
