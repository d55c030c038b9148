"""The recorder's chat-completions rebuilder over the whole corpus, fed in arbitrary pieces:
every DeepSeek-producible call comes back chunk for chunk."""

from __future__ import annotations

import httpx
import pytest

from replay_engine import ChunksEntry, ReplayEngine
from replay_engine.errors import UpstreamStreamError
from replay_engine.record.dialect import SseEvent, SseParser
from replay_engine.record.openai_chat import OPENAI_CHAT
from replay_engine.server import ReplayServer
from tests.record.recordtools import CORPUS
from tests.wire.test_conformance_wire import _corpus_scripts
from tests.wire.wire_helpers import deepseek_producible

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]


def test_sse_parser_joins_events_split_anywhere() -> None:
    raw = b"data: a\r\n\r\n: comment\nevent: x\ndata: b\ndata: c\n\ndata: [DONE]\r\r"
    unterminated = SseParser()
    assert unterminated.feed(b"data: half") == [] and unterminated.close() == []
    for size in (1, 2, 3, 5, len(raw)):
        parser = SseParser()
        events = [e for i in range(0, len(raw), size) for e in parser.feed(raw[i:i + size])]
        events += parser.close()
        assert events == [SseEvent(None, "a"), SseEvent("x", "b\nc"), SseEvent(None, "[DONE]")]


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
async def test_rebuilds_every_producible_corpus_call_from_the_wire_bytes() -> None:
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    producible = 0
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                chunks = item.entry.chunks
                body = {"model": "m", "messages": [], "stream": True}
                parser, rebuilder, got = SseParser(), OPENAI_CHAT.rebuilder(), []
                async with http.stream("POST", "/v1/chat/completions", json=body,
                                       headers={"X-Session-Id": f"s{i}"}) as response:
                    raw = await response.aread()
                try:
                    for k in range(0, len(raw), 7):
                        for event in parser.feed(raw[k:k + 7]):
                            got += rebuilder.feed(event)
                except UpstreamStreamError:  # an error finish streams as a failure on chat
                    assert chunks[-1]["reason"]["kind"] == "error", f"{names[i]} call {j}"
                    continue
                assert rebuilder.ended, f"{names[i]} call {j}"
                got += rebuilder.end()
                if deepseek_producible(chunks):
                    producible += 1
                    assert got == chunks, f"{names[i]} call {j}"
    assert producible >= 850
