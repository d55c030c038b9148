"""Authoring a sidecar for a primary log whose call never finished: the lenient derivation, the
bare-list draft over it, refusal while a call is undecided, and the engine serving the saved file."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from replay_engine import load_scenario
from replay_engine.authoring.draft import OverrideDraft
from replay_engine.authoring.unfinished import (
    load_primary_for_authoring,
    open_draft,
    open_unfinished_draft,
)
from replay_engine.errors import DerivationError, SidecarError
from replay_engine.models import ChunksEntry
from replay_engine.scenario.derive import Deriver, derive_replay_script
from replay_engine.scenario.derive_fast import load_log
from replay_engine.scenario.loading import config_from_directory
from replay_engine.scenario.logs import parse_session_log
from tests.conftest import conformance_dir
from tests.unit.enginetools import Served, serve_scenario_calls, sidecar_bytes
from tests.unit.logtools import call_events, finish, header, log_text, text_chunks, write_scenario

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenarios"
SIDE = "replay.override.json"
START = {"type": "block-start", "index": 0, "blockType": "text"}
HI = [START, {"type": "text-delta", "index": 0, "text": "Hi."},
      {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi."}},
      {"type": "finish", "reason": {"kind": "stop"}}]
"""Call 0 (1/1) of broken-unfinished-call, as recorded."""
AGA = [START, {"type": "text-delta", "index": 0, "text": "Aga"}]
"""What call 1 (1/2) streamed before it broke (log lines 9-10)."""


def delta(text: str) -> dict[str, Any]:
    return {"type": "text-delta", "index": 0, "text": text}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private copy of broken-unfinished-call."""
    target = tmp_path / "broken-unfinished-call"
    shutil.copytree(SAMPLES / "broken-unfinished-call", target)
    return target


def serve(root: Path, calls: int) -> Served:
    """Serve ``calls`` calls of a fresh load through a real engine (a hang is cancelled at once)."""
    return asyncio.run(serve_scenario_calls(root, calls, hang_prefix=0))


# -- strict loading is unchanged ----------------------------------------------------------


def test_strict_load_still_fails_and_names_the_override_command(root: Path) -> None:
    with pytest.raises(DerivationError) as caught:
        load_scenario(root)
    err = caught.value
    assert (err.code, err.call_key, err.line) == ("UNFINISHED_CALL", "1/2", 10)
    assert err.message.startswith(f"{root / 'session.jsonl'}:9-10: model call 1/2 (call #1 of the "
                                  "script) ended without a finish chunk")
    assert "replay.override.json sidecar holding a bare list" in err.message
    assert err.message.endswith("Quickest fix: dsh-replay override SCENARIO --at 1 --throw MESSAGE "
                                "--code CODE (or --hang) writes it, every other call as recorded.")
    assert not (root / SIDE).exists()


def test_child_error_does_not_suggest_the_override_command(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p"), call_events(1, 1, text_chunks("ok"))),
                   children=[(header("c"), call_events(1, 1, [START, delta("cut")]))])
    with pytest.raises(DerivationError) as caught:
        open_draft(tmp_path)  # the primary is fine: the child's error is not for a sidecar
    assert "applies only to the primary session" in caught.value.message
    assert "dsh-replay override" not in caught.value.message


def test_default_deriver_is_strict() -> None:
    deriver = Deriver("x.jsonl")
    deriver.chunk("1/1", START, 0, 2)
    with pytest.raises(DerivationError):
        deriver.finish()


# -- lenient derivation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "keys", "unfinished"),
    [
        (call_events(1, 2, [START, delta("x")]), ["1/2"], [0]),
        (call_events(1, 1, [finish()]) + call_events(1, 2, [delta("x")])
         + call_events(1, 3, [finish()]), ["1/1", "1/2", "1/3"], [1]),
        (call_events(1, 1, [delta("x")]) + [{"type": "compaction/summary", "data": {}}],
         ["1/1"], [0]),
        (call_events(4, 1, [finish(), delta("again")]), ["4/1", "4/1"], [1]),
        (call_events(1, 1, [delta("a")]) + call_events(1, 2, [delta("b")]), ["1/1", "1/2"], [0, 1]),
    ],
    ids=["at-end", "key-change", "before-compaction", "retry-without-finish", "two"],
)
def test_lenient_keeps_unfinished_calls(events: list[Any], keys: list[str], unfinished: list[int],
                                        tmp_path: Path) -> None:
    text = log_text(header(), events)
    path = tmp_path / "session.jsonl"
    path.write_text(text)
    loaded = load_primary_for_authoring(path)
    assert [e.call_key for e in loaded.entries] == keys
    assert loaded.unfinished == unfinished
    assert all(e.origin == "derived" for e in loaded.entries)
    deriver = Deriver("s.jsonl", lenient=True)
    for event in parse_session_log(text):
        if event.get("type") == "assistant/chunk":
            data = event["data"]
            deriver.chunk(f"{data['turn']}/{data['step']}", data["chunk"], event["time"], 0)
        else:
            deriver.compaction(event.get("data"), event.get("time"), 0)
    assert [e.to_json() for e in deriver.finish()] == [e.to_json() for e in loaded.entries]
    assert deriver.unfinished == unfinished
    with pytest.raises(DerivationError):
        derive_replay_script(parse_session_log(text))


def test_lenient_sample_keeps_recorded_chunks_lines_and_times(root: Path) -> None:
    loaded = load_primary_for_authoring(root / "session.jsonl")
    assert loaded.header.id == "broken-unfinished-call"
    assert [e.to_json() for e in loaded.entries] == [
        {"kind": "chunks", "chunks": HI}, {"kind": "chunks", "chunks": AGA}]
    assert loaded.unfinished == [1]
    assert [e.lines for e in loaded.entries] == [(4, 7), (9, 10)]
    assert [list(e.times or []) for e in loaded.entries][1] == [1767312011085, 1767312011095]


@pytest.mark.parametrize("name", ["basic-chat", "packed-rows", "compaction", "retry",
                                  "from-request", "nested-subagents"])
def test_lenient_equals_strict_loader_on_finished_logs(name: str) -> None:
    path = SAMPLES / name / "session.jsonl"
    strict = load_log(path)
    lenient = load_primary_for_authoring(path)
    assert lenient.unfinished == []
    assert lenient.header == strict.header
    assert [(e.to_json(), e.call_key, e.lines, e.times) for e in lenient.entries] == [
        (e.to_json(), e.call_key, e.lines, e.times) for e in strict.entries]


@pytest.mark.conformance
def test_lenient_equals_strict_loader_on_the_corpus() -> None:
    corpus = conformance_dir()
    if corpus is None:
        pytest.skip("conformance corpus absent (plain clone); set DSH_REPLAY_CONFORMANCE_DIR")
    compared = kept = 0
    for path in sorted(corpus.glob("scenarios/*/session.jsonl")):
        lenient = load_primary_for_authoring(path)
        try:
            strict = load_log(path)
        except DerivationError as exc:
            assert lenient.unfinished and lenient.entries[lenient.unfinished[0]].call_key == (
                exc.call_key)
            kept += 1
            continue
        assert lenient.unfinished == []
        assert [(e.to_json(), e.lines, e.times) for e in lenient.entries] == [
            (e.to_json(), e.lines, e.times) for e in strict.entries], path
        compared += 1
    assert compared > 100 and kept >= 1


# -- the draft --------------------------------------------------------------------------


def test_draft_opens_as_bare_list_with_the_unfinished_call_undecided(root: Path) -> None:
    draft = open_draft(root)
    assert draft.form == "list" and not draft.dirty
    assert draft.unfinished == (1,) and list(draft.undecided) == [1]
    assert [e.to_json() for e in draft.effective()] == [
        {"kind": "chunks", "chunks": HI}, {"kind": "chunks", "chunks": AGA}]
    assert (draft.default_prefix(0), draft.default_prefix(1)) == (0, 2)
    assert draft.derived_note is not None and "#1 (model call 1/2)" in draft.derived_note


def test_saving_is_refused_while_undecided(root: Path) -> None:
    draft = open_draft(root)
    draft.throw_here(0, "denied", "AUTH")  # another call decided: call 1 still is not
    for attempt in (draft.save, draft.validate):
        with pytest.raises(SidecarError) as caught:
            attempt()
        assert caught.value.code == "UNDECIDED_CALL"
        assert caught.value.message == (
            f"{root / SIDE}: not saved: call #1 (model call 1/2, log lines 9-10) of the primary "
            "log never finished while recorded and is not decided yet. Make each one throw or "
            "hang (e.g. dsh-replay override SCENARIO --at 1 --throw MESSAGE --code CODE, or "
            "--hang), or give it chunks that end with a finish chunk.")
    assert not (root / SIDE).exists()


def test_throw_at_unfinished_call_writes_exact_list_and_is_served(root: Path) -> None:
    draft = open_draft(root)
    draft.throw_here(1, "connection reset", "SERVER", draft.default_prefix(1))
    assert draft.undecided == {}
    saved = draft.save()
    assert saved.written and saved.backup is None
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI},
        {"kind": "throw", "chunks": AGA, "message": "connection reset", "code": "SERVER"}])
    scenario = load_scenario(root)
    assert scenario.sidecar_form == "list"
    assert serve(root, 2) == [(HI, None), (AGA, "SERVER")]


def test_hang_and_edited_chunks_decide_too(root: Path) -> None:
    draft = open_draft(root)
    draft.hang_here(1, "waiting")
    draft.save()
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI}, {"kind": "hang", "readyFile": "waiting"}])
    assert serve(root, 2) == [(HI, None), ([], "ABORTED")]


def test_any_entry_put_at_the_call_decides_it(root: Path) -> None:
    draft = open_draft(root)
    draft.put(1, ChunksEntry(chunks=AGA))  # serve the cut stream as is: an explicit choice
    assert draft.undecided == {}
    draft.save()
    assert serve(root, 2) == [(HI, None), (AGA, None)]
    draft = open_draft(root)
    draft.set_entry_text(1, json.dumps([*AGA, finish()]))
    draft.save()
    assert serve(root, 2) == [(HI, None), ([*AGA, finish()], None)]


def test_remove_shifts_undecided_calls(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p"), call_events(1, 1, text_chunks("a"))
                              + call_events(1, 2, [START, delta("b")])
                              + call_events(1, 3, text_chunks("c"))
                              + call_events(1, 4, [START, delta("d")])))
    draft = open_draft(tmp_path)
    assert list(draft.undecided) == [1, 3]
    draft.remove(0)
    assert {i: e.call_key for i, e in draft.undecided.items()} == {0: "1/2", 2: "1/4"}
    draft.remove(0)  # dropping the unfinished call is a decision too
    assert {i: e.call_key for i, e in draft.undecided.items()} == {1: "1/4"}
    with pytest.raises(SidecarError, match=r"call #1 \(model call 1/4, log lines 12-13\)"):
        draft.save()


def test_two_unfinished_calls_are_both_named(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p"), call_events(1, 1, [START, delta("a")])
                              + call_events(2, 1, text_chunks("b"))
                              + call_events(2, 2, [START])))
    draft = open_draft(tmp_path)
    with pytest.raises(SidecarError) as caught:
        draft.save()
    assert ("call #0 (model call 1/1, log lines 2-3), call #2 (model call 2/2, log lines 8-8) of "
            "the primary log never finished while recorded and are not decided yet") in (
        caught.value.message)
    draft.throw_here(0, "reset", "SERVER", draft.default_prefix(0))
    with pytest.raises(SidecarError, match=r"not saved: call #2 \(model call 2/2"):
        draft.save()
    draft.throw_here(2, "reset", "SERVER", 0)
    draft.save()
    served = serve(tmp_path, 3)
    assert served[0] == ([START, delta("a")], "SERVER") and served[2] == ([], "SERVER")
    assert served[1][1] is None


def test_existing_patches_sidecar_is_converted_to_a_bare_list(root: Path) -> None:
    patches = {"patches": [{"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "m",
                                               "code": "RATE_LIMIT"}}]}
    (root / SIDE).write_text(json.dumps(patches))
    with pytest.raises(DerivationError):
        load_scenario(root)  # the patches alone cannot load this log
    draft = open_draft(root)
    assert draft.form == "list" and draft.undecided == {} and draft.unfinished == (1,)
    assert draft.derived_note is not None and "saved as a bare list" in draft.derived_note
    draft.save()
    assert (root / SIDE).read_bytes() == sidecar_bytes([
        {"kind": "chunks", "chunks": HI},
        {"kind": "throw", "chunks": [], "message": "m", "code": "RATE_LIMIT"}])
    assert json.loads((root / (SIDE + ".bak")).read_text()) == patches
    assert serve(root, 2) == [(HI, None), ([], "RATE_LIMIT")]


def test_existing_bare_list_keeps_working(root: Path) -> None:
    doc = [{"kind": "throw", "chunks": [], "message": "m", "code": "AUTH"}]
    (root / SIDE).write_text(json.dumps(doc))
    draft = open_draft(root)
    # call 1 of the log never finished (it explains the list form); the list decides it
    assert draft.form == "list" and draft.unfinished == (1,) and draft.undecided == {}
    assert [e.to_json() for e in draft.effective()] == doc
    draft.hang_here(0)
    draft.save()
    assert (root / SIDE).read_bytes() == sidecar_bytes([{"kind": "hang"}])
    assert isinstance(OverrideDraft.open(load_scenario(root)), OverrideDraft)
    same = open_unfinished_draft(config_from_directory(root))
    assert same.undecided == {} and [e.to_json() for e in same.effective()] == [{"kind": "hang"}]
