"""What a recorded call carries, block by block, for the Messages and Responses SDK tests, and
the real server those tests point their SDK clients at."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from replay_engine import ReplayEngine, Scenario, SessionScript, WireOptions, load_scenario
from replay_engine.server import ReplayServer
from tests.wire.wire_helpers import write_scenario

Client = TypeVar("Client")


class Served(Generic[Client]):
    """The replay server on a real engine, and one SDK client per run (closed at the end)."""

    def __init__(self, url: str, engine: ReplayEngine,
                 make: Callable[[str, str, int], Client]) -> None:
        self.url = url
        self.engine = engine
        self._make = make
        self.clients: dict[tuple[str, int], Client] = {}

    def client(self, run: str, *, retries: int = 0) -> Client:
        """The SDK client of ``run`` (``make(url, run, retries)`` builds it once)."""
        key = (run, retries)
        if key not in self.clients:
            self.clients[key] = self._make(self.url, run, retries)
        return self.clients[key]


@contextlib.asynccontextmanager
async def serving(scripts: list[SessionScript], make: Callable[[str, str, int], Client],
                  wire: WireOptions | None = None) -> AsyncIterator[Served[Client]]:
    """The replay server over a real engine on uvicorn, 127.0.0.1, an ephemeral port."""
    engine = ReplayEngine(scripts)
    async with ReplayServer(engine, wire=wire) as server:
        served = Served(server.url, engine, make)
        try:
            yield served
        finally:
            for api in served.clients.values():
                await api.close()  # type: ignore[attr-defined]

_KINDS = {"text", "reasoning", "tool-call"}
_DELTAS = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


def recorded_blocks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What docs/format.md#wire says a call carries, block by block in opening order.

    Each block: kind, content (its deltas, or its block-end's content when it recorded no
    delta), a tool's id and name (first delta that has them, else the block-end) and a
    reasoning block-end's signature; plus the call's usage and finish reason.
    """
    blocks: list[dict[str, Any]] = []
    open_: dict[Any, dict[str, Any]] = {}
    usage = None
    finish = None

    def new(index: Any, kind: str) -> dict[str, Any]:
        block = {"kind": kind, "parts": [], "id": None, "name": None, "delta": False,
                 "signature": None}
        blocks.append(block)
        open_[index] = block
        return block

    for chunk in chunks:
        kind = chunk["type"]
        index = chunk.get("index")
        if kind == "block-start" and chunk.get("blockType") in _KINDS:
            new(index, chunk["blockType"])
        elif kind in _DELTAS:
            block = open_.get(index) or new(index, _DELTAS[kind])
            block["delta"] = True
            if kind == "tool-call-delta":
                block["parts"].append(chunk.get("argumentsDelta", ""))
                block["id"] = block["id"] or chunk.get("id")
                block["name"] = block["name"] or chunk.get("name")
            else:
                block["parts"].append(chunk.get("text", ""))
        elif kind == "block-end" and isinstance(chunk.get("block"), dict):
            whole = chunk["block"]
            block = open_.pop(index, None)
            if block is None:
                if whole.get("type") not in _KINDS:
                    continue
                block = new(index, whole["type"])
                del open_[index]
            if not block["delta"]:
                block["parts"] = [whole.get("arguments" if block["kind"] == "tool-call" else "text", "")]
            block["id"] = block["id"] or whole.get("id")
            block["name"] = block["name"] or whole.get("name")
            block["signature"] = whole.get("signature")
        elif kind == "usage":
            usage = chunk["usage"]
        elif kind == "finish":
            finish = chunk["reason"]
    return {"blocks": [{"kind": b["kind"], "content": "".join(b["parts"]), "id": b["id"],
                        "name": b["name"], "signature": b["signature"]} for b in blocks],
            "usage": usage or {}, "finish": finish}


# One call with a signed reasoning block, text and a tool call, on sparse recorded indices.
SIGNED = {"kind": "chunks", "chunks": [
    {"type": "block-start", "index": 3, "blockType": "reasoning"},
    {"type": "reasoning-delta", "index": 3, "text": "Think "},
    {"type": "reasoning-delta", "index": 3, "text": "twice."},
    {"type": "block-end", "index": 3,
     "block": {"type": "reasoning", "text": "Think twice.", "signature": "c2lnbmVk"}},
    {"type": "block-start", "index": 7, "blockType": "text"},
    {"type": "text-delta", "index": 7, "text": "Reading "},
    {"type": "text-delta", "index": 7, "text": "it."},
    {"type": "block-end", "index": 7, "block": {"type": "text", "text": "Reading it."}},
    {"type": "block-start", "index": 8, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 8, "id": "toolu_1", "argumentsDelta": '{"path"'},
    {"type": "tool-call-delta", "index": 8, "id": "toolu_1", "name": "read",
     "argumentsDelta": ': "a.txt"}'},
    {"type": "block-end", "index": 8, "block": {"type": "tool-call", "id": "toolu_1",
                                                "name": "read", "arguments": '{"path": "a.txt"}'}},
    {"type": "usage", "usage": {"inputTokens": 12, "outputTokens": 7, "cacheReadTokens": 4,
                                "reasoningTokens": 3}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]}


def json_object(arguments: str) -> dict[str, Any] | None:
    """The recorded arguments as a JSON object (``{}`` for none), or None when they are not one."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


PREFIX = [{"type": "block-start", "index": 0, "blockType": "text"},
          {"type": "text-delta", "index": 0, "text": "Half "},
          {"type": "text-delta", "index": 0, "text": "an answer"}]
"""The streamed prefix of the throw entries the error tests author."""


def scenario_scripts(tmp_path: Path, entries: list[dict[str, Any]]) -> list[SessionScript]:
    """The scripts of a one-session scenario written from ``entries`` under ``tmp_path``."""
    return load_scenario(write_scenario(tmp_path / "scenario", entries)).scripts


async def check_every_call(served: Served[Client], scenario: Scenario, name: str,
                           check_call: Callable[[Served[Client], str, Any, str], Awaitable[None]]) -> None:
    """Check every recorded call of every session streamed and created, then that both runs
    consumed the scenario."""
    for i, script in enumerate(scenario.scripts):
        for j, item in enumerate(script.entries):
            await check_call(served, f"s{i}", item.entry, f"{name}[{i}] call {j}")
    for run in ("stream", "create"):
        assert served.engine.consumed_problems(run) == []
