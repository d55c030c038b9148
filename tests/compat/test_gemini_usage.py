"""Gemini usage counts reasoning once (docs/format.md#wire-gemini): a recorded ``outputTokens`` includes its
``reasoningTokens``, while Google counts thoughts beside the candidates.

A call recorded with ``outputTokens: 23`` and ``reasoningTokens: 20`` goes out as 3 candidate
tokens, 20 thought tokens and a total of prompt + 23, so every Gemini client that adds
candidates and thoughts reports the 23 output tokens recorded. Judged by google-genai (Python),
@google/genai (Node), and the recorder reading the same wire back into the same usage.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from replay_engine.record import record_scenario
from replay_engine.scenario.loading import load_scenario
from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import NODE_GENAI_DIR, node_or_skip
from tests.compat.gemini_helpers import connected, generate, stream

pytestmark = pytest.mark.anyio

USAGE = {"inputTokens": 10, "outputTokens": 23, "reasoningTokens": 20}
WIRE = {"prompt_token_count": 10, "candidates_token_count": 3, "thoughts_token_count": 20,
        "total_token_count": 33}


def _scenario(root: Path, calls: int) -> Path:
    """A scenario of ``calls`` identical calls: a thought, a text, the usage above."""
    entry = {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "thinking"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "thinking"}},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "hi"},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "hi"}},
        {"type": "usage", "usage": USAGE},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}
    root.mkdir()
    (root / "replay.override.json").write_text(json.dumps([entry] * calls))
    return root


def _counts(usage: Any) -> dict[str, int]:
    return {k: getattr(usage, k) for k in WIRE}


async def test_google_genai_reports_the_recorded_output_once(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server, connected(server.url) as api:
        streamed = await stream(api)
        made = await generate(api)
    for usage in (streamed[-1].usage_metadata, made.usage_metadata):
        assert usage is not None
        assert _counts(usage) == WIRE
        # What an agent adds up as its output: candidates plus thoughts, the recorded 23.
        assert (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) == 23


async def test_google_genai_node_reports_the_recorded_output_once(tmp_path: Path) -> None:
    node = node_or_skip(NODE_GENAI_DIR, "@google/genai")
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server:
        got = []
        for mode in ("stream", "generate"):
            process = await asyncio.create_subprocess_exec(
                node, str(NODE_GENAI_DIR / "assemble.mjs"), server.url, mode, "1",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=NODE_GENAI_DIR)
            out, err = await asyncio.wait_for(process.communicate(), 60)
            assert process.returncode == 0, err.decode()
            got.append(json.loads(out)[0]["responses"][-1]["usageMetadata"])
    for usage in got:
        assert usage == {"promptTokenCount": 10, "candidatesTokenCount": 3,
                         "thoughtsTokenCount": 20, "totalTokenCount": 33}


async def test_recording_the_replayed_wire_gives_the_same_usage_back(tmp_path: Path) -> None:
    """Round trip: google-genai through the recorder, the replay server as its upstream."""
    recorded = tmp_path / "recorded"
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server:
        async with record_scenario(recorded, server.url) as rec, connected(rec.url) as api:
            await stream(api)
            await generate(api)
    usages = [chunk["usage"] for script in load_scenario(recorded).scripts
              for item in script.entries for chunk in getattr(item.entry, "chunks", [])
              if chunk.get("type") == "usage"]
    assert usages == [USAGE, USAGE]
