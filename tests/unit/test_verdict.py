"""The verdict tells the truth: refused calls, calls in flight, cut streams, divergence, strict
mode, retries and binding by content, on a real engine over scenarios written to disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from replay_engine import NotConsumedError, ReplayEngine, ReplayError, load_scenario
from replay_engine.context import ContextItem, live_new_messages
from replay_engine.divergence import divergence, same_text
from replay_engine.statuscodes import throw_code_warning
from tests.unit.enginetools import collect

pytestmark = pytest.mark.anyio
LIMIT = 10.0


def _chunks(turn: int, step: int, text: str | None = None,
            tool: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if tool is not None:
        out += [{"type": "block-start", "index": 0, "blockType": "tool-call"},
                {"type": "tool-call-delta", "index": 0, "id": tool[0], "name": tool[1],
                 "argumentsDelta": "{}"},
                {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": tool[0],
                                                            "name": tool[1], "arguments": "{}"}},
                {"type": "finish", "reason": {"kind": "tool-calls"}}]
    else:
        out += [{"type": "block-start", "index": 0, "blockType": "text"},
                {"type": "text-delta", "index": 0, "text": text or "ok"},
                {"type": "block-end", "index": 0, "block": {"type": "text", "text": text or "ok"}},
                {"type": "finish", "reason": {"kind": "stop"}}]
    return [{"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": c}}
            for c in out]


def user(text: str) -> dict[str, Any]:
    return {"type": "user/message", "data": {"content": [{"type": "text", "text": text}]}}


def result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool/result", "data": {"callId": call_id,
                                            "content": [{"type": "text", "text": text}]}}


def write_log(path: Path, header: dict[str, Any], events: list[dict[str, Any]]) -> None:
    lines = [header, *events]
    path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")


@pytest.fixture
def tool_loop(tmp_path: Path) -> Path:
    """Call 0 answers 'Say hi' with two tool calls' worth of one id each; call 1 follows the
    results of t1 and t2; call 2 answers the user's 'Thanks'."""
    root = tmp_path / "loop"
    root.mkdir()
    write_log(root / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1}, [
        user("Say hi"), *_chunks(1, 1, tool=("t1", "bash")),
        result("t1", "42"), result("t2", "{{id:1}} done"), *_chunks(1, 2, "hi"),
        user("Thanks"), *_chunks(2, 1, "welcome"),
    ])
    return root


def chat(*turns: dict[str, Any]) -> list[dict[str, Any]]:
    return list(turns)


U0 = {"role": "user", "content": "Say hi"}
A0 = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}
T1 = {"role": "tool", "tool_call_id": "t1", "content": "42"}
T2 = {"role": "tool", "tool_call_id": "t2", "content": "child-77 done"}
A1 = {"role": "assistant", "content": "hi"}
U1 = {"role": "user", "content": "Thanks"}
FAITHFUL = [[U0], [U0, A0, T1, T2], [U0, A0, T1, T2, A1, U1]]


# -- the comparison ---------------------------------------------------------------------------


def test_whitespace_and_harness_tokens_are_tolerated() -> None:
    assert same_text("Say  hi\n", "Say hi")
    assert same_text("started subagent abc-1", "started subagent {{id:1}}")
    assert not same_text("started subagent", "started subagent {{id:1}} now")


@pytest.mark.parametrize(("live", "kind"), [
    ([ContextItem("user", "Say bye")], "user-differs"),
    ([ContextItem("user", "Say hi"), ContextItem("user", "and more")], "user-extra"),
    ([], "user-missing"),
])
def test_user_messages_compare_in_order(live: list[ContextItem], kind: str) -> None:
    found = divergence(live, [ContextItem("user", "Say hi")])
    assert found is not None and found.kind == kind and found.where.startswith("user message")


def test_tool_results_compare_by_the_call_they_answer() -> None:
    recorded = [ContextItem("tool", "42", "t1"), ContextItem("tool", "7", "t2")]
    reordered = [ContextItem("tool", "7", "t2"), ContextItem("tool", "42", "t1")]
    assert divergence(reordered, recorded) is None  # parallel results arrive in any order
    missing = divergence([ContextItem("tool", "42", "t1")], recorded)
    assert missing is not None and (missing.kind, missing.where) == ("tool-missing", "tool result t2")
    unknown = divergence([*recorded, ContextItem("tool", "x", "t9")], recorded)
    assert unknown is not None and unknown.kind == "tool-unknown"
    assert "answers tool call 't9', which the recording never issued" in unknown.describe()
    changed = divergence([ContextItem("tool", "Unknown tool name: 'bash'", "t1"),
                          ContextItem("tool", "7", "t2")], recorded)
    assert changed is not None and changed.kind == "tool-differs"
    assert changed.to_json()["recorded"] == {"role": "tool", "text": "42", "toolCallId": "t1"}


def _gemini(*results: tuple[str | None, str]) -> list[ContextItem]:
    """What a Gemini request's new content reads as: a model turn, then one user turn holding a
    ``functionResponse`` part per (id, result), as google-genai sends parallel results."""
    parts = [{"functionResponse": {**({"id": call_id} if call_id else {}), "name": "bash",
                                   "response": {"output": text}}} for call_id, text in results]
    return live_new_messages({"systemInstruction": None, "contents": [
        {"role": "user", "parts": [{"text": "Say hi"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "t1", "name": "bash", "args": {}}}]},
        {"role": "user", "parts": parts}]})


def test_gemini_tool_results_compare_by_the_call_they_answer() -> None:
    recorded = [ContextItem("tool", "42", "t1"), ContextItem("tool", "7", "t2")]
    assert _gemini(("t1", "42"), ("t2", "7")) == recorded
    assert divergence(_gemini(("t2", "7"), ("t1", "42")), recorded) is None  # any order
    unknown = divergence(_gemini(("t1", "42"), ("t2", "7"), ("t9", "x")), recorded)
    assert unknown is not None and unknown.kind == "tool-unknown"
    assert "answers tool call 't9', which the recording never issued" in unknown.describe()
    missing = divergence(_gemini(("t2", "7")), recorded)
    assert missing is not None and (missing.kind, missing.where) == ("tool-missing",
                                                                     "tool result t1")
    changed = divergence(_gemini(("t1", "41"), ("t2", "7")), recorded)
    assert changed is not None and changed.kind == "tool-differs"


# -- served calls ----------------------------------------------------------------------------


async def test_a_faithful_replay_has_no_divergence_even_strict(tool_loop: Path) -> None:
    engine = ReplayEngine(load_scenario(tool_loop).scripts, strict=True)
    for messages in FAITHFUL:
        await collect(engine, "s", messages)
    assert [r.divergence for r in engine.journal()] == [None, None, None]
    assert engine.verdict_problems() == [] and engine.first_divergence() is None
    engine.assert_consumed()


@pytest.mark.parametrize(("call", "messages", "where"), [
    (0, [{"role": "user", "content": "Say bye"}], "user message 1"),
    (1, [U0, A0, T1], "tool result t2"),
    (1, [U0, A0, T1, T2, {"role": "tool", "tool_call_id": "t3", "content": "?"}],
     "tool result t3"),
    (2, [U0, A0, T1, T2, A1, {"role": "user", "content": "Something else"}], "user message 1"),
])
async def test_a_diverged_call_is_journaled_and_fails_only_strict(
        tool_loop: Path, call: int, messages: list[dict[str, Any]], where: str) -> None:
    scripts = load_scenario(tool_loop).scripts
    for strict in (False, True):
        engine = ReplayEngine(scripts, strict=strict)
        sent = [*FAITHFUL[:call], messages, *FAITHFUL[call + 1:]]
        for m in sent:
            await collect(engine, "s", m)
        record = engine.journal()[call]
        assert record.divergence is not None and record.divergence.where == where
        assert record.to_json()["divergence"]["where"] == where
        assert engine.state().bindings[0].diverged == (call,)
        assert (engine.first_divergence() or "").startswith(f"session s: call #{call} of script 0")
        problems = engine.verdict_problems()
        assert bool(problems) is strict
        if strict:
            assert "left the recording (strict)" in problems[0]


async def test_a_refused_call_fails_the_verdict_and_is_journaled(tool_loop: Path) -> None:
    engine = ReplayEngine(load_scenario(tool_loop).scripts)
    for messages in FAITHFUL:
        await collect(engine, "s", messages)
    with pytest.raises(ReplayError):
        await collect(engine, "s", FAITHFUL[-1])
    assert engine.consumed_problems() == []  # docs/format.md#binding alone would call it consumed
    [problem] = engine.verdict_problems()
    assert problem.startswith("session s: call #3 of script 0 was refused with SCRIPT_EXHAUSTED")
    assert engine.journal()[-1].to_json()["outcome"] == "refused"
    assert not engine.state().consumed and engine.state().refused == 1
    with pytest.raises(NotConsumedError):
        engine.assert_consumed()


async def test_a_stream_the_client_left_is_not_consumed(tool_loop: Path) -> None:
    engine = ReplayEngine(load_scenario(tool_loop).scripts)
    with anyio.fail_after(LIMIT):
        stream = engine.open_call("s", FAITHFUL[0]).chunks()
        await stream.__anext__()  # the client reads one chunk and goes away
        await stream.aclose()  # type: ignore[attr-defined]
    for messages in FAITHFUL[1:]:
        await collect(engine, "s", messages)
    assert engine.consumed_problems() == []
    problems = engine.verdict_problems()
    assert any("call #0 of script 0 (turn/step 1/1) ended after" in p and "went away" in p
               for p in problems), problems
    assert engine.journal()[0].to_json()["unfinished"] is not None


async def test_a_call_in_flight_is_not_consumed(tool_loop: Path) -> None:
    engine = ReplayEngine(load_scenario(tool_loop).scripts)
    for messages in FAITHFUL[:2]:
        await collect(engine, "s", messages)
    engine.open_call("s", FAITHFUL[2])  # bound, its stream not read yet
    assert engine.consumed_problems() == []
    assert any("is still in flight" in p for p in engine.verdict_problems())


async def test_a_retry_after_a_scripted_failure_is_seen_and_strict_fails_it(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    write_log(root / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1},
              [user("Say hi"), *_chunks(1, 1, "hi"), user("Next"), *_chunks(2, 1, "two")])
    (root / "replay.override.json").write_text(json.dumps({"patches": [
        {"at": 0, "entry": {"kind": "throw", "chunks": [], "message": "slow", "code": "RATE_LIMIT"}},
    ]}))
    engine = ReplayEngine(load_scenario(root).scripts, strict=True)
    with pytest.raises(ReplayError):
        await collect(engine, "s", [U0])
    await collect(engine, "s", [U0])  # the client retries the 429: it takes the next call
    record = engine.journal()[1]
    assert record.retry_detected and record.to_json()["retry"] is True
    assert any("is a retry of the failed call before it" in p for p in engine.verdict_problems())


RETRY = {"type": "retry/scheduled", "data": {"turn": 1, "step": 1, "attempt": 2, "delayMs": 500}}


async def test_a_retry_after_an_error_finish_is_seen_and_a_recorded_one_passes_strict(
        tmp_path: Path) -> None:
    """An error finish is a scripted failure as a throw is: the same request again is a retry.
    Where the recording itself holds that retry (the same context before the next call),
    strict mode lets it pass; where it does not, strict fails it."""
    error = [{"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": c}} for c in (
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "par"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "par"}},
        {"type": "finish", "reason": {"kind": "error", "failure": {"code": "EMPTY_RESPONSE",
                                                                   "message": "empty"}}})]
    recorded = tmp_path / "recorded"  # the harness retried the call, as it logs a retry
    recorded.mkdir()
    write_log(recorded / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1},
              [user("Say hi"), *error, RETRY, *_chunks(1, 1, "hi")])
    engine = ReplayEngine(load_scenario(recorded).scripts, strict=True)
    await collect(engine, "s", [U0])
    await collect(engine, "s", [U0])
    assert engine.journal()[1].retry_detected
    assert engine.verdict_problems() == []

    unrecorded = tmp_path / "unrecorded"
    unrecorded.mkdir()
    write_log(unrecorded / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1},
              [user("Say hi"), *error, user("Next"), *_chunks(2, 1, "two")])
    engine = ReplayEngine(load_scenario(unrecorded).scripts, strict=True)
    await collect(engine, "s", [U0])
    await collect(engine, "s", [U0])
    assert engine.journal()[1].retry_detected
    assert any("is a retry of the failed call before it" in p for p in engine.verdict_problems())


async def test_concurrent_children_bind_by_content_unless_order_is_asked(tmp_path: Path) -> None:
    root = tmp_path / "kids"
    root.mkdir()
    write_log(root / "session.jsonl", {"type": "session", "version": 0, "id": "p", "createdAt": 1},
              [user("Plan"), *_chunks(1, 1, "ok")])
    for n, task in ((1, "Task A"), (2, "Task B")):
        write_log(root / f"session.{n}.jsonl", {"type": "session", "version": 0, "id": f"c{n}",
                                                "createdAt": 10 + n, "parentId": "p",
                                                "seedLength": 0},
                  [user(task), *_chunks(1, 1, f"did {task}")])
    scripts = load_scenario(root).scripts
    engine = ReplayEngine(scripts)
    await collect(engine, "p", [{"role": "user", "content": "Plan"}])
    got = await collect(engine, "child-B", [{"role": "user", "content": "Task B"}])
    assert any(c.get("text") == "did Task B" for c in got)  # B asked first, yet got its own
    rules = {b.session: (b.script_index, b.rule) for b in engine.state().bindings}
    assert rules == {"p": (0, "content"), "child-B": (2, "content")}
    ordered = ReplayEngine(scripts, bind="order")
    await collect(ordered, "p", [{"role": "user", "content": "Plan"}])
    await collect(ordered, "child-B", [{"role": "user", "content": "Task B"}])
    assert {b.session: b.script_index for b in ordered.state().bindings}["child-B"] == 1


async def test_a_call_while_not_loaded_names_the_load_error() -> None:
    engine = ReplayEngine([])
    engine.set_not_loaded(ReplayError("line 3 is not JSON", code="LOG_PARSE"))
    with pytest.raises(ReplayError) as caught:
        engine.open_call("s", [])
    assert caught.value.code == "SCENARIO_NOT_LOADED"
    assert "[LOG_PARSE] line 3 is not JSON" in caught.value.message


def test_unknown_throw_codes_are_warned_with_the_known_set() -> None:
    assert throw_code_warning("RATE_LIMIT") is None and throw_code_warning("HTTP_503") is None
    warning = throw_code_warning("RATE_LIMT")
    assert warning is not None and "served as HTTP 500" in warning and "RATE_LIMIT (429)" in warning
