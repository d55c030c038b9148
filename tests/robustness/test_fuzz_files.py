"""Seeded fuzz of session logs and sidecars through the CLI and the server.

Each case mutates the basic-chat sample (a log line or the sidecar: deep nesting, numbers
past double range, lone surrogates, values of the wrong type, broken JSON and bytes, files
that are not files) and checks: no command raises past the dispatcher, a failure is exit 1
with an error code, ``validate`` says ok exactly when ``inspect`` loads, and whatever loads
is served on every route without a 500 (a reload onto what does not load answers 409).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.cli.dispatch import main
from replay_engine.server import serve_scenario

from .conftest import SAMPLE
from .test_surrogates import ROUTES

CLI_CASES = 300
WIRE_CASES = 40
SIDE = "replay.override.json"

NASTY: list[Any] = [
    None, True, 0, -1, 2**53, 2**80, 1.5, "", "x", "\ud83d", "a\udc00b", "\u2028", [], {},
    [1, 2], {"type": "finish"}, {"kind": "hang"}, "{{fromRequest:(a+)+$}}",
]
RAW_NASTY = ["1e999", "-1e400", "NaN", "Infinity", '"\\ud83d"', '"\\udfff\\ud800"',
             "[" * 600 + "]" * 600, '{"a":' * 300 + "1" + "}" * 300, "[" * 200 + "]" * 200,
             '"\\u0000"', "01", "1.", '"\t"', "tru"]
BYTE_NASTY = [b"\xff\xfe", b"\xed\xa0\xbd", b"\xef\xbb\xbf", b"\x00", b"\r", b"\x85", b"{", b"}"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate_json(rng: random.Random, value: Any) -> str:
    """The JSON text of ``value`` with one spot replaced by something nasty."""
    paths = _paths(value)
    target = rng.choice(paths)
    marker = "\u0001MARK\u0001"
    if not target:
        value = marker
    else:
        holder = value
        for part in target[:-1]:
            holder = holder[part]
        holder[target[-1]] = marker
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    quoted = json.dumps(marker, ensure_ascii=False) if marker in text else json.dumps(marker)
    quoted = quoted if quoted in text else json.dumps(marker, ensure_ascii=True)
    if rng.random() < 0.5:
        replacement = rng.choice(RAW_NASTY)
    else:
        replacement = json.dumps(rng.choice(NASTY))
    return text.replace(quoted, replacement, 1)


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        return data[:at] + rng.choice(BYTE_NASTY) + data[at:]
    return data[:at] + data[at + rng.randrange(1, 8):]


def _write_case(rng: random.Random, root: Path) -> None:
    """Turn the copied sample at ``root`` into one fuzz case."""
    log = root / "session.jsonl"
    lines = log.read_bytes().split(b"\n")
    what = rng.random()
    if what < 0.45:  # one log line
        i = rng.randrange(len(lines) - 1)
        if rng.random() < 0.75:
            lines[i] = _mutate_json(rng, json.loads(lines[i])).encode("utf-8", "surrogatepass")
        else:
            lines[i] = _mutate_bytes(rng, lines[i])
        log.write_bytes(b"\n".join(lines))
    elif what < 0.9:  # the sidecar
        doc: Any = {"patches": [{"at": 0, "entry": {"kind": "chunks", "chunks": [
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "finish", "reason": {"kind": "stop"}}]}},
            {"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "m", "code": "C"}}]}
        if rng.random() < 0.3:
            doc = [doc["patches"][0]["entry"], {"kind": "hang", "readyFile": "r"}]
        if rng.random() < 0.75:
            (root / SIDE).write_bytes(_mutate_json(rng, doc).encode("utf-8", "surrogatepass"))
        else:
            (root / SIDE).write_bytes(_mutate_bytes(rng, json.dumps(doc).encode()))
    else:  # a file that is not a file
        name = rng.choice([SIDE, "session.1.jsonl", "session.jsonl"])
        if (root / name).exists():
            (root / name).unlink()
        kind = rng.choice(["dir", "fifo", "loop", "dangling"])
        if kind == "dir":
            (root / name).mkdir()
        elif kind == "fifo":
            os.mkfifo(root / name)
        elif kind == "loop":
            (root / name).symlink_to(name)
        else:
            (root / name).symlink_to("nowhere")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("seed", range(CLI_CASES))
def test_cli_fuzz(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "s"
    shutil.copytree(SAMPLE, root)
    _write_case(random.Random(seed), root)
    code, out, err = _run(capsys, "validate", str(root))
    assert code in (0, 1) and "Traceback" not in out + err
    valid = code == 0
    code, out, err = _run(capsys, "inspect", "--json", str(root))
    doc = json.loads(out)
    assert (code == 0) == valid == doc["ok"], (out, err)
    code, out, err = _run(capsys, "inspect", str(root))
    assert (code == 0) == valid and "Traceback" not in out + err
    if not valid:
        assert doc["code"] and doc["error"]
        assert err.startswith(f"dsh-replay: error [{doc['code']}]: ")


@pytest.mark.anyio
async def test_wire_fuzz(tmp_path: Path) -> None:
    root = tmp_path / "s"
    shutil.copytree(SAMPLE, root)
    pristine = tmp_path / "pristine"
    shutil.copytree(SAMPLE, pristine)
    served = 0
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        for seed in range(WIRE_CASES):
            shutil.rmtree(root)
            shutil.copytree(pristine, root)
            _write_case(random.Random(1000 + seed), root)
            r = await http.post("/replay/v1/reload", json={})
            assert r.status_code in (200, 409), (seed, r.text)
            if r.status_code == 409:
                assert r.json()["code"]
                continue
            served += 1
            assert (await http.get("/replay/v1/scripts")).status_code == 200
            for path, stream in ROUTES:
                await http.post("/replay/v1/reset", json={})
                body: dict[str, Any] = {"model": "m", "max_tokens": 10,
                                        "messages": [{"role": "user", "content": "hi"}]}
                if path == "/v1/responses":
                    body = {"model": "m", "input": "hi"}
                if stream is not None:
                    body["stream"] = stream
                r = await http.post(path, json=body)
                assert r.status_code < 500, (seed, path, stream, r.text)
    assert served  # some cases load, so the routes were exercised
