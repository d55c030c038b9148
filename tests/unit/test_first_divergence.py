"""One first-divergence rule for every front end: the debugger's header, its quit verdict and
modal, ``dsh-replay serve``'s verdict and the pytest plugin's report name the same call, also once the journal
dropped the calls that diverged (``--journal-limit`` smaller than the calls served)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.headless.header import ReplayFacts, replay_lines
from dsh_replay_tui.headless.verdicts import quit_verdict

from replay_engine import ReplayEngine, divergence_note, load_scenario, run_verdict, verdict
from replay_engine.testing.diagnosis import failure_report
from tests.unit.enginetools import collect

pytestmark = pytest.mark.anyio


def _text_call(turn: int, text: str) -> list[dict[str, Any]]:
    chunks = [{"type": "block-start", "index": 0, "blockType": "text"},
              {"type": "text-delta", "index": 0, "text": text},
              {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
              {"type": "finish", "reason": {"kind": "stop"}}]
    return [{"type": "assistant/chunk", "data": {"turn": turn, "step": 1, "chunk": c}}
            for c in chunks]


def _user(text: str) -> dict[str, Any]:
    return {"type": "user/message", "data": {"content": [{"type": "text", "text": text}]}}


def _write(path: Path, head: dict[str, Any], events: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in [head, *events]), encoding="utf-8")


@pytest.fixture
def two_sessions(tmp_path: Path) -> Path:
    """A parent (script 0) and a child (script 1), each asked twice."""
    root = tmp_path / "two"
    root.mkdir()
    _write(root / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1},
           [_user("Say hi"), *_text_call(1, "hi"), _user("Thanks"), *_text_call(2, "welcome")])
    _write(root / "session.1.jsonl", {"type": "session", "version": 0, "id": "c",
                                      "createdAt": 2, "parentId": "p"},
           [_user("List"), *_text_call(1, "a b"), _user("More"), *_text_call(2, "c")])
    return root


def _says(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


PARENT_1 = [*_says("Say hi"), {"role": "assistant", "content": "hi"}, *_says("Thanks")]
CALLS = {
    # the parent leaves the recording first, then the child; only the child's call is kept
    "parent first": [("a", _says("Say bye")), ("b", _says("Nope"))],
    # the child leaves it first, the parent next; the journal keeps only the child's last call
    "child first": [("a", _says("Say hi")), ("b", _says("Nope")),
                    ("a", [*PARENT_1[:2], *_says("Other")]), ("b", _says("More"))],
}
FIRST = {"parent first": (0, 0), "child first": (1, 0)}


@pytest.mark.parametrize("case", sorted(CALLS))
async def test_header_and_verdicts_name_one_call_past_the_journal_limit(
        two_sessions: Path, case: str) -> None:
    engine = ReplayEngine(load_scenario(two_sessions).scripts, journal_limit=1, bind="order")
    for session, messages in CALLS[case]:
        await collect(engine, session, messages)
    state = engine.state()
    assert state.journal_dropped == len(CALLS[case]) - 1  # the diverged calls left the journal
    script, call = FIRST[case]
    assert state.first_divergence == (script, call)

    header = replay_lines(ReplayFacts(scenario="s", url="u", state=state))[0]
    said = re.search(r"diverged at #(\d+)( of script (\d+))?", " ".join(t.plain for t in
                                                                       header.segments))
    assert said is not None
    assert (int(said.group(3) or 0), int(said.group(1))) == (script, call)

    named = f"call #{call} of script {script}"
    assert named in (engine.first_divergence() or "")
    quit_text = quit_verdict(engine, load_error=None, loaded=True, serve_error=None).text
    _, serve_lines = verdict(engine)
    assert quit_text == "\n".join(serve_lines)  # one verdict text
    assert [line for line in serve_lines if "first divergence" in line] == \
           [f"  first divergence: {engine.first_divergence()}"]
    assert divergence_note(engine, "default") == serve_lines[-1].strip()  # the debugger's modal

    # the pytest plugin's report, also from a debugger's verdict file (JSON)
    first = run_verdict(engine, "default")["firstDivergence"]
    assert first == engine.first_divergence_json()
    assert (first["scriptIndex"], first["callIndex"]) == (script, call)
    report = failure_report("s", None, engine.scripts, json.loads(json.dumps(first)), [], [], [],
                            failed=True)
    assert report[0].endswith(" left the recording:")  # no problem but the divergence
    assert report[1].startswith(f"  first divergence: session {first['sessionKey']}: {named}")
