"""``dsh-replay override`` on a scenario whose primary call never finished: it writes the bare list
that makes the scenario load (exact bytes), refuses while a call stays undecided, and the engine
then serves the decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from replay_engine import load_scenario
from replay_engine.errors import DerivationError
from tests.unit.enginetools import sidecar_bytes
from tests.unit.logtools import call_events, header, text_chunks, write_scenario
from tests.unit.test_authoring_unfinished import AGA, HI, START, serve
from tests.unit.test_cli_override import run

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenarios"
SIDE = "replay.override.json"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private copy of broken-unfinished-call: call 0 (1/1) finished, call 1 (1/2) cut off."""
    target = tmp_path / "broken-unfinished-call"
    shutil.copytree(SAMPLES / "broken-unfinished-call", target)
    return target


def test_throw_keeps_the_cut_stream_by_default(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(root), "--at", "1", "--throw", "connection reset",
                         "--code", "SERVER")
    assert (code, err) == (0, "")
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI},
        {"kind": "throw", "chunks": AGA, "message": "connection reset", "code": "SERVER"}])
    assert out.splitlines()[:2] == [
        f"call 1 throws SERVER; wrote {root / SIDE} (list form)",
        "the log's call(s) #1 (1/2) never finished while recorded, so the sidecar is a bare list "
        "replacing the whole primary script",
    ]
    assert "* #1 throw  replaced     2 chunks  finish=throw SERVER" in out
    assert load_scenario(root).sidecar_form == "list"
    assert serve(root, 2) == [(HI, None), (AGA, "SERVER")]


def test_a_later_edit_compares_with_the_recorded_calls(root: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Once the bare list exists the scenario loads; an edit after that (the retry slot)
    still compares each call with the log, so only the calls that differ are marked."""
    assert run(capsys, str(root), "--at", "1", "--throw", "connection reset",
               "--code", "SERVER")[0] == 0
    retry = tmp_path / "retry.json"
    retry.write_text(json.dumps(HI))
    code, out, err = run(capsys, str(root), "--append", "--chunks-file", str(retry))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == ("the log's call(s) #1 (1/2) never finished while recorded, so the sidecar "
                        "is a bare list replacing the whole primary script")
    assert lines[3].startswith("    #0 chunks replaced     4 chunks  finish=stop  Hi.")
    assert lines[4].startswith("  * #1 throw  replaced     2 chunks  finish=throw SERVER")
    assert lines[5] == "        kind chunks -> throw; message 'connection reset'; code 'SERVER'"
    assert lines[6].startswith("  * #2 chunks replaced     4 chunks  finish=stop  Hi.")
    assert lines[7:] == ["        added"]


@pytest.mark.parametrize(("prefix", "kept"), [("0", []), ("1", [START])])
def test_throw_with_explicit_prefix(root: Path, capsys: pytest.CaptureFixture[str], prefix: str,
                                    kept: list[dict[str, Any]]) -> None:
    assert run(capsys, str(root), "--at", "1", "--throw", "m", "--code", "RATE_LIMIT",
               "--prefix", prefix)[0] == 0
    assert json.loads((root / SIDE).read_text())[1]["chunks"] == kept
    assert serve(root, 2)[1] == (kept, "RATE_LIMIT")


def test_prefix_past_the_recorded_chunks(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(root), "--at", "1", "--throw", "m", "--code", "X",
                         "--prefix", "3")
    assert (code, out) == (1, "")
    assert "prefix 3 is out of range: call 1 has 2 recorded chunk(s); keep 0..2" in err
    assert not (root / SIDE).exists()


def test_hang_with_ready_file(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(root), "--at", "1", "--hang", "--ready-file", "waiting")[0] == 0
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI}, {"kind": "hang", "readyFile": "waiting"}])
    assert serve(root, 2) == [(HI, None), ([], "ABORTED")]


def test_chunks_file_with_a_finish(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = [*AGA, {"type": "finish", "reason": {"kind": "error", "code": "SERVER"}}]
    source = tmp_path / "fixed.json"
    source.write_text(json.dumps(chunks))
    assert run(capsys, str(root), "--at", "1", "--chunks-file", str(source))[0] == 0
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI}, {"kind": "chunks", "chunks": chunks}])
    assert serve(root, 2) == [(HI, None), (chunks, None)]


def test_refused_while_the_unfinished_call_is_undecided(root: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("--at", "0", "--throw", "denied", "--code", "AUTH"), ("--append", "--hang"),
                 ("--at", "0", "--hang", "--dry-run")):
        code, out, err = run(capsys, str(root), *argv)
        assert (code, out) == (1, "")
        assert err == (
            f"dsh-replay: error [UNDECIDED_CALL]: {root / SIDE}: not saved: call #1 (model call "
            "1/2, log lines 9-10) of the primary log never finished while recorded and is not "
            "decided yet. Make each one throw or hang (e.g. dsh-replay override SCENARIO --at 1 "
            "--throw MESSAGE --code CODE, or --hang), or give it chunks that end with a finish "
            "chunk.\n")
    assert sorted(p.name for p in root.iterdir()) == ["session.jsonl"]
    with pytest.raises(DerivationError):
        load_scenario(root)


def test_repeated_at_decides_several_unfinished_calls(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cut_a = [START, {"type": "text-delta", "index": 0, "text": "a"}]
    write_scenario(tmp_path, (header("p"), call_events(1, 1, cut_a)
                              + call_events(2, 1, text_chunks("b")) + call_events(2, 2, [START])))
    code, _, err = run(capsys, str(tmp_path), "--at", "0", "--throw", "m", "--code", "X")
    assert code == 1 and "call #2 (model call 2/2, log lines 8-8)" in err
    code, out, err = run(capsys, str(tmp_path), "--at", "0", "--at", "2", "--at", "0",
                         "--throw", "reset", "--code", "SERVER")
    assert (code, err) == (0, "")
    assert out.startswith("calls 0, 2 throw SERVER; wrote ")
    assert (tmp_path / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "throw", "chunks": cut_a, "message": "reset", "code": "SERVER"},
        {"kind": "chunks", "chunks": text_chunks("b")},
        {"kind": "throw", "chunks": [START], "message": "reset", "code": "SERVER"}])
    assert serve(tmp_path, 3) == [(cut_a, "SERVER"), (text_chunks("b"), None), ([START], "SERVER")]
    # The scenario now loads: a later edit works on the bare list as usual.
    assert run(capsys, str(tmp_path), "--at", "2", "--hang")[0] == 0
    assert json.loads((tmp_path / SIDE).read_text())[2] == {"kind": "hang"}


def test_remove_of_the_unfinished_call_drops_it(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "--remove", "1")
    assert code == 0 and out.startswith("removed call 1; wrote ")
    assert (root / SIDE).read_bytes() == sidecar_bytes([{"kind": "chunks", "chunks": HI}])
    assert serve(root, 1) == [(HI, None)]


def test_several_at_need_an_action(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(root), "--at", "1", "--at", "0")
    assert code == 2 and "say what the call does" in err
    assert not (root / SIDE).exists()
