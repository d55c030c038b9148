"""Persisted sessions (docs/format.md#persisted-sessions): concatenated zstd frames of the harness's session
store, opened directly as one-session scenarios by loading, ``validate``, ``inspect`` and ``serve``;
a torn last frame keeps its complete lines with a warning, a damaged frame is an error."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import zstandard

from replay_engine import ReplayError, load_scenario
from replay_engine.cli.dispatch import main as cli_main
from replay_engine.scenario.check import check_scenario
from replay_engine.server import serve_scenario

pytestmark = pytest.mark.anyio

FIN = {"type": "finish", "reason": {"kind": "stop"}}
HEADER = {"type": "session", "version": 4, "id": "persisted-1", "createdAt": 7}


def _call(text: str, step: int) -> dict[str, Any]:
    return {"type": "assistant/message", "data": {"turn": 1, "step": step, "stream": [
        {"type": "chunk", "time": 1, "chunk": {"type": "block-start", "index": 0,
                                                "blockType": "text"}},
        {"type": "text-chunks", "time0": 2, "index": 0, "dt": [], "texts": [text]},
        {"type": "chunk", "time": 3, "chunk": FIN}]}}


def _frame(*lines: Any) -> bytes:
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return zstandard.ZstdCompressor(write_checksum=True).compress(text)


def _store(root: Path, frames: list[bytes], name: str = "session.v4.jsonl.zstd") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_bytes(b"".join(frames))
    return path


def _texts(path: Path) -> list[str]:
    scripts = load_scenario(path).scripts
    return [e.entry.chunks[1]["text"] for e in scripts[0].entries]  # type: ignore[union-attr]


def test_a_session_of_frames_opens_as_a_file_or_its_directory(tmp_path: Path) -> None:
    path = _store(tmp_path / "store", [_frame(HEADER), _frame(_call("one", 1)),
                                       _frame(_call("two", 2), _call("three", 3))])
    assert _texts(path) == _texts(path.parent) == ["one", "two", "three"]
    scenario = load_scenario(path)
    assert scenario.scripts[0].recorded_id == "persisted-1" and scenario.warnings == []
    assert check_scenario(str(path)) == ([], [])


def test_the_highest_generation_of_the_store_is_read(tmp_path: Path) -> None:
    _store(tmp_path, [_frame({**HEADER, "version": 3}), _frame(_call("old", 1))],
           "session.v3.jsonl.zstd")
    _store(tmp_path, [_frame(HEADER), _frame(_call("new", 1))])
    assert _texts(tmp_path) == ["new"]


@pytest.mark.parametrize(("cut", "texts"), [
    (4, ["kept", "decoded", "whole"]),  # only the checksum is missing: every line decoded
    (12, ["kept"]),  # the block itself is cut: none of the torn batch is readable
])
def test_a_torn_last_frame_keeps_its_complete_lines_and_warns(tmp_path: Path, cut: int,
                                                             texts: list[str]) -> None:
    whole = [_frame(HEADER), _frame(_call("kept", 1))]
    torn = _frame(_call("decoded", 2), _call("whole", 3))
    path = _store(tmp_path, [*whole, torn[:-cut]])
    offset = sum(map(len, whole))
    scenario = load_scenario(path)
    assert _texts(path) == texts
    assert len(scenario.warnings) == 1 and f"at byte {offset}" in scenario.warnings[0]
    problems, warnings = check_scenario(str(path))
    assert problems == [] and warnings == scenario.warnings


def test_a_frame_that_fails_its_checksum_is_an_error_naming_the_offset(tmp_path: Path) -> None:
    first = _frame(HEADER)
    second = bytearray(_frame(_call("x", 1)))
    second[-1] ^= 0xFF  # the content checksum
    path = _store(tmp_path, [first, bytes(second)])
    with pytest.raises(ReplayError) as caught:
        load_scenario(path)
    assert f"the zstd frame at byte {len(first)} is damaged" in caught.value.message
    assert str(path) in caught.value.message
    assert caught.value.message in check_scenario(str(path))[0]


def test_cli_validate_and_inspect_open_a_persisted_file(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path, [_frame(HEADER), _frame(_call("hello", 1))])
    assert cli_main(["validate", str(path)]) == 0
    assert f"ok   {path}" in capsys.readouterr().out
    assert cli_main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "session.v4.jsonl.zstd (v4)" in out and "calls 1" in out


async def test_a_persisted_session_serves_a_real_openai_client_to_consumed(tmp_path: Path) -> None:
    path = _store(tmp_path, [_frame(HEADER), _frame(_call("hello", 1), _call("again", 2))])
    async with serve_scenario(path) as server:
        async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k",
                                      max_retries=0) as client:
            texts = []
            for _ in range(2):
                stream = await client.chat.completions.create(model="m", messages=[], stream=True)
                texts.append("".join([c.choices[0].delta.content or "" async for c in stream
                                      if c.choices]))
        assert texts == ["hello", "again"]
        assert server.engine.consumed_problems() == []


def test_thousands_of_frames_are_read_whole(tmp_path: Path) -> None:
    calls = [_frame(_call(f"c{i}", i)) for i in range(1, 3001)]
    path = _store(tmp_path, [_frame(HEADER), *calls])
    assert _texts(path) == [f"c{i}" for i in range(1, 3001)]
    assert check_scenario(str(path)) == ([], [])


def test_a_big_frame_after_small_ones_is_read_whole(tmp_path: Path) -> None:
    big = [_call("x" * 5000 + str(i), i) for i in range(1, 40)]
    path = _store(tmp_path, [_frame(HEADER), _frame(_call("a", 1)), _frame(*big),
                             _frame(_call("z", 99))])
    assert _texts(path) == ["a", *("x" * 5000 + str(i) for i in range(1, 40)), "z"]


def test_a_store_with_two_generations_says_which_was_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path, [_frame({**HEADER, "version": 3}), _frame(_call("old", 1))],
           "session.v3.jsonl.zstd")
    _store(tmp_path, [_frame(HEADER), _frame(_call("new", 1))])
    assert cli_main(["validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"ok   {tmp_path}", "  read session.v4.jsonl.zstd (v4)",
        "  ignored older generations: session.v3.jsonl.zstd (v3)"]
    assert cli_main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "session.v4.jsonl.zstd (v4)" in out
    assert "ignored older generations: session.v3.jsonl.zstd (v3)" in out
    assert [p.name for p in load_scenario(tmp_path).ignored] == ["session.v3.jsonl.zstd"]


def test_serve_warns_of_a_torn_last_frame_on_stderr_at_start_and_on_reload(
        tmp_path: Path) -> None:
    """``serve`` says what validate, inspect and the debugger say: the file and the byte offset
    of the torn frame, on a ``warning:`` line, once when it starts and again on each reload."""
    whole = [_frame(HEADER), _frame(_call("kept", 1))]
    path = _store(tmp_path, [*whole, _frame(_call("lost", 2))[:-12]])
    expected = f"warning: {path}: the last zstd frame (at byte {sum(map(len, whole))}) is torn"
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve", str(path),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert httpx.post(f"{url}/replay/v1/reload", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all(w.startswith(expected) for w in warnings), warnings
    assert "replay NOT consumed" in out


def test_a_persisted_session_has_no_sidecar_to_edit_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It said the scenario came from DSH_SNAPSHOT_FILE without DSH_SNAPSHOT_OVERRIDE: neither
    # was set, a persisted session was opened as a file.
    path = _store(tmp_path, [_frame(HEADER), _frame(_call("one", 1))])
    assert cli_main(["override", str(path), "--at", "0", "--hang"]) == 1
    said = capsys.readouterr().err
    assert f"{path}: a persisted session opened as a file has no replay.override.json" in said
    assert "DSH_SNAPSHOT_FILE" not in said
