"""What the recorder tests check of a recording: what the client got, and that every call it
forwarded is in a log (finished, or as the failure it was), the scenario valid."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.scenario.check import check_scenario


@dataclass
class Got:
    """What a client read: the status (None when the connection broke before a head), the
    body bytes as they came, and whether the body ended cleanly."""

    status: int | None
    body: bytes
    whole: bool

    def json(self) -> Any:
        return json.loads(self.body)


async def post(url: str, body: bytes | dict[str, Any],
               headers: dict[str, str] | None = None) -> Got:
    """One POST read raw (no decoding of the content encoding)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    got = b""
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            async with http.stream("POST", url, content=content, headers={
                    "content-type": "application/json", **(headers or {})}) as response:
                async for part in response.aiter_raw():
                    got += part
                return Got(response.status_code, got, True)
        except httpx.HTTPError:
            return Got(None, got, False)


@dataclass
class Logged:
    """One call as its session's log holds it."""

    file: str
    key: str
    code: str | None
    chunks: int


def logged_calls(directory: Path) -> list[Logged]:
    """Every call of every log (by its ``step/start``), with the failure code its ``step/end``
    records; packed rows count their chunks."""
    out: list[Logged] = []
    for log in sorted(directory.glob("session*.jsonl")):
        current: Logged | None = None
        for line in log.read_text(encoding="utf-8").splitlines()[1:]:
            event = json.loads(line)
            kind, data = event["type"], event["data"]
            if kind == "step/start":
                current = Logged(log.name, f"{data['turn']}/{data['step']}", None, 0)
                out.append(current)
            elif kind == "assistant/chunk" and current is not None:
                current.chunks += 1
            elif kind.endswith("-chunks") and current is not None:
                current.chunks += len(data.get("texts", data.get("args", [])))
            elif kind == "step/end" and current is not None:
                error = data.get("error")
                current.code = error["code"] if isinstance(error, dict) else None
    return out


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``predicate`` until it holds (AssertionError past ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.005)


def assert_valid(directory: Path, *, child_problems: int = 0) -> None:
    """The scenario loads (up to the child failures the recorder itself reported)."""
    problems, _ = check_scenario(str(directory))
    assert len(problems) == child_problems, problems


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Any:
    """Fails the test when anything (uvicorn, asyncio, the recorder) logged an error."""
    caplog.set_level(logging.WARNING)
    yield caplog
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not errors, [r.getMessage() for r in errors]
