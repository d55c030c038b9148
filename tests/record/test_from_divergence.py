"""``dsh-replay record DIR --from-divergence``: replay what still matches, record the rest.

A scenario is recorded through the real recorder from a loopback upstream that counts its
calls; the agent then changes, and the repair run must send upstream exactly the diverged
tail of each session, keep every log's prefix byte for byte in its own generation, and
install only a result that loads (or leave the scenario byte for byte).
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from replay_engine.record.directory import lock_directory
from replay_engine.record.repair import kept_bytes
from replay_engine.review import diff_scenarios
from replay_engine.scenario.loading import load_scenario
from replay_engine.server import serve_scenario
from tests.conftest import SAMPLES
from tests.plugin.plugintools import files_of
from tests.record.repairtools import Plan, converse, echo_upstream, record_plan, repair

pytestmark = pytest.mark.anyio

PLAN: Plan = {"main": ["a1", "a2", "a3"], "helper": ["b1", "b2"]}
FORMATS = {"v1": ("session.jsonl", "session.1.jsonl"),
           "v4": ("session.v4.jsonl", "session.1.v4.jsonl")}


async def _recorded(tmp_path: Path, upstream: str, fmt: str) -> Path:
    scenario = tmp_path / "scenario"
    await record_plan(scenario, upstream, PLAN, fmt)
    return scenario


async def _replays_strictly(scenario: Path, plan: Plan) -> list[str]:
    """Replay ``plan`` against ``scenario``: the strict verdict's problems (none: it follows)."""
    async with serve_scenario(scenario) as server:
        await converse(server.url + "/v1", plan)
        return server.engine.verdict_problems(strict=True)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_a_diverged_primary_records_only_its_tail(tmp_path: Path, fmt: str) -> None:
    primary, child = FORMATS[fmt]
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, fmt)
        before = files_of(scenario)
        old = tmp_path / "old"
        shutil.copytree(scenario, old)
        changed = {"main": ["a1", "a2 changed", "a3"], "helper": ["b1", "b2"]}
        cut = kept_bytes(load_scenario(scenario), 0, 1)
        calls = len(upstream.requests)
        run = await repair(scenario, upstream.url, changed)
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 2  # the diverged call and the one after it
    assert run.answers == {"main": ["re: a1", "re: a2 changed", "re: a3"],
                           "helper": ["re: b1", "re: b2"]}
    assert "recorded 2 call(s) upstream (script 0 from call #1)" in run.out
    after = files_of(scenario)
    assert after[child] == before[child]  # the helper followed its recording: untouched
    assert after[primary][:cut] == before[primary][:cut]  # the prefix byte for byte
    assert after[f"{primary}.bak.1"] == before[primary]
    new_lines = [json.loads(line) for line in after[primary][cut:].splitlines()]
    old_lines = [json.loads(line) for line in before[primary][:cut].splitlines()]
    assert new_lines[0]["seq"] == old_lines[-1]["seq"] + 1  # seq goes on from the prefix
    assert new_lines[0] == {**new_lines[0], "type": "turn/start", "data": {"turn": 2}}
    if fmt == "v4":
        assert json.loads(after[primary].splitlines()[0])["version"] == 4
    assert not list(tmp_path.glob("*.recording-*"))
    assert await _replays_strictly(scenario, changed) == []
    review = diff_scenarios(load_scenario(old), load_scenario(scenario)).to_json()
    assert [s["firstChanged"] for s in review["scripts"]] == [1, None]
    assert review["scripts"][0]["calls"][1]["changes"][:1] == ["text"]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_a_diverged_child_whose_parent_followed(tmp_path: Path, fmt: str) -> None:
    primary, child = FORMATS[fmt]
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, fmt)
        before = files_of(scenario)
        calls = len(upstream.requests)
        changed = {"main": ["a1", "a2", "a3"], "helper": ["b1", "b2 now"]}
        run = await repair(scenario, upstream.url, changed)
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 1
    after = files_of(scenario)
    assert after[primary] == before[primary]
    assert after[child] != before[child] and f"{child}.bak.1" in after
    assert await _replays_strictly(scenario, changed) == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_a_parent_diverged_at_its_first_call_and_a_new_session(tmp_path: Path,
                                                                   fmt: str) -> None:
    """The reverse: the parent leaves at once, its child follows; a third session the
    recording does not have is recorded whole, as the next child log."""
    primary, child = FORMATS[fmt]
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, fmt)
        before = files_of(scenario)
        calls = len(upstream.requests)
        changed = {"main": ["a1 reworded", "a2"], "helper": ["b1", "b2"], "third": ["c1"]}
        run = await repair(scenario, upstream.url, changed)
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 3
    after = files_of(scenario)
    header = before[primary].splitlines(keepends=True)[0]
    assert after[primary].startswith(header) and after[child] == before[child]
    third = child.replace(".1.", ".2.")
    assert json.loads(after[third].splitlines()[0])["id"] == "third"
    loaded = load_scenario(scenario)
    assert [len(s.entries) for s in loaded.scripts] == [2, 2, 1]
    assert await _replays_strictly(scenario, changed) == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_a_run_that_follows_sends_nothing_and_changes_nothing(tmp_path: Path,
                                                                  fmt: str) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, fmt)
        before = files_of(scenario)
        calls = len(upstream.requests)
        run = await repair(scenario, upstream.url, PLAN)
        assert run.code == 0, run.err
        assert len(upstream.requests) == calls
    assert "nothing went upstream" in run.out
    assert files_of(scenario) == before
    assert not list(tmp_path.glob("*.recording-*"))


async def test_from_cuts_a_call_whose_request_matches(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v4")
        before = files_of(scenario)
        calls = len(upstream.requests)
        run = await repair(scenario, upstream.url, PLAN, "--from", "1:1", "--from", "0:2")
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 2  # helper's call #1 and main's call #2
    after = files_of(scenario)
    assert after["session.v4.jsonl"] != before["session.v4.jsonl"]
    assert after["session.1.v4.jsonl"] != before["session.1.v4.jsonl"]
    review = diff_scenarios(load_scenario(tmp_path / "scenario"), load_scenario(scenario))
    assert review.same is True  # the fresh answers say the same: nothing to review


async def test_calls_past_the_end_are_appended(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v1")
        before = files_of(scenario)
        calls = len(upstream.requests)
        plan = {"main": ["a1", "a2", "a3", "a4"], "helper": ["b1", "b2"]}
        run = await repair(scenario, upstream.url, plan)
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 1
    after = files_of(scenario)
    assert after["session.jsonl"].startswith(before["session.jsonl"])
    assert await _replays_strictly(scenario, plan) == []


async def test_an_upstream_failing_at_the_diverged_call_changes_nothing(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v1")
        before = files_of(scenario)
        calls = len(upstream.requests)
        run = await repair(scenario, upstream.url, {"main": ["a1", "fail here", "a3"]})
        assert len(upstream.requests) - calls == 1
    assert run.code == 1
    assert "not installed" in run.err
    assert "session.jsonl call #1" in run.err and "failed upstream" in run.err
    assert files_of(scenario) == before
    attempts = list(tmp_path.glob("scenario.recording-*"))
    assert len(attempts) == 1 and str(attempts[0]) in run.err


async def test_a_killed_run_leaves_the_scenario_untouched(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v4")
        before = files_of(scenario)
        run = await repair(scenario, upstream.url, {"main": ["a1", "a2 changed", "a3"]},
                           stop=signal.SIGKILL)
        assert len(upstream.requests) == 5 + 2
    assert run.code == -signal.SIGKILL
    assert files_of(scenario) == {**before, **{k: v for k, v in files_of(scenario).items()
                                               if k.startswith(".")}}
    again = await _replays_strictly(scenario, PLAN)
    assert again == []


async def test_keep_failures_installs_a_failed_tail(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v1")
        run = await repair(scenario, upstream.url, {"main": ["a1", "fail here"]},
                           "--keep-failures")
    assert run.code == 0, run.err
    assert "installed as asked (--keep-failures)" in run.err
    loaded = load_scenario(scenario)
    assert loaded.sidecar_form == "list"  # a failed primary call is decided by the sidecar
    assert [e.entry.kind for e in loaded.scripts[0].entries] == ["chunks", "throw"]


async def test_bad_directories_and_cuts_are_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = shutil.copytree(SAMPLES / "broken-json-line", tmp_path / "broken")
    good = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "good")
    async with echo_upstream() as upstream:
        for directory, extra, said in (
                (empty, (), "holds no scenario"), (tmp_path / "missing", (), "holds no scenario"),
                (broken, (), "LOG_PARSE"), (good, ("--from", "0:9"), "script 0 has 2 call(s)"),
                (good, ("--from", "5:0"), "the scenario has 1 script(s)"),
                (good, ("--from", "x"), "give SCRIPT:CALL")):
            before = files_of(tmp_path)
            run = await repair(directory, upstream.url, None, *extra)
            assert run.code == 2, (directory, run.err)
            assert said in run.err and str(directory) in run.err or said in run.err
            assert files_of(tmp_path) == before
        assert upstream.requests == []


async def test_two_recorders_on_one_directory(tmp_path: Path) -> None:
    scenario = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "good")
    held = lock_directory(scenario)
    try:
        async with echo_upstream() as upstream:
            run = await repair(scenario, upstream.url, None)
    finally:
        held.release()
    assert run.code == 1 and "RECORDING_LOCKED" in run.err
    assert not list(tmp_path.glob("*.recording-*"))


async def test_a_sidecars_patches_at_or_after_the_cut_are_dropped(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v1")
        derived = load_scenario(scenario).scripts[0].entries
        patch = {"kind": "chunks", "chunks": derived[0].to_json()["chunks"]}
        (scenario / "replay.override.json").write_text(json.dumps(
            {"patches": [{"at": 0, "entry": patch}, {"at": 2, "entry": patch}]}))
        run = await repair(scenario, upstream.url, {"main": ["a1", "a2 changed", "a3"],
                                                    "helper": ["b1", "b2"]})
    assert run.code == 0, run.err
    assert "the patch at call #2 of the primary (chunks) was dropped" in run.err
    kept = json.loads((scenario / "replay.override.json").read_text())
    assert [p["at"] for p in kept["patches"]] == [0]
    assert (scenario / "replay.override.json.bak.1").is_file()


async def test_a_bare_list_deciding_the_primary_is_cut_and_extended(tmp_path: Path) -> None:
    """Calls the sidecar decides carry no recorded request (``--strict`` sees no divergence in
    them): ``--from`` cuts the list, which goes on with the fresh call."""
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v1")
        served = [e.to_json() for e in load_scenario(scenario).scripts[0].entries]
        (scenario / "replay.override.json").write_text(json.dumps(served))
        calls = len(upstream.requests)
        run = await repair(scenario, upstream.url, {"main": ["a1", "a2", "a3 again"],
                                                    "helper": ["b1", "b2"]}, "--from", "0:2")
        assert len(upstream.requests) - calls == 1
    assert run.code == 0, run.err
    listed = json.loads((scenario / "replay.override.json").read_text())
    assert listed[:2] == served[:2] and listed[2] != served[2]
    assert len(load_scenario(scenario).scripts[0].entries) == 3


async def test_a_forked_v4_child_keeps_its_inherited_prefix(tmp_path: Path) -> None:
    async with echo_upstream() as upstream:
        scenario = await _recorded(tmp_path, upstream.url, "v4")
        parent = (scenario / "session.v4.jsonl").read_text().splitlines()
        child = (scenario / "session.1.v4.jsonl").read_text().splitlines()
        header = {**json.loads(child[0]), "isSeeded": True}
        marker = {"type": "session/end-seed", "seq": 5, "time": 0, "data": {"inherited": True}}
        own = [json.dumps({**json.loads(line), "seq": 6 + n}) for n, line in enumerate(child[1:])]
        forked = [json.dumps(header), *parent[1:6], json.dumps(marker), *own]
        (scenario / "session.1.v4.jsonl").write_text("\n".join(forked) + "\n")
        prefix = "\n".join(forked[:7]) + "\n"
        assert kept_bytes(load_scenario(scenario), 1, 0) == len(prefix.encode())
        calls = len(upstream.requests)
        changed = {"main": ["a1", "a2", "a3"], "helper": ["b1 other", "b2"]}
        run = await repair(scenario, upstream.url, changed)
        assert run.code == 0, run.err
        assert len(upstream.requests) - calls == 2
    repaired = (scenario / "session.1.v4.jsonl").read_text()
    assert repaired.startswith(prefix)
    assert json.loads(repaired.splitlines()[7])["seq"] == 6
    assert [len(s.entries) for s in load_scenario(scenario).scripts] == [3, 2]


def test_a_forked_v0_child_is_cut_after_its_inherited_events() -> None:
    scenario = load_scenario(SAMPLES / "nested-subagents")
    fork = SAMPLES / "nested-subagents" / "session.2.jsonl"
    lines = fork.read_bytes().splitlines(keepends=True)
    assert kept_bytes(scenario, 2, 0) == len(b"".join(lines[:9]))  # header + 8 seeded events
