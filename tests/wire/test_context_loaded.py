"""The recorded context is part of the loaded scenario: the engine compares live requests with
what the log held when it was loaded, opens no file while it serves, and takes a rewritten
log's context only with its scripts, on reload."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.server import serve_scenario
from tests.app.apptools import BASIC_PROMPT, BASIC_TOOL_TURN

pytestmark = pytest.mark.anyio
QUESTION = BASIC_PROMPT[0]["content"]
OTHER = "Which files are here?"


def _asking(question: str) -> list[list[dict[str, Any]]]:
    """basic-chat's two requests, the user asking ``question``."""
    first = [{"role": "user", "content": question}]
    return [first, [*first, *BASIC_TOOL_TURN[1:]]]


async def _verdict(server_url: str, question: str, run: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server_url) as http:
        for messages in _asking(question):
            answer = await http.post(f"/runs/{run}/v1/chat/completions",
                                     json={"model": "m", "messages": messages})
            assert answer.status_code == 200, answer.text
        verdict = await http.post(f"/runs/{run}/replay/v1/assert-consumed")
    found: dict[str, Any] = verdict.json()
    assert (verdict.status_code == 200) is found["ok"]
    return found


@pytest.fixture
def scenario(samples: Path, tmp_path: Path) -> Path:
    target = tmp_path / "basic-chat"
    shutil.copytree(samples / "basic-chat", target)
    return target


async def test_a_log_moved_away_after_load_still_judges(scenario: Path, tmp_path: Path) -> None:
    async with serve_scenario(scenario) as server:
        server.engine.strict = True
        (scenario / "session.jsonl").rename(tmp_path / "elsewhere.jsonl")
        moved = await _verdict(server.url, OTHER, "moved")
        faithful = await _verdict(server.url, QUESTION, "faithful")
    assert moved["ok"] is False and f"user message 1: recorded {QUESTION!r}" in str(moved)
    assert faithful["ok"] is True, faithful


async def test_a_log_rewritten_on_disk_counts_only_once_reloaded(scenario: Path) -> None:
    log = scenario / "session.jsonl"
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        server.engine.strict = True
        log.write_text(log.read_text(encoding="utf-8").replace(QUESTION, OTHER), encoding="utf-8")
        before = await _verdict(server.url, OTHER, "before")
        still = await _verdict(server.url, QUESTION, "still")
        assert (await http.post("/replay/v1/reload")).status_code == 200
        after = await _verdict(server.url, OTHER, "after")
    assert before["ok"] is False and f"recorded {QUESTION!r}" in str(before)
    assert still["ok"] is True, still  # the loaded scripts' context, not the file's
    assert after["ok"] is True, after  # reloaded: the new scripts with the new context
