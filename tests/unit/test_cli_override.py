"""``dsh-replay override``: every option writes the exact file the engine then serves; every bad
input exits 1 (input) or 2 (usage) with one clear message and leaves the files alone."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from replay_engine import load_scenario
from replay_engine.cli.dispatch import main
from replay_engine.statuscodes import known_throw_codes
from tests.unit.enginetools import Served, serve_scenario_calls, sidecar_bytes

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenarios"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private copy of basic-chat: 2 recorded calls of 10 and 6 chunks."""
    target = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", target)
    return target


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["override", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def derived(root: Path) -> list[dict[str, Any]]:
    scenario = load_scenario(root)
    assert scenario.derived_primary is not None
    return [e.to_json() for e in scenario.derived_primary]


def serve(root: Path, calls: int) -> Served:
    return asyncio.run(serve_scenario_calls(root, calls))


SIDE = "replay.override.json"


def test_throw_with_prefix(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = derived(root)
    code, out, err = run(capsys, str(root), "--at", "1", "--throw", "rate limited", "--code",
                         "RATE_LIMIT", "--prefix", "2")
    assert (code, err) == (0, "")
    assert (root / SIDE).read_bytes() == sidecar_bytes({"patches": [{"at": 1, "entry": {
        "kind": "throw", "chunks": d[1]["chunks"][:2], "message": "rate limited",
        "code": "RATE_LIMIT"}}]})
    assert f"wrote {root / SIDE} (patches form)" in out
    assert "* #1 1/2 throw  patched      2 chunks  finish=throw RATE_LIMIT" in out
    assert "    #0 1/1 chunks derived     10 chunks" in out
    assert "chunks vs derived: 2 kept, 4 removed, 0 added" in out
    assert serve(root, 2) == [(d[0]["chunks"], None), (d[1]["chunks"][:2], "RATE_LIMIT")]


def test_throw_default_prefix_is_zero(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(root), "--at", "0", "--throw", "denied", "--code", "AUTH")[0] == 0
    assert json.loads((root / SIDE).read_text())["patches"][0]["entry"]["chunks"] == []
    assert serve(root, 2)[0] == ([], "AUTH")


def test_hang_with_ready_file_and_append(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = derived(root)
    assert run(capsys, str(root), "--at", "1", "--throw", "boom", "--code", "SERVER")[0] == 0
    code, out, _ = run(capsys, str(root), "--append", "--hang", "--ready-file", "waiting")
    assert code == 0
    assert "previous file kept as replay.override.json.bak" in out
    assert "* #2 hang   appended     0 chunks  finish=hang  hangs until cancelled (readyFile " \
           "waiting)" in out
    assert (root / SIDE).read_bytes() == sidecar_bytes({"patches": [
        {"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "boom", "code": "SERVER"}},
        {"at": 2, "entry": {"kind": "hang", "readyFile": "waiting"}},
    ]})
    assert json.loads((root / (SIDE + ".bak")).read_text())["patches"][0]["at"] == 1
    served = serve(root, 3)
    assert served[:2] == [(d[0]["chunks"], None), ([], "SERVER")]
    assert [c["type"] for c in served[2][0]] == ["block-start", "text-delta"]
    assert served[2][1] == "ABORTED" and (root / "waiting").exists()


def test_hang_without_ready_file(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(root), "--at", "0", "--hang")[0] == 0
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        {"patches": [{"at": 0, "entry": {"kind": "hang"}}]})


@pytest.mark.parametrize("as_entry", [False, True])
def test_chunks_file(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     as_entry: bool) -> None:
    chunks = [{"type": "block-start", "index": 0, "blockType": "text"},
              {"type": "text-delta", "index": 0, "text": "Edited reply"},
              {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"k": [1]}}]
    source = tmp_path / "chunks.json"
    source.write_text(json.dumps({"kind": "chunks", "chunks": chunks} if as_entry else chunks))
    code, out, _ = run(capsys, str(root), "--at", "1", "--chunks-file", str(source))
    assert code == 0 and f"call 1 set from {source}" in out
    assert (root / SIDE).read_bytes() == sidecar_bytes(
        {"patches": [{"at": 1, "entry": {"kind": "chunks", "chunks": chunks}}]})
    assert serve(root, 2)[1] == (chunks, None)


def test_remove(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = derived(root)
    run(capsys, str(root), "--at", "0", "--hang")
    code, out, _ = run(capsys, str(root), "--remove", "0")
    assert code == 0 and "removed call 0" in out and "*" not in out.split("\n", 2)[2]
    assert (root / SIDE).read_bytes() == b'{\n  "patches": []\n}\n'
    assert serve(root, 2) == [(d[0]["chunks"], None), (d[1]["chunks"], None)]


def test_bare_list_stays_list(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / SIDE).write_text('[{"kind": "hang"}, {"kind": "hang"}]')
    assert run(capsys, str(root), "--at", "1", "--throw", "x", "--code", "SERVER")[0] == 0
    assert run(capsys, str(root), "--remove", "0")[0] == 0
    code, out, _ = run(capsys, str(root), "--append", "--hang")
    assert code == 0 and "(list form" in out
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "throw", "chunks": [], "message": "x", "code": "SERVER"}, {"kind": "hang"}])


def test_dry_run_writes_nothing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "--at", "0", "--hang", "--dry-run")
    assert code == 0 and "dry run: call 0 hangs" in out and '"kind": "hang"' in out
    assert not (root / SIDE).exists()


def test_same_content_twice_writes_nothing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, str(root), "--at", "0", "--hang")
    code, out, _ = run(capsys, str(root), "--at", "0", "--hang")
    assert code == 0 and "already holds this content, nothing written" in out
    assert not (root / (SIDE + ".bak")).exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hang"], "say which call: --at N or --append"),
        (["--at", "0"], "say what the call does"),
        (["--at", "0", "--append", "--hang"], "not allowed with argument"),
        (["--at", "0", "--hang", "--throw", "x", "--code", "C"], "not allowed with argument"),
        (["--at", "0", "--throw", "x"], "--throw needs --code CODE"),
        (["--at", "0", "--hang", "--code", "C"], "--code and --prefix go with --throw"),
        (["--at", "0", "--hang", "--prefix", "1"], "--code and --prefix go with --throw"),
        (["--at", "0", "--throw", "x", "--code", "C", "--ready-file", "f"],
         "--ready-file goes with --hang"),
        (["--remove", "0", "--hang"], "--remove N takes no other option"),
        (["--remove", "0", "--at", "1"], "not allowed with argument"),
        (["--at", "one", "--hang"], "invalid int value"),
        (["--at", "0", "--throw", "x", "--code", "C", "--prefix", "two"], "invalid int value"),
    ],
)
def test_usage_errors_exit_2(root: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                             message: str) -> None:
    code, out, err = run(capsys, str(root), *argv)
    assert code == 2 and out == ""
    assert message in err and "usage: dsh-replay override SCENARIO" in err
    assert not (root / SIDE).exists()


def test_missing_scenario_argument_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys)[0] == 2


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--at", "2", "--hang"], None),  # the append slot via --at is fine
        (["--at", "3", "--hang"], r"\[OVERRIDE_EDIT\]: .*: call 3 does not exist: the derived "
                                  r"primary script has 2 call\(s\); choose 0\.\.1 to replace a "
                                  r"call or 2 to append one\."),
        (["--at", "-1", "--hang"], r"call -1 does not exist"),
        (["--at", "1", "--throw", "x", "--code", "C", "--prefix", "7"],
         r"prefix 7 is out of range: call 1 has 6 recorded chunk\(s\); keep 0\.\.6"),
        (["--at", "1", "--throw", "x", "--code", "C", "--prefix", "-2"], r"prefix -2 is out"),
        (["--at", "1", "--throw", "", "--code", "C"], r"call 1\.message: must be a non-empty"),
        (["--at", "1", "--throw", "x", "--code", ""], r"call 1\.code: must be a non-empty"),
        (["--at", "1", "--hang", "--ready-file", ""], r"call 1\.readyFile"),
        (["--remove", "1"], r"call 1 is not patched, so there is nothing to remove "
                            r"\(patched calls: none\)"),
    ],
)
def test_input_errors_exit_1(root: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                             pattern: str | None) -> None:
    code, out, err = run(capsys, str(root), *argv)
    if pattern is None:
        assert code == 0
        return
    assert code == 1 and out == ""
    assert err.startswith("dsh-replay: error [")
    assert re.search(pattern, err), err
    assert "Traceback" not in err
    assert not (root / SIDE).exists()


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (None, r"\[INPUT\]: .*missing\.json: no such file"),
        ('[\n  {"type": "finish"},\n', r"chunks\.json:3:1: not valid JSON"),
        ('[{"type": "finish"},\n {"type": "wat"}]', r"chunks\.json:2:2: \[1\]: chunk type 'wat'"),
        ('{"kind": "throw", "chunks": []}', r"chunks\.json:1:1: message: missing"),
        ('{"kind": "chunks", "chunks": [], "x": 1}', r"chunks\.json:1:39: x: unknown key"),
        (b"\xff\xfe", r"not UTF-8"),
    ],
)
def test_bad_chunks_file(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         content: str | bytes | None, pattern: str) -> None:
    name = tmp_path / ("missing.json" if content is None else "chunks.json")
    if isinstance(content, bytes):
        name.write_bytes(content)
    elif content is not None:
        name.write_text(content)
    code, _, err = run(capsys, str(root), "--at", "0", "--chunks-file", str(name))
    assert code == 1
    assert re.search(pattern, err), err
    assert not (root / SIDE).exists()


def test_second_append_in_patches_form(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(root), "--append", "--hang")[0] == 0
    code, _, err = run(capsys, str(root), "--append", "--hang")
    assert code == 1 and "call 2 is already appended" in err


def test_scenario_problems_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope"), "--at", "0", "--hang")
    assert code == 1 and "[SCENARIO_NOT_FOUND]" in err and "no such scenario directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, str(empty), "--at", "0", "--hang")
    assert code == 1 and "primary session log is missing" in err
    assert not (empty / SIDE).exists()


def test_chunks_file_with_many_problems_lists_fifty(root: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    name = tmp_path / "many.json"
    name.write_text("[\n" + ",\n".join(["7"] * 80) + "\n]\n", encoding="utf-8")
    before = sorted(p.name for p in root.iterdir())
    code, out, err = run(capsys, str(root), "--at", "0", "--chunks-file", str(name))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"dsh-replay: error [SIDECAR_INVALID]: {name}:2:1: [0]: a chunk must be a " \
                       "JSON object"
    assert lines[49] == f"{name}:51:1: [49]: a chunk must be a JSON object"
    assert lines[50] == "… and 30 more problems"
    assert len(lines) == 52 and lines[51].startswith("Give a list of chunks")
    assert sorted(p.name for p in root.iterdir()) == before


def test_invalid_existing_sidecar_is_reported_and_kept(root: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (root / SIDE).write_text('{"patches": [{"at": 9, "entry": {"kind": "hang"}}]}')
    code, _, err = run(capsys, str(root), "--at", "0", "--hang")
    assert code == 1 and "patch 0.at: 9 is past the end" in err
    assert (root / SIDE).read_text() == '{"patches": [{"at": 9, "entry": {"kind": "hang"}}]}'


def test_unwritable_sidecar_path(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / SIDE).mkdir()  # a directory where the file should be: refused before any write
    code, out, err = run(capsys, str(root), "--at", "0", "--hang")
    assert code == 1 and out == ""
    assert "[SIDECAR_INVALID]" in err and "the sidecar is a directory" in err
    assert sorted(p.name for p in root.iterdir()) == [SIDE, "session.jsonl"]


def test_an_unknown_throw_code_is_written_with_a_warning_listing_the_known_ones(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(root), "--at", "0", "--throw", "slow down", "--code",
                         "RATE_LIMT")
    assert code == 0 and f"wrote {root / SIDE}" in out
    (warning,) = err.splitlines()
    assert warning == ("dsh-replay: warning: throw code 'RATE_LIMT' is not a known code, so it "
                       "is served as HTTP 500; the known codes are " + known_throw_codes())
    assert "RATE_LIMIT (429)" in warning and "HTTP_<n> (n, 400..599)" in warning
    assert serve(root, 2)[0] == ([], "RATE_LIMT")  # written as asked: the warning is the news
    assert run(capsys, str(root), "--at", "0", "--throw", "slow down", "--code",
               "RATE_LIMIT")[2] == ""  # a known code: no warning
