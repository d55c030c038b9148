"""What a log keeps obeys a sidecar's limits, so ``dsh-replay override`` can always write it:
a chunk nests at most ``MAX_CHUNK_DEPTH`` deep (a sidecar entry around it stays within
``MAX_JSON_DEPTH``), and a number no double holds (``1e999``, a 401-digit integer) is refused
alike in a log (every line kind, naming file, line and path), a sidecar and a request body."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayError, load_scenario
from replay_engine.cli.dispatch import main
from replay_engine.jsonlimits import MAX_CHUNK_DEPTH, MAX_JSON_DEPTH, SIDECAR_CHUNK_LEVELS, too_deep
from replay_engine.scenario.check import check_scenario
from replay_engine.scenario.derive_fast import derive_log_bytes
from replay_engine.scenario.logcheck import check_log_bytes
from replay_engine.server import serve_scenario

SIDE = "replay.override.json"
START = {"type": "block-start", "index": 0, "blockType": "text"}
FIN = {"type": "finish", "reason": {"kind": "stop"}}
HUGE = "1" * 401


def deep_usage(depth: int) -> str:
    """A usage chunk nested ``depth`` levels deep, the chunk object itself being level 1."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return '{"type":"usage","usage":' + inner + "}"


def v0_lines(*chunks: str, finished: bool = True) -> list[str]:
    head = '{"type":"session","id":"s","createdAt":1}'
    events = [f'{{"type":"assistant/chunk","data":{{"turn":1,"step":1,"chunk":{c}}}}}'
              for c in (json.dumps(START), *chunks, *([json.dumps(FIN)] if finished else []))]
    return [head, *events]


def v4_lines(*chunks: str, finished: bool = True) -> list[str]:
    head = '{"type":"session","version":4,"id":"s","createdAt":1}'
    records = [f'{{"type":"chunk","time":1,"chunk":{c}}}'
               for c in (json.dumps(START), *chunks, *([json.dumps(FIN)] if finished else []))]
    return [head, '{"type":"assistant/message","data":{"turn":1,"step":1,"stream":['
            + ",".join(records) + "]}}"]


def write(root: Path, lines: list[str], generation: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    name = f"session.v{generation}.jsonl" if generation else "session.jsonl"
    (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / name


def same_error(data: bytes, name: str) -> str:
    """Loading and validate refuse the log with the same message; that message."""
    with pytest.raises(ReplayError) as loaded:
        derive_log_bytes(data, name)
    with pytest.raises(ReplayError) as checked:
        check_log_bytes(data, name)
    assert checked.value.message == loaded.value.message
    return loaded.value.message


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# --- depth ----------------------------------------------------------------------------------


def test_the_chunk_limit_leaves_room_for_a_sidecar_around_it() -> None:
    assert MAX_CHUNK_DEPTH + SIDECAR_CHUNK_LEVELS == MAX_JSON_DEPTH
    patch = {"patches": [{"at": 0, "entry": {"kind": "chunks", "chunks": [
        json.loads(deep_usage(MAX_CHUNK_DEPTH))]}}]}
    assert not too_deep(json.dumps(patch))
    patch["patches"][0]["entry"]["chunks"] = [json.loads(deep_usage(MAX_CHUNK_DEPTH + 1))]
    assert too_deep(json.dumps(patch))


@pytest.mark.parametrize("generation", [0, 4])
def test_a_chunk_one_level_too_deep_is_refused_naming_line_and_path(tmp_path: Path,
                                                                   generation: int) -> None:
    build = v4_lines if generation else v0_lines
    name = f"session.v{generation}.jsonl" if generation else "session.jsonl"
    fits = ("\n".join(build(deep_usage(MAX_CHUNK_DEPTH))) + "\n").encode()
    assert len(derive_log_bytes(fits, name).entries) == check_log_bytes(fits, name).calls == 1
    deep = ("\n".join(build(deep_usage(MAX_CHUNK_DEPTH + 1))) + "\n").encode()
    where = "$.data.stream[1].chunk" if generation else "$.data.chunk"
    message = same_error(deep, name)
    assert message.startswith(f"{name}:{2 if generation else 3}: {where} is nested deeper than "
                              f"{MAX_CHUNK_DEPTH} levels")


@pytest.mark.parametrize("generation", [0, 4])
def test_the_quickest_fix_round_trips_a_chunk_at_the_limit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], generation: int) -> None:
    build = v4_lines if generation else v0_lines
    write(tmp_path, build(deep_usage(MAX_CHUNK_DEPTH), finished=False), generation)
    problems, _ = check_scenario(str(tmp_path))
    found = re.search(r"Quickest fix: dsh-replay (override SCENARIO --at \d+ --throw MESSAGE "
                      r"--code CODE)", problems[0])
    assert found is not None, problems
    argv = [{"SCENARIO": str(tmp_path), "MESSAGE": "cut", "CODE": "SERVER"}.get(a, a)
            for a in shlex.split(found.group(1))]
    assert cli(capsys, *argv)[0] == 0
    assert check_scenario(str(tmp_path)) == ([], [])
    (entry,) = load_scenario(tmp_path).scripts[0].entries
    assert entry.entry.chunks[1] == json.loads(deep_usage(MAX_CHUNK_DEPTH))  # type: ignore[union-attr]


def test_a_chunk_at_the_limit_fits_a_patch_too(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, v0_lines(), 0)
    chunks = tmp_path / "chunks.json"
    chunks.write_text(json.dumps([START, json.loads(deep_usage(MAX_CHUNK_DEPTH)), FIN]))
    code, _, err = cli(capsys, "override", str(tmp_path), "--at", "0", "--chunks-file", str(chunks))
    assert (code, err) == (0, "")
    assert json.loads((tmp_path / SIDE).read_text())["patches"][0]["at"] == 0
    assert check_scenario(str(tmp_path)) == ([], [])


# --- numbers no double holds ------------------------------------------------------------------


@pytest.mark.parametrize(("line", "where", "literal"), [
    ('{"type":"x","seq":1e999,"time":1}', "$.seq", "1e999"),
    ('{"type":"x","seq":1,"time":-1e999}', "$.time", "-1e999"),
    (f'{{"type":"x","seq":{HUGE},"time":1}}', "$.seq", HUGE),
    (f'{{"type":"assistant/chunk","seq":1,"time":{HUGE},"data":{{"turn":1,"step":1,'
     f'"chunk":{{"type":"finish"}}}}}}', "$.time", HUGE),
    ('{"type":"text-chunks","seq0":1e999,"time0":0,"data":{"turn":1,"step":1,"index":0,'
     '"dt":[],"texts":["a"]}}', "$.seq0", "1e999"),
    (f'{{"type":"assistant/chunk","data":{{"turn":1,"step":1,"chunk":{{"type":"usage",'
     f'"usage":{{"inputTokens":{HUGE}}}}}}}}}', "$.data.chunk.usage.inputTokens", HUGE),
    ("1e999", "$", "1e999"),
])
def test_a_v0_line_with_a_number_no_double_holds(line: str, where: str, literal: str) -> None:
    data = ('{"type":"session","id":"s"}\n' + line + "\n").encode()
    assert same_error(data, "session.jsonl") == (
        f"session.jsonl:2: {where}: the number {literal[:40]} is not finite (it overflows a "
        "double); write a finite number.")


@pytest.mark.parametrize(("line", "where", "literal"), [
    ('{"type":"x","seq":1e999,"time":1}', "$.seq", "1e999"),
    (f'{{"type":"x","seq":1,"time":{HUGE}}}', "$.time", HUGE),
    ('{"type":"assistant/message","seq":1,"time":2,"data":{"turn":1,"step":1,"stream":['
     f'{{"type":"chunk","time":1,"chunk":{{"type":"usage","usage":{{"n":{HUGE}}}}}}}]}}}}',
     "$.data.stream[0].chunk.usage.n", HUGE),
])
def test_a_v4_line_with_a_number_no_double_holds(line: str, where: str, literal: str) -> None:
    data = ('{"type":"session","version":4,"id":"s"}\n' + line + "\n").encode()
    assert same_error(data, "session.v4.jsonl") == (
        f"session.v4.jsonl:2: {where}: the number {literal[:40]} is not finite (it overflows a "
        "double); write a finite number.")


def test_a_header_with_a_number_no_double_holds() -> None:
    data = f'{{"type":"session","id":"s","createdAt":{HUGE}}}\n'.encode()
    assert same_error(data, "session.jsonl").startswith(
        "session.jsonl:1: $.createdAt: the number 1111")


def test_big_but_finite_numbers_still_load() -> None:
    big = "9" * 300  # beyond int64, within a double
    data = (f'{{"type":"session","id":"s"}}\n{{"type":"x","seq":{big},"time":1e300}}\n'
            f'{{"type":"assistant/chunk","time":{big},"data":{{"turn":1,"step":1,"chunk":'
            f'{{"type":"finish","n":{big}}}}}}}\n').encode()
    loaded = derive_log_bytes(data, "session.jsonl")
    assert check_log_bytes(data, "session.jsonl").calls == len(loaded.entries) == 1
    assert loaded.entries[0].entry.chunks[0]["n"] == int(big)  # type: ignore[union-attr]


def test_a_sidecar_with_a_401_digit_integer_names_line_and_path(tmp_path: Path) -> None:
    write(tmp_path, v0_lines(), 0)
    (tmp_path / SIDE).write_text('[\n {"kind": "chunks", "chunks": [{"type": "finish",\n'
                                 f' "n": {HUGE}}}]}}\n]')
    problems, _ = check_scenario(str(tmp_path))
    assert problems == [f"{tmp_path / SIDE}:3: $[0].chunks[0].n: the number {HUGE[:40]} is not "
                        "finite (it overflows a double); write a finite number."]


@pytest.mark.anyio
@pytest.mark.parametrize("body", [
    f'{{"model":"m","messages":[],"n":{HUGE}}}',
    '{"model":"m","messages":[],"n":1e999}',
    f'{{"model":"m","messages":[{{"role":"user","content":"\\ud800"}}],"n":{HUGE}}}',
    '{"model":"m","messages":[{"role":"user","content":"\\ud800"}],"n":1e999}',
])
async def test_a_request_with_a_number_no_double_holds_is_a_400_naming_where(
        tmp_path: Path, body: str) -> None:
    write(tmp_path, v0_lines(), 0)
    literal = HUGE[:40] if HUGE in body else "1e999"
    async with serve_scenario(tmp_path) as server, httpx.AsyncClient(base_url=server.url) as http:
        for path in ("/v1/chat/completions", "/replay/v1/stream", "/v1/messages"):
            r = await http.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, (path, r.text)
            assert (f"request body: $.n: the number {literal} is not finite (it overflows a "
                    "double)") in r.text, r.text
        assert (await http.get("/replay/v1/state")).json()["bindings"] == []

