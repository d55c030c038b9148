"""Loading, ``validate`` and authoring read a log one way, whatever its generation: the lenient
authoring path keeps a v2+ call's recorded prefix, the unfinished-call error's quickest fix
loads, a v4 sidecar's ``accepted`` survives ``override``, a ``-0`` elsewhere on a line does
not refuse a run record, and hot reload watches every log name (the library's rule)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.headless.reload import is_scenario_file

from replay_engine import load_scenario
from replay_engine.authoring.unfinished import load_primary_for_authoring
from replay_engine.cli.dispatch import main
from replay_engine.errors import DerivationError
from replay_engine.scenario.check import check_scenario
from replay_engine.scenario.derive_fast import derive_log_bytes
from replay_engine.scenario.logcheck import check_log_bytes
from tests.conftest import conformance_gen_dir

SIDE = "replay.override.json"
START = {"type": "block-start", "index": 0, "blockType": "text"}
FIN = {"type": "finish", "reason": {"kind": "stop"}}
HEADER = {"type": "session", "version": 4, "id": "s1", "createdAt": 0}


def settlement(*records: Any, turn: int = 1, step: int = 1) -> dict[str, Any]:
    return {"type": "assistant/message", "data": {"turn": turn, "step": step,
                                                  "stream": list(records)}}


def chunk(c: Any, time: int = 1) -> dict[str, Any]:
    return {"type": "chunk", "time": time, "chunk": c}


def texts(*parts: str, index: Any = 0) -> dict[str, Any]:
    return {"type": "text-chunks", "time0": 5, "index": index, "dt": [1] * (len(parts) - 1),
            "texts": list(parts)}


def v4_scenario(root: Path, *events: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = [HEADER, *events]
    (root / "session.v4.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return root


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def quickest_fix(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Run the ``dsh-replay override`` command the unfinished-call error suggests."""
    with pytest.raises(DerivationError) as caught:
        load_scenario(root)
    problems, _ = check_scenario(str(root))
    assert caught.value.message in problems
    found = re.search(r"Quickest fix: dsh-replay (override SCENARIO --at \d+ --throw MESSAGE "
                      r"--code CODE)", caught.value.message)
    assert found is not None, caught.value.message
    argv = [{"SCENARIO": str(root), "MESSAGE": "connection reset", "CODE": "SERVER"}.get(a, a)
            for a in shlex.split(found.group(1))]
    code, out, err = cli(capsys, *argv)
    assert (code, err) == (0, ""), (out, err)
    return argv


# --- the lenient authoring path reads v2+ ------------------------------------------------------


def test_authoring_keeps_the_recorded_prefix_of_an_unfinished_v4_call(tmp_path: Path) -> None:
    root = v4_scenario(tmp_path / "s", settlement(chunk(START), texts("a", "b"), chunk(FIN)),
                       settlement(chunk(START), texts("par"), turn=2))
    loaded = load_primary_for_authoring(root / "session.v4.jsonl")
    assert loaded.unfinished == [1]
    assert [e.call_key for e in loaded.entries] == ["1/1", "2/1"]
    assert loaded.entries[1].entry.chunks == [  # type: ignore[union-attr]
        START, {"type": "text-delta", "index": 0, "text": "par"}]


def test_override_throw_on_a_v4_thrown_stream_writes_its_prefix_and_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = conformance_gen_dir()
    if corpus is None:
        pytest.skip("the generations corpus is absent")
    root = tmp_path / "thrown"
    shutil.copytree(corpus / "scenarios" / "spec-derive-thrown-stream", root)
    code, _, err = cli(capsys, "override", str(root), "--at", "0", "--throw", "boom",
                       "--code", "SERVER")
    assert (code, err) == (0, "")
    assert json.loads((root / SIDE).read_text()) == [{"kind": "throw", "chunks": [
        START, {"type": "text-delta", "index": 0, "text": "par"}], "message": "boom",
        "code": "SERVER"}]
    assert check_scenario(str(root)) == ([], [])
    assert load_scenario(root).sidecar_form == "list"


# --- the unfinished-call error's quickest fix loads ------------------------------------------


@pytest.mark.parametrize("generation", [0, 4])
def test_the_quickest_fix_of_an_unfinished_call_then_validates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], generation: int) -> None:
    root = tmp_path / "s"
    if generation:
        v4_scenario(root, settlement(chunk(START), texts("hi"), chunk(FIN)),
                    settlement(chunk(START), texts("cut"), turn=2))
    else:
        root.mkdir()
        events = [{"type": "assistant/chunk", "data": {"turn": t, "step": 1, "chunk": c}}
                  for t, c in ((1, START), (1, FIN), (2, START))]
        (root / "session.jsonl").write_text("".join(
            json.dumps(e) + "\n" for e in [{"type": "session", "id": "s"}, *events]))
    quickest_fix(root, capsys)
    assert check_scenario(str(root)) == ([], [])
    entries = load_scenario(root).scripts[0].entries
    assert [e.entry.kind for e in entries] == ["chunks", "throw"]
    assert entries[1].entry.message == "connection reset"  # type: ignore[union-attr]


def test_a_bare_list_replaces_an_unfinished_v2_primary_but_other_errors_remain(
        tmp_path: Path) -> None:
    root = v4_scenario(tmp_path / "s", settlement(chunk(START)))
    (root / SIDE).write_text(json.dumps([{"kind": "hang"}]))
    assert check_scenario(str(root)) == ([], [])
    assert [e.entry.kind for e in load_scenario(root).scripts[0].entries] == ["hang"]
    v4_scenario(root, settlement(chunk(START)), settlement(chunk("not an object")))
    problems, _ = check_scenario(str(root))
    assert len(problems) == 1 and "session.v4.jsonl:3: settlement stream record 0" in problems[0]


# --- accepted through override ----------------------------------------------------------------


@pytest.mark.parametrize("form", ["patches", "list"])
def test_override_keeps_accepted_in_a_v4_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    root = v4_scenario(tmp_path / "s", settlement(chunk(START), texts("x"), chunk(FIN)))
    throw = {"kind": "throw", "chunks": [], "message": "m", "code": "RATE_LIMIT",
             "accepted": True}
    doc: Any = {"patches": [{"at": 0, "entry": throw}]} if form == "patches" else [throw]
    (root / SIDE).write_text(json.dumps(doc))
    code, out, err = cli(capsys, "override", str(root), "--append", "--hang", "--dry-run")
    assert (code, err) == (0, ""), err
    assert '"accepted": true' in out
    assert cli(capsys, "override", str(root), "--append", "--hang")[0] == 0
    saved = json.loads((root / SIDE).read_text())
    kept = saved["patches"][0]["entry"] if form == "patches" else saved[0]
    assert kept == throw
    assert check_scenario(str(root)) == ([], [])
    entry = load_scenario(root).scripts[0].entries[0].entry
    assert entry.accepted is True  # type: ignore[union-attr]


# --- -0: only the run record's own index counts -------------------------------------------------


def _log(*events: Any, raw_index: str = "0") -> bytes:
    text = "".join(json.dumps(e) + "\n" for e in [HEADER, *events])
    return text.replace('"index": "RAW"', f'"index": {raw_index}').encode()


def test_a_negative_zero_in_a_chunk_does_not_refuse_a_run_record_of_index_0() -> None:
    data = _log(settlement(chunk({"type": "block-start", "index": "RAW", "blockType": "text"}),
                           texts("ok"), chunk(FIN)), raw_index="-0")
    loaded = derive_log_bytes(data, "session.v4.jsonl").entries
    assert [e.entry.chunks for e in loaded] == [[  # type: ignore[union-attr]
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "ok"}, FIN]]
    assert check_log_bytes(data, "session.v4.jsonl").calls == 1


@pytest.mark.parametrize("raw_index", ["-0", "-0.0"])
def test_a_run_record_written_with_index_negative_zero_is_refused(raw_index: str) -> None:
    data = _log(settlement(chunk(START), texts("x", index="RAW"), chunk(FIN)),
                raw_index=raw_index)
    for run in (lambda: derive_log_bytes(data, "session.v4.jsonl"),
                lambda: check_log_bytes(data, "session.v4.jsonl")):
        with pytest.raises(Exception, match="session.v4.jsonl:2: settlement stream record 1: "
                           "index must be a non-negative safe integer"):
            run()


# --- hot reload ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "watched"), [
    ("session.jsonl", True), ("session.2.jsonl", True), ("session.v4.jsonl", True),
    ("session.1.v7.jsonl", True), (SIDE, True), ("session.v0.jsonl", False), ("notes.md", False),
    ("session.expected.jsonl", False),
])
def test_hot_reload_watches_every_log_name(name: str, watched: bool) -> None:
    assert is_scenario_file(name) is watched


# --- a v4 stream read fast equals the exact rules, for loading and validate alike --------------

_INDEXES = ["0", "3", "-0", "-0.0", "2.0", "-1", '"1"', "9007199254740992", "1e999"]
_GAPS = ["1", "0", "-5", str(2**32), str(2**32 + 1), "1.5", "1e999", str(2**53)]
_CHUNKS = [json.dumps(START), json.dumps(FIN), '{"type":"text-delta","index":0,"text":5}',
           '{"type":"usage","usage":{"n":1}}', '{"type":"finish","replayState":{"a":[1]}}',
           '{"type":"finish","extra":1}', '{"type":"usage","usage":{"n":' + "9" * 320 + "}}",
           '{"type":"usage","usage":' + "[" * 8 + "]" * 8 + "}", '"text"', "null",
           '{"type":"block-end","index":0,"block":{"t":1e300}}']


def _record(draw: Any) -> str:
    from hypothesis import strategies as st

    kind = draw(st.sampled_from(["chunk", "text-chunks", "tool-call-chunks", "odd"]))
    if kind == "chunk":
        return f'{{"type":"chunk","time":{draw(st.sampled_from(["1", "2.0", "-3"]))},' \
               f'"chunk":{draw(st.sampled_from(_CHUNKS))}}}'
    if kind == "odd":
        return draw(st.sampled_from(['{"type":"zz"}', "[]", '{"type":"chunk","time":1}']))
    members = draw(st.integers(1, 4))
    gaps = ",".join(draw(st.sampled_from(_GAPS)) for _ in range(members - 1 + draw(
        st.sampled_from([0, 0, 0, 1]))))
    time0 = draw(st.sampled_from(["5", str(2**53 - 3), "-7"]))
    payload = json.dumps(["x"] * members)
    tail = f'"texts":{payload}' if kind == "text-chunks" else f'"id":"c","args":{payload}'
    return (f'{{"type":"{kind}","time0":{time0},"index":{draw(st.sampled_from(_INDEXES))},'
            f'"dt":[{gaps}],{tail}}}')


def _outcome(run: Any) -> Any:
    try:
        return ("ok", run())
    except Exception as exc:  # noqa: BLE001 (the typed errors are compared as they read)
        return (type(exc).__name__, str(exc))


def test_fast_and_exact_settlement_readings_agree() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from replay_engine.scenario.streams import expand_stream

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: Any) -> None:
        records = [_record(data.draw) for _ in range(data.draw(st.integers(1, 4)))]
        line = '{"type":"assistant/message","data":{"turn":1,"step":1,"stream":[' + \
            ",".join(records) + "]}}"
        log = (json.dumps(HEADER) + "\n" + line + "\n").encode()
        loaded = _outcome(lambda: [e.entry.chunks for e in  # type: ignore[union-attr]
                                   derive_log_bytes(log, "session.v4.jsonl", lenient=True).entries])
        checked = _outcome(lambda: check_log_bytes(log, "session.v4.jsonl").calls)
        exact = _outcome(lambda: expand_stream(json.loads(line)["data"]["stream"],
                                               "session.v4.jsonl", 2, "1/1", line.encode())[0])
        if loaded[0] == "ok":
            assert exact[0] == "ok" and loaded[1] == ([exact[1]] if exact[1] else [])
            unfinished = bool(exact[1]) and exact[1][-1].get("type") != "finish"
            assert (checked[0] == "DerivationError") if unfinished else (
                checked == ("ok", len(loaded[1])))
        else:
            assert checked == loaded, (checked, loaded)

    check()
