"""``dsh-replay diff``: two scenarios compared script by script and call by call, by the calls
they load (never by bytes), with the exit status a CI step reads."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from replay_engine.cli.dispatch import main
from replay_engine.scenario.loading import load_scenario
from tests.conftest import SAMPLES


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _log(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, events: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_same_scenario_is_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _diff(capsys, str(SAMPLES / "nested-subagents"),
                         str(SAMPLES / "nested-subagents"))
    assert code == 0
    assert out.splitlines()[0] == "script 0 (session.jsonl): 3 call(s), all same"
    assert out.splitlines()[-1] == "same: every call is the same"


def test_a_changed_answer_says_what_changed(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    new = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "new")
    events = _log(new / "session.jsonl")
    for event in events:
        data = event.get("data")
        if isinstance(data, dict) and isinstance(data.get("chunk"), dict):
            chunk = data["chunk"]
            if chunk.get("type") == "text-delta" and "Hello!" in chunk.get("text", ""):
                chunk["text"] = chunk["text"].replace("Hello!", "Goodbye!")
            if chunk.get("type") == "usage":
                chunk["usage"] = {**chunk["usage"], "outputTokens": 99}
    _write(new / "session.jsonl", events)
    code, out, _ = _diff(capsys, str(SAMPLES / "basic-chat"), str(new), "--json")
    assert code == 1
    review = json.loads(out)
    assert review["same"] is False
    [script] = review["scripts"]
    assert script["index"] == 0 and script["firstChanged"] == 0
    first, second = script["calls"]
    assert first["status"] == "changed" and first["changes"] == ["usage"]
    assert first["usageOnly"] is True and first["timingOnly"] is False
    assert second["status"] == "changed" and second["changes"][:2] == ["text", "usage"]
    assert second["usageOnly"] is False
    assert second["old"]["text"].endswith("Hello!") and second["new"]["text"].endswith("Goodbye!")


def test_added_and_removed_calls_and_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _diff(capsys, str(SAMPLES / "nested-subagents"), str(SAMPLES / "basic-chat"))
    assert code == 1
    assert "  #2 removed: 'Docs hold guide.md and api.md; there are 42 tests.' [stop]" in out
    assert "script 2 (session.2.jsonl → (none)): 1 call(s), first changed #0" in out
    code, out, _ = _diff(capsys, str(SAMPLES / "basic-chat"), str(SAMPLES / "nested-subagents"),
                         "--json")
    calls = json.loads(out)["scripts"][0]["calls"]
    assert [c["status"] for c in calls] == ["changed", "changed", "added"]


def test_a_changed_request_before_a_call_is_named(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    new = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "new")
    text = (new / "session.jsonl").read_text()
    (new / "session.jsonl").write_text(text.replace("Then say hello.", "Then say bye."))
    code, out, _ = _diff(capsys, str(SAMPLES / "basic-chat"), str(new))
    assert code == 1
    assert "  #0 changed: context" in out
    assert ("context: user message 1: old 'What files are in the workspace? Then say hello.', "
            "new 'What files are in the workspace? Then say bye.'") in out


def test_a_sidecar_and_no_sidecar_compare_by_effective_calls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "listed")
    served = [item.to_json() for item in load_scenario(listed).scripts[0].entries]
    (listed / "replay.override.json").write_text(json.dumps(served))
    code, out, _ = _diff(capsys, str(SAMPLES / "basic-chat"), str(listed))
    assert code == 0, out
    patched = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "patched")
    served[1]["chunks"][1]["text"] = "Other words."
    (patched / "replay.override.json").write_text(json.dumps(
        {"patches": [{"at": 1, "entry": served[1]}]}))
    code, out, _ = _diff(capsys, str(listed), str(patched))
    assert code == 1 and "  #1 changed: text" in out


def test_generations_compare_by_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A v0 log and the v4 log of the same calls: the same (their bytes share nothing)."""
    v4 = tmp_path / "v4"
    v4.mkdir()
    header = {"type": "session", "version": 4, "id": "basic", "createdAt": 1,
              "isSeeded": False}
    events: list[dict[str, object]] = [header]
    stream: list[dict[str, object]] = []
    for event in _log(SAMPLES / "basic-chat" / "session.jsonl")[1:]:
        data = event["data"]
        assert isinstance(data, dict)
        if event["type"] != "assistant/chunk":
            events.append(event)
            continue
        stream.append({"type": "chunk", "time": event["time"], "chunk": data["chunk"]})
        if data["chunk"]["type"] == "finish":
            events.append({"type": "assistant/message", "seq": event["seq"],
                           "time": event["time"], "data": {**data, "stream": stream}})
            stream = []
    _write(v4 / "session.v4.jsonl", events)
    code, out, _ = _diff(capsys, str(SAMPLES / "basic-chat"), str(v4))
    assert code == 0, out
    assert out.splitlines()[0] == "script 0 (session.jsonl → session.v4.jsonl): 2 call(s), all same"


def test_a_scenario_that_does_not_load_is_named(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _diff(capsys, str(SAMPLES / "basic-chat"), str(SAMPLES / "broken-json-line"))
    assert code == 2 and out == ""
    assert f"{SAMPLES / 'broken-json-line'} does not load: [LOG_PARSE]" in err
    code, _, err = _diff(capsys, str(tmp_path / "nowhere"), str(SAMPLES / "basic-chat"))
    assert code == 2 and "nowhere: not a scenario directory" in err
    code, _, err = _diff(capsys, str(SAMPLES / "basic-chat"))
    assert code == 2 and "give two scenario directories" in err


def test_json_errors_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Under ``--json`` a scenario that does not load is JSON on stdout, as ``inspect --json``
    gives it, so a script reading the output always reads JSON."""
    code, out, err = _diff(capsys, str(SAMPLES / "basic-chat"), str(SAMPLES / "broken-json-line"),
                           "--json")
    said = json.loads(out)
    assert code == 2 and err == ""
    assert said["ok"] is False and said["code"] == "LOG_PARSE"
    assert f"{SAMPLES / 'broken-json-line'} does not load: [LOG_PARSE]" in said["error"]


def test_git_compares_the_committed_scenario_with_the_working_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    scenario = shutil.copytree(SAMPLES / "basic-chat", repo / "fixtures" / "chat")
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                       check=True, capture_output=True, timeout=30)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "fixture")
    code, out, _ = _diff(capsys, str(scenario), "--git", "HEAD")
    assert code == 0, out
    text = (scenario / "session.jsonl").read_text()
    (scenario / "session.jsonl").write_text(text.replace("Hello!", "Hi!"))
    code, out, _ = _diff(capsys, str(scenario), "--git", "HEAD", "--json")
    assert code == 1
    assert json.loads(out)["scripts"][0]["firstChanged"] == 1
    code, _, err = _diff(capsys, str(scenario), "--git", "no-such-rev")
    assert code == 2 and err.startswith(
        f"dsh-replay: diff: {scenario}: cannot read it as committed at no-such-rev (git: fatal: ")
    assert err.endswith("give a revision that exists (e.g. HEAD) of the git work tree that "
                        "holds it\n") and err.count("\n") == 1
    # A REV that git would read as one of its options is refused before git runs.
    code, _, err = _diff(capsys, str(scenario), "--git=--output=" + str(tmp_path / "written"))
    assert code == 2 and "not a revision; give a commit, branch or tag" in err
    assert not (tmp_path / "written").exists()


def test_git_outside_a_work_tree_says_so_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = shutil.copytree(SAMPLES / "basic-chat", tmp_path / "chat")
    code, out, err = _diff(capsys, str(scenario), "--git", "HEAD")
    assert (code, out) == (2, "")
    assert err.startswith(f"dsh-replay: diff: {scenario}: cannot read it as committed at HEAD")
    assert "the git work tree that holds it" in err and err.count("\n") == 1
