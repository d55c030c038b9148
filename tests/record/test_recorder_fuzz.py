"""A seeded fuzz of the recorder: malformed answers on every dialect, lone surrogates, deep and
non-finite bodies, error answers of every kind (statuses HTTP cannot relay, header bytes outside
ASCII), concurrent calls of several sessions, and a write that fails at a random point. Every
call the recorder forwarded ends up in a log (finished or as its failure), the client always
gets the upstream's bytes (or a JSON 502 when they cannot be relayed), nothing logs a
traceback, and a failure of the recorder itself is raised (the CLI's exit status 1)."""

from __future__ import annotations

import asyncio
import errno
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replay_engine.errors import InputError
from replay_engine.record import record_scenario
from replay_engine.record.forward import RELAYABLE_STATUSES
from replay_engine.scenario.check import check_scenario
from tests.record.fakeupstream import Answer, FakeUpstream, chunk, deep, json_body, named_sse, sse
from tests.record.recordcheck import Got, logged_calls, no_tracebacks, post
from tests.record.test_recorder_limits import _failing_write

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

SEED = 20240521
CASES = 300
BATCH = 50
ODD: list[Any] = [5, "x", [1], {"a": []}, None, True, -1.5, "\ud83d", {"index": [0]}, [[[]]],
                  "", 2**60]
"""Values a fuzzed answer puts where a field of another type belongs."""
TEXTS = ["plain", "emoji 😀", "lone \ud83d", "\udc00 low", "quote \" and \\ back", "\x00nul",
         "sk-not-a-key"]


@dataclass
class Case:
    path: str
    request: bytes
    session: str | None
    answer: Answer
    refused: bool
    """The request is one the replay server refuses too: answered 400, never forwarded."""


def _odd(rng: random.Random) -> Any:
    return rng.choice(ODD)


def _chat_answer(rng: random.Random) -> Answer:
    kind = rng.randrange(9)
    text = rng.choice(TEXTS)
    if kind == 0:
        events: list[Any] = [chunk({"role": "assistant", "content": ""}), chunk({"content": text}),
                             chunk({}, "stop")]
    elif kind == 1:
        events = [chunk({"tool_calls": [{"index": rng.choice([0, [0], "0", None]), "id": "t",
                                         "function": rng.choice([{"name": "f", "arguments": text},
                                                                 _odd(rng)])}]}),
                  chunk({}, rng.choice(["tool_calls", None, "weird"]))]
    elif kind == 2:
        events = [{"choices": _odd(rng), "usage": _odd(rng)},
                  {"choices": [{"delta": _odd(rng), "finish_reason": _odd(rng)}]}]
    elif kind == 3:
        events = [deep(rng.choice([100, 255, 257, 5000]))]
    elif kind == 4:
        events = [chunk({"content": text}), rng.choice(["{bad", "[1,]", "NaN", '{"a":1e999}'])]
    elif kind == 5:
        return sse([chunk({"content": text})], done=False)  # no end marker
    elif kind == 6:
        return Answer(200, {"content-type": "text/event-stream",
                            "content-encoding": rng.choice(["gzip", "br", "deflate"])},
                      bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
    elif kind == 7:
        events = [{"error": rng.choice([{"message": text, "code": _odd(rng)}, _odd(rng)])}]
    else:
        events = [chunk({"reasoning_content": text}), chunk({"content": text}),
                  {"choices": [], "usage": {"prompt_tokens": _odd(rng),
                                            "completion_tokens": 3}}, chunk({}, "length")]
    return sse(events, done=rng.random() < 0.9)


def _completion(rng: random.Random) -> Answer:
    body = rng.choice([
        {"choices": [{"message": {"content": rng.choice(TEXTS), "tool_calls": _odd(rng)},
                      "finish_reason": "stop"}]},
        {"choices": _odd(rng)}, {"type": "message", "content": _odd(rng)},
        {"object": "response", "output": _odd(rng), "status": _odd(rng)},
        _odd(rng)])
    raw = deep(5000).encode() if rng.random() < 0.1 else None
    return json_body(body, raw=raw, gzipped=rng.random() < 0.2)


def _error(rng: random.Random) -> Answer:
    status = rng.choice([400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 529, 599, 600, 999])
    body = rng.choice([
        json.dumps({"error": {"message": rng.choice(TEXTS), "code": _odd(rng)}}).encode(),
        json.dumps({"message": _odd(rng)}).encode(), deep(3000).encode(), b"", b"plain text",
        bytes(rng.randrange(256) for _ in range(30))])
    headers = {"content-encoding": "gzip"} if rng.random() < 0.1 else {}
    if rng.random() < 0.1:
        headers["x-note"] = "5 \u00e2\u0082\u00ac"  # the UTF-8 bytes of a euro sign
    return Answer(status, headers, body)


def _framed(rng: random.Random, messages: bool) -> Answer:
    if messages:
        events = [("message_start", {"type": "message_start", "message": {"usage": _odd(rng)}}),
                  ("content_block_start", {"type": "content_block_start", "index": _odd(rng),
                                           "content_block": rng.choice([
                                               {"type": "text", "text": ""}, _odd(rng)])}),
                  ("content_block_delta", {"type": "content_block_delta", "index": _odd(rng),
                                           "delta": {"type": "text_delta",
                                                     "text": rng.choice(TEXTS)}}),
                  ("content_block_stop", {"type": "content_block_stop", "index": _odd(rng)}),
                  ("message_delta", {"type": "message_delta", "delta": _odd(rng)}),
                  ("message_stop", {"type": rng.choice(["message_stop", _odd(rng)])})]
    else:
        events = [("a", {"type": "response.output_item.added", "output_index": _odd(rng),
                         "item": rng.choice([{"type": "message"}, _odd(rng)])}),
                  ("b", {"type": "response.output_text.delta", "output_index": _odd(rng),
                         "delta": rng.choice(TEXTS)}),
                  ("c", {"type": rng.choice(["response.output_item.done", _odd(rng)]),
                         "output_index": _odd(rng), "item": _odd(rng)}),
                  ("d", {"type": rng.choice(list(("response.completed", "response.failed",
                                                  "response.incomplete"))),
                         "response": _odd(rng)})]
    return named_sse(events[:rng.randrange(1, len(events) + 1)])


def _request(rng: random.Random, path: str) -> tuple[bytes, bool]:
    roll = rng.random()
    if roll < 0.04:
        return deep(rng.choice([300, 5000])).encode(), True
    if roll < 0.07:
        return b'{"messages":[{"role":"user","content":"x"}],"t":' + rng.choice(
            [b"1e999", b"NaN", b"-Infinity"]) + b"}", True
    content = rng.choice(TEXTS)
    if path == "/v1/responses":
        body: dict[str, Any] = {"model": "m", "input": rng.choice([content, [
            {"role": "user", "content": content}], _odd(rng)])}
    else:
        body = {"model": "m", "max_tokens": 5, "messages": rng.choice([
            [{"role": "user", "content": content}],
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                           "content": content}]}], _odd(rng)])}
    body["stream"] = rng.random() < 0.7
    return json.dumps(body).encode(), False


def _case(rng: random.Random) -> Case:
    path = rng.choice(["/v1/chat/completions"] * 3 + ["/v1/messages", "/v1/responses"])
    request, refused = _request(rng, path)
    roll = rng.random()
    if roll < 0.2:
        answer = _error(rng)
    elif roll < 0.35:
        answer = _completion(rng)
    elif path == "/v1/chat/completions":
        answer = _chat_answer(rng)
    else:
        answer = _framed(rng, path == "/v1/messages")
    return Case(path, request, rng.choice([None, None, "child-a", "child-b"]), answer, refused)


async def _run(n: int, case: Case, url: str) -> tuple[Case, Got]:
    headers = {"x-case": str(n)}  # passed through: the upstream answers with case n's answer
    if case.session:
        headers["x-session-id"] = case.session
    return case, await post(url + case.path, case.request, headers)


def _answer_of(cases: list[Case]) -> Any:
    def answer(head: str, body: bytes) -> Answer:
        for line in head.split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "x-case":
                return cases[int(value)].answer
        raise AssertionError(f"a request without its case: {head!r}")

    return answer


def _check(directory: Path, rec: Any, results: list[tuple[Case, Got]], forwarded: int) -> None:
    for case, got in results:
        if case.refused:
            assert got.status == 400, got.body
            continue
        if got.status == 503 and b"the recording stopped" in got.body:
            continue
        if case.answer.status not in RELAYABLE_STATUSES:  # nothing of it can be forwarded
            assert (got.status, got.json()["error"]["code"]) == (502, "INVALID_RESPONSE")
            continue
        assert (got.status, got.body) == (case.answer.status, case.answer.sent_body), case
    assert len(rec.reports) == len(logged_calls(directory)) == forwarded
    crashes = [r.message for r in rec.reports if "could not read" in (r.message or "")]
    assert crashes == []  # every malformed answer was read as one, no dialect tripped on it
    problems, _ = check_scenario(str(directory))
    failed_children = {r.file for r in rec.reports if r.failed and r.file != "session.jsonl"}
    for problem in problems:  # only a child's failed call keeps the scenario from loading
        assert any(f"{name}:" in problem for name in failed_children), problem


async def test_every_fuzzed_call_is_in_the_log_or_its_failure(
        tmp_path: Path, no_tracebacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(SEED)
    cases = [_case(rng) for _ in range(CASES)]
    async with FakeUpstream(_answer_of(cases)) as upstream:
        for start in range(0, CASES, BATCH):
            batch = cases[start:start + BATCH]
            directory = tmp_path / f"batch{start}"
            before = len(upstream.requests)
            last = start + BATCH >= CASES
            if last:  # the last batch's disk fills up at a random call
                _failing_write(monkeypatch, after=rng.randrange(5, 30), error=errno.ENOSPC)
            try:
                async with record_scenario(directory, upstream.url) as rec:
                    results: list[tuple[Case, Got]] = []
                    for group in range(0, len(batch), 5):  # five calls at a time
                        results += await asyncio.gather(*(
                            _run(start + group + k, c, rec.url)
                            for k, c in enumerate(batch[group:group + 5])))
            except InputError as exc:
                assert last and exc.code == "RECORD_WRITE", exc
                assert rec.failure is exc
                monkeypatch.undo()
                assert any(g.status == 503 for _, g in results)  # later calls were refused
            else:
                assert not last, "the injected disk failure was not reported"
            forwarded = len(upstream.requests) - before
            if rec.failure is None:
                assert forwarded == sum(1 for c in batch if not c.refused)
                _check(directory, rec, results, forwarded)
            else:  # calls that ended once the disk was full are not in the log
                for case, got in results:
                    if not case.refused and got.status != 503 and \
                            case.answer.status in RELAYABLE_STATUSES:
                        assert (got.status, got.body) == (case.answer.status,
                                                          case.answer.sent_body)
                assert len(rec.reports) == len(logged_calls(directory)) < forwarded
