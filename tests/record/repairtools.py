"""What the from-divergence tests share: an upstream that answers each question by what it
asked (and counts the calls), a small multi-session agent on the openai SDK, and recording a
scenario with it through the real recorder."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from replay_engine.record import record_scenario
from tests.record.fakeupstream import Answer, FakeUpstream, json_body, sse

Plan = dict[str, list[str]]
"""Per session id (in the order they run), the questions it asks one after another."""


def _delta(text: str, finish: str | None = None) -> dict[str, object]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": text} if text else {},
                         "finish_reason": finish}]}


def echo_answer(head: str, body: bytes) -> Answer:
    """``re: QUESTION`` streamed in two deltas; a question starting ``fail`` gets a 500."""
    request = json.loads(body)
    question = request["messages"][-1]["content"]
    if question.startswith("fail"):
        return json_body({"error": {"message": "upstream is down", "type": "server_error",
                                    "code": "server_error"}}, 500)
    return sse([_delta("re: "), _delta(question), _delta("", "stop")])


def echo_upstream() -> FakeUpstream:
    """A loopback provider answering every question by echoing it; ``.requests`` counts."""
    return FakeUpstream(echo_answer)


async def converse(base_url: str, plan: Plan) -> dict[str, list[str]]:
    """Run each session's questions in turn (one streamed call each, the conversation
    growing); returns each session's answers. A failed call ends that session's run."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test-repair", max_retries=0)
    answers: dict[str, list[str]] = {}
    try:
        for session, questions in plan.items():
            messages: list[dict[str, str]] = []
            said = answers.setdefault(session, [])
            for question in questions:
                messages.append({"role": "user", "content": question})
                try:
                    stream = await client.chat.completions.create(
                        model="m", messages=messages, stream=True,  # type: ignore[arg-type]
                        extra_headers={"X-Session-Id": session})
                    text = "".join([c.choices[0].delta.content or "" async for c in stream
                                    if c.choices])
                except openai.APIError as exc:
                    said.append(f"error: {exc}")
                    break
                said.append(text)
                messages.append({"role": "assistant", "content": text})
    finally:
        await client.close()
    return answers


async def record_plan(directory: Path, upstream: str, plan: Plan, log_format: str) -> None:
    """Record ``plan`` into ``directory`` through the recorder, in ``log_format``."""
    async with record_scenario(directory, upstream, log_format=log_format) as rec:
        await converse(rec.base_url, plan)


@dataclass
class RepairRun:
    """A finished ``dsh-replay record --from-divergence`` process."""

    code: int
    out: str
    err: str
    answers: dict[str, list[str]]


async def repair(directory: Path, upstream: str, plan: Plan | None, *extra: str,
                 during: Callable[[str], object] | None = None,
                 stop: signal.Signals = signal.SIGINT) -> RepairRun:
    """Run the CLI on ``directory``, drive ``plan`` through it, stop it with ``stop``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "record", str(directory), "--upstream",
        upstream, "--from-divergence", "--port", "0", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    answers: dict[str, list[str]] = {}
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        if plan is not None and first.startswith("http://"):
            url = first.strip()
            answers = await converse(url + "/v1", plan)
            if during is not None:
                during(url)
        if first.startswith("http://"):  # serving: stop it as a user does
            proc.send_signal(stop)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return RepairRun(proc.returncode, first + out.decode(), err.decode(), answers)
