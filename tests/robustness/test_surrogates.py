"""Lone surrogate escapes (``"\\ud83d"``), which ``JSON.parse`` accepts: loaded from logs and
sidecars, printed by the CLI as the same escape, saved back losslessly, and served on every
route as a JSON escape (never a 500)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import text_entry

from .conftest import assert_typed_failure, cli

SIDE = "replay.override.json"
TEXT = "lone \ud83d here"


def _sidecar(scenario: Path, calls: int = 1) -> None:
    (scenario / SIDE).write_text(json.dumps([text_entry(TEXT)] * calls), encoding="utf-8")
    assert "\\ud83d" in (scenario / SIDE).read_text()


def _texts(doc: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [t for v in doc.values() for t in _texts(v)]
    if isinstance(doc, list):
        return [t for v in doc for t in _texts(v)]
    return []


def test_sidecar_surrogate_survives_inspect_and_override(scenario: Path) -> None:
    _sidecar(scenario)
    for command in (["validate"], ["inspect"]):
        result = cli(*command, str(scenario))
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    result = cli("inspect", "--json", str(scenario))
    assert result.returncode == 0, result.stderr
    assert TEXT in _texts(json.loads(result.stdout))
    result = cli("override", str(scenario), "--at", "1", "--hang")
    assert result.returncode == 0, result.stderr
    saved = json.loads((scenario / SIDE).read_text(encoding="utf-8"))
    assert TEXT in _texts(saved)


def test_log_line_surrogate_loads(scenario: Path) -> None:
    log = scenario / "session.jsonl"
    lines = [json.dumps({"type": "assistant/chunk", "seq": 900 + i, "time": 1, "data": {
        "turn": 50, "step": 1, "chunk": chunk}}) for i, chunk in enumerate(text_entry(TEXT)["chunks"])]
    log.write_text(log.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")
    result = cli("validate", str(scenario))
    assert result.returncode == 0, result.stdout
    result = cli("inspect", "--json", str(scenario))
    assert result.returncode == 0, result.stderr
    assert TEXT in _texts(json.loads(result.stdout))


def test_log_line_with_bad_json_beside_a_surrogate_is_still_a_parse_error(scenario: Path) -> None:
    log = scenario / "session.jsonl"
    log.write_text(log.read_text(encoding="utf-8") + '{"type":"x","t":"\\ud83d",}\n')
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert "not valid JSON" in result.stdout


ROUTES = [("/v1/chat/completions", True), ("/v1/chat/completions", False),
          ("/v1/responses", True), ("/v1/responses", False),
          ("/v1/messages", True), ("/v1/messages", False), ("/replay/v1/stream", None)]


@pytest.mark.anyio
async def test_every_route_serves_a_surrogate_as_an_escape(scenario: Path) -> None:
    _sidecar(scenario, len(ROUTES))
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        r = await http.get("/replay/v1/scripts")
        assert r.status_code == 200 and TEXT in _texts(r.json())
        for path, stream in ROUTES:
            body: dict[str, object] = {"model": "m", "max_tokens": 10,
                                       "messages": [{"role": "user", "content": "hi"}]}
            if path == "/v1/responses":
                body = {"model": "m", "input": "hi"}
            if stream is not None:
                body["stream"] = stream
            r = await http.post(path, json=body)
            assert r.status_code == 200, (path, stream, r.text)
            r.content.decode("utf-8")  # valid UTF-8 on the wire
            if stream is False:
                got = "".join(_texts(r.json()))
            else:
                got = "".join(t for line in r.text.splitlines()
                              if line.startswith(("data: {", "{"))
                              for t in _texts(json.loads(line.removeprefix("data: "))))
            assert "\ud83d" in got, (path, stream, r.text)


@pytest.mark.anyio
async def test_reload_onto_a_surrogate_sidecar_serves_it(scenario: Path) -> None:
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        _sidecar(scenario, 2)
        r = await http.post("/replay/v1/reload", json={})
        assert r.status_code == 200, r.text
        for _ in range(2):
            r = await http.post("/v1/chat/completions", json={
                "model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200 and "\ud83d" in "".join(_texts(r.json())), r.text


CONTROL_POSTS = ["/replay/v1/assert-consumed", "/replay/v1/reset", "/replay/v1/cancel",
                 "/replay/v1/step", "/replay/v1/pause", "/replay/v1/mode", "/replay/v1/reload"]


@pytest.mark.anyio
async def test_a_request_with_a_lone_surrogate_is_read_as_the_logs_read_it(scenario: Path) -> None:
    """The body follows the log rules: the escape is accepted, on every route, never a 400
    INVALID_JSON; the engine sees the surrogate itself."""
    _sidecar(scenario, len(ROUTES))
    lone = b'"say \\ud83d"'
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        for path, stream in ROUTES:
            if path == "/v1/responses":
                body = b'{"model":"m","input":' + lone
            else:
                body = b'{"model":"m","max_tokens":10,"messages":[{"role":"user","content":' \
                       + lone + b'}]'
            if stream is not None:
                body += b',"stream":' + (b"true" if stream else b"false")
            r = await http.post(path, content=body + b"}",
                                headers={"content-type": "application/json"})
            assert r.status_code == 200, (path, stream, r.text)
        records = server.engine.journal()
        assert len(records) == len(ROUTES)
        for path in CONTROL_POSTS:
            r = await http.post(path, content=b'{"note":' + lone + b'}',
                                headers={"content-type": "application/json"})
            assert "INVALID_JSON" not in r.text, (path, r.text)
            assert r.status_code < 500, (path, r.text)
        r = await http.post("/replay/v1/mode", content=b'{"mode":' + lone + b'}')
        assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_REQUEST", r.text
        assert "\\ud83d" in r.json()["error"]["message"]  # named as its escape
        r.content.decode("utf-8")


@pytest.mark.anyio
async def test_a_lone_surrogate_beside_bad_json_or_a_non_finite_number_is_still_refused(
        scenario: Path) -> None:
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        for body, said in [(b'{"a":"\\ud83d",}', "not valid JSON"),
                           (b'{"a":"\\ud83d","b":1e999}', "$.b: the number 1e999 is not finite"),
                           (b'{"a":"\\ud83d","b":NaN}', "$.b: NaN is not JSON"),
                           (b'{"b":1e999}', "$.b: the number 1e999 is not finite")]:
            r = await http.post("/v1/chat/completions", content=body)
            assert r.status_code == 400, (body, r.text)
            assert r.json()["error"]["code"] == "INVALID_JSON"
            assert said in r.json()["error"]["message"], r.text
        assert server.engine.journal() == []


@pytest.mark.anyio
async def test_a_throw_whose_message_and_code_hold_a_surrogate_loads_and_is_served(
        scenario: Path) -> None:
    (scenario / SIDE).write_text(json.dumps([
        {"kind": "throw", "chunks": [], "message": TEXT, "code": "E\ud83d"}] * 3),
        encoding="utf-8")
    result = cli("validate", str(scenario))
    assert result.returncode == 0, result.stdout
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        for path in ("/v1/chat/completions", "/v1/messages", "/v1/responses"):
            body = {"model": "m", "max_tokens": 5, "stream": False,
                    "messages": [{"role": "user", "content": "hi"}], "input": "hi"}
            r = await http.post(path, json=body)
            assert 400 <= r.status_code < 600, (path, r.text)
            r.content.decode("utf-8")
            assert TEXT in _texts(r.json()), (path, r.text)
