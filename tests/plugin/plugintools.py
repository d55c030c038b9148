"""What the plugin's tests share: the generated test project's pieces, running pytest on it,
reading its report, and a scripted fake provider to record from."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.record.fakeupstream import Answer, FakeUpstream, json_body, sse, text_answer

INI = """[pytest]
addopts = -p no:cacheprovider -p no:benchmark
filterwarnings =
    error
    ignore::DeprecationWarning:websockets.*
    ignore::DeprecationWarning:uvicorn.*
"""

AGENT = '''
"""A small agent with a real tool loop on the openai SDK."""
import openai

QUESTION = "What files are in the workspace? Then say hello."


def run_agent(base_url, tool_output="README.md\\nsrc\\n", follow_up=None, stream=False,
              session=None):
    headers = {"X-Session-Id": session} if session else {}
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    messages = [{"role": "user", "content": QUESTION}]
    while True:
        if stream:
            with client.chat.completions.stream(model="m", messages=messages,
                                                extra_headers=headers) as s:
                message = s.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(
                model="m", messages=messages, extra_headers=headers).choices[0].message
        messages.append({"role": "assistant", "content": message.content or "",
                         **({"tool_calls": [c.model_dump() for c in message.tool_calls]}
                            if message.tool_calls else {})})
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_output})
    if follow_up is not None:
        messages.append({"role": "user", "content": follow_up})
        return client.chat.completions.create(
            model="m", messages=messages, extra_headers=headers).choices[0].message.content
    return message.content


def ask(base_url, text, session=None):
    """One streamed call asking ``text``: the answer's text."""
    headers = {"X-Session-Id": session} if session else {}
    client = openai.OpenAI(base_url=base_url, max_retries=0)
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": text}],
                                        extra_headers=headers) as s:
        return s.get_final_completion().choices[0].message.content
'''

ANSWER = "The workspace has README.md and src. Hello!"
PLUGIN = ("-p", "replay_engine.testing.pytest_plugin")
XDIST = ("-p", "xdist.plugin")
RECORDED = "Recorded answer."
KEY = "sk-test-0123456789abcdef"
"""The API key recording tests send upstream (it must never reach a file)."""


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest on the project, in a subprocess, with the plugin and every outcome listed."""
    return project.runpytest_subprocess(*PLUGIN, "-rA", *args, timeout=110)


def section(result: pytest.RunResult, test: str) -> str:
    """The failure text pytest printed for one test (from its header to the next one)."""
    text = result.stdout.str()
    start = text.index(f"_ {test} _")
    ends = [i for i in (text.find("\n___", start + 1), text.find("\n===", start + 1)) if i != -1]
    return text[start:min(ends)]


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (relative name → bytes): what "untouched" compares."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def text_entry(text: str) -> dict[str, Any]:
    """A recorded text answer as a sidecar entry."""
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "finish", "reason": {"kind": "stop"}}]}


def bare_scenario(root: Path, entries: list[dict[str, Any]]) -> Path:
    """A scenario whose primary calls are the bare-list sidecar ``entries``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "session.jsonl").write_text(json.dumps({"type": "session", "id": "p",
                                                    "createdAt": 1}) + "\n")
    (root / "replay.override.json").write_text(json.dumps(entries))
    return root


def broken_answer() -> Answer:
    """A stream that breaks off after its first text delta (no finish, no ``[DONE]``)."""
    return sse([{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Half an "},
                              "finish_reason": None}]}], done=False)


def recorded_answer(body: bytes) -> Answer:
    """``Recorded answer.`` streamed in two deltas, or whole when the call is not streamed."""
    if json.loads(body or b"{}").get("stream"):
        return text_answer("Recorded ", "answer.")
    return json_body({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                          "role": "assistant", "content": RECORDED}}]})


ROUTES: dict[str, Callable[[bytes], Answer]] = {
    "ok": recorded_answer,
    "auth": lambda body: json_body({"error": {"message": "Incorrect API key provided: sk-***",
                                         "type": "invalid_request_error",
                                         "code": "invalid_api_key"}}, 401),
    "rate": lambda body: json_body({"error": {"message": "Rate limit reached for requests",
                                         "type": "requests", "code": "rate_limit_exceeded"}}, 429),
    "broken": lambda body: broken_answer(),
    "hang": lambda body: Answer(200, {"content-type": "text/event-stream"}, silent=True),
}
"""What the fake provider answers under each path prefix (``URL/ok/v1/...``)."""
_PATH = re.compile(r"^POST /([^/]+)/")


class ThreadedUpstream:
    """The scripted fake provider on an event loop of its own thread, so the pytest processes
    a test starts can record from it. ``url(route)`` is the base URL of one behaviour."""

    def __init__(self, routes: dict[str, Callable[[bytes], Answer]] | None = None) -> None:
        table = ROUTES if routes is None else routes

        def answer(head: str, body: bytes) -> Answer:
            found = _PATH.match(head)
            return table[found.group(1) if found else "ok"](body)

        self.fake = FakeUpstream(answer)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.__aenter__(), self.loop).result(10)

    def url(self, route: str = "ok") -> str:
        return f"{self.fake.url}/{route}"

    def wait_for_requests(self, count: int, timeout: float = 30) -> None:
        """Wait (on the upstream's own events) until it got ``count`` requests."""
        waiting = self.fake.wait(lambda: len(self.fake.requests) >= count, timeout)
        asyncio.run_coroutine_threadsafe(waiting, self.loop).result(timeout + 5)

    @property
    def requests(self) -> list[tuple[str, bytes]]:
        """Every request it got (head, body)."""
        return list(self.fake.requests)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.__aexit__(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


def wait_until(what: str, check: Callable[[], bool], timeout: float = 30) -> None:
    """Poll ``check`` (something with no event to await: another process's files) until it
    holds, failing after a bounded deadline."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)
