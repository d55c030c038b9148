"""Helpers of the wire tests: scenario writers and a DeepSeek-style client that rebuilds chunks.

The rebuilder follows docs/format.md#wire-openai-chat from the client's side: the opening role chunk
carries nothing; blocks open in first-seen order (one reasoning block, one text
block, one block per tool index); a tool block keeps the last id and name the
wire gave it and stamps them on each of its deltas; and at ``[DONE]`` it emits
every block-end, then usage, then finish.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai

FINISH_BACK = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def text_entry(text: str, *, parts: int = 1) -> dict[str, Any]:
    """A chunks entry streaming ``text`` in ``parts`` deltas (split after spaces)."""
    words = text.split(" ")
    size = -(-len(words) // parts)
    pieces = [" ".join(words[i:i + size]) + (" " if i + size < len(words) else "")
              for i in range(0, len(words), size)]
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": p} for p in pieces),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": len(pieces)}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}


def write_scenario(root: Path, entries: list[dict[str, Any]] | None = None, *,
                   primary_log: Path | None = None,
                   children: list[list[dict[str, Any]] | Path] = ()) -> Path:  # type: ignore[assignment]
    """A scenario directory: a bare-list sidecar (or a copied log) plus child logs.

    A child given as a list of entries becomes a log whose calls are those chunks entries.
    """
    root.mkdir(parents=True, exist_ok=True)
    if primary_log is not None:
        (root / "session.jsonl").write_text(primary_log.read_text(encoding="utf-8"),
                                            encoding="utf-8")
    else:
        (root / "session.jsonl").write_text(
            json.dumps({"type": "session", "id": "primary", "createdAt": 1}) + "\n")
    if entries is not None:
        (root / "replay.override.json").write_text(json.dumps(entries, indent=1))
    for n, child in enumerate(children, 1):
        if isinstance(child, Path):
            lines = child.read_text(encoding="utf-8").splitlines()
            header = json.loads(lines[0])
            header.update(id=f"child-{n}", createdAt=1000 + n)
            body = [json.dumps(header), *lines[1:]]
        else:
            body = [json.dumps({"type": "session", "id": f"child-{n}", "createdAt": 1000 + n})]
            seq = 0
            for step, entry in enumerate(child, 1):
                for chunk in entry["chunks"]:
                    body.append(json.dumps({"type": "assistant/chunk", "seq": seq, "time": seq,
                                            "data": {"turn": 1, "step": step, "chunk": chunk}}))
                    seq += 1
        (root / f"session.{n}.jsonl").write_text("\n".join(body) + "\n", encoding="utf-8")
    return root


def sdk(url: str, run: str | None = None) -> openai.AsyncOpenAI:
    """The official SDK pointed at the replay server (no retries: every call is scripted)."""
    base = f"{url}/runs/{run}/v1" if run else f"{url}/v1"
    return openai.AsyncOpenAI(base_url=base, api_key="replay", max_retries=0)


async def sdk_stream(client: openai.AsyncOpenAI, session: str | None,
                     messages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One streamed call through the SDK; the chunks exactly as the wire set them."""
    headers = {"X-Session-Id": session} if session is not None else {}
    stream = await client.chat.completions.create(
        model="deepseek-chat", messages=messages or [{"role": "user", "content": "go"}],  # type: ignore[arg-type]
        stream=True, extra_headers=headers)
    return [chunk.model_dump(exclude_unset=True) async for chunk in stream]


class DeepSeekRebuilder:
    """Rebuilds recorded chunks from chat-completion chunks, as a DeepSeek client adapter would."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.blocks: list[dict[str, Any]] = []
        self.by_kind: dict[str, dict[str, Any]] = {}
        self.tools: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None

    def _open(self, kind: str) -> dict[str, Any]:
        block = {"kind": kind, "index": len(self.blocks), "parts": [], "id": None, "name": None}
        self.blocks.append(block)
        self.out.append({"type": "block-start", "index": block["index"], "blockType": kind})
        return block

    def feed(self, chunk: dict[str, Any]) -> None:
        """Fold one wire chunk."""
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if "role" in delta and delta.get("content") == "":
                delta = {k: v for k, v in delta.items() if k not in ("role", "content")}
            for field, kind in (("reasoning_content", "reasoning"), ("content", "text")):
                if delta.get(field) is not None:
                    block = self.by_kind.get(kind) or self._open(kind)
                    self.by_kind[kind] = block
                    block["parts"].append(delta[field])
                    self.out.append({"type": f"{kind}-delta", "index": block["index"],
                                     "text": delta[field]})
            for call in delta.get("tool_calls") or []:
                block = self.tools.get(call["index"])
                if block is None:
                    block = self.tools[call["index"]] = self._open("tool-call")
                function = call.get("function") or {}
                if call.get("id") is not None:
                    block["id"] = call["id"]
                if function.get("name") is not None:
                    block["name"] = function["name"]
                rebuilt: dict[str, Any] = {"type": "tool-call-delta", "index": block["index"],
                                           "id": block["id"]}
                if block["name"] is not None:
                    rebuilt["name"] = block["name"]
                arguments = function.get("arguments") or ""
                block["parts"].append(arguments)
                rebuilt["argumentsDelta"] = arguments
                self.out.append(rebuilt)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def done(self) -> list[dict[str, Any]]:
        """At ``[DONE]``: block-ends, usage, finish."""
        for block in self.blocks:
            text = "".join(block["parts"])
            if block["kind"] == "tool-call":
                whole = {"type": "tool-call", "id": block["id"], "name": block["name"],
                         "arguments": text}
            else:
                whole = {"type": block["kind"], "text": text}
            self.out.append({"type": "block-end", "index": block["index"], "block": whole})
        if self.usage is not None:
            self.out.append({"type": "usage", "usage": usage_back(self.usage)})
        if self.finish is not None:
            kind = FINISH_BACK.get(self.finish)
            reason: dict[str, Any] = ({"kind": kind} if kind else
                                      {"kind": "error", "failure": {"code": self.finish.upper()}})
            self.out.append({"type": "finish", "reason": reason})
        return self.out


def usage_back(wire: dict[str, Any]) -> dict[str, Any]:
    """Recorded usage from DeepSeek usage (only the counters the wire carried)."""
    hit = wire.get("prompt_cache_hit_tokens")
    usage: dict[str, Any] = {
        "inputTokens": wire.get("prompt_cache_miss_tokens", wire["prompt_tokens"] - (hit or 0)),
        "outputTokens": wire["completion_tokens"],
    }
    if hit is not None:
        usage["cacheReadTokens"] = hit
    details = wire.get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        usage["reasoningTokens"] = details["reasoning_tokens"]
    return usage


def rebuild(wire_chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded chunks rebuilt from one call's wire chunks."""
    rebuilder = DeepSeekRebuilder()
    for chunk in wire_chunks:
        rebuilder.feed(chunk)
    return rebuilder.done()


_DELTA_OF = {"text": "text-delta", "reasoning": "reasoning-delta", "tool-call": "tool-call-delta"}


def deepseek_producible(chunks: list[dict[str, Any]]) -> bool:
    """Whether a DeepSeek stream could have produced exactly these chunks (structural check).

    Blocks open in order with their first delta right after (at most one text and one
    reasoning block), every delta carries exactly its wire fields (a tool delta its block's
    current id and name), then every block-end in block order holding the concatenated
    deltas, an optional usage, and a stop / tool-calls / max-tokens finish with nothing else.
    """
    blocks: list[dict[str, Any]] = []
    i, n = 0, len(chunks)
    while i < n and chunks[i]["type"] in ("block-start", *_DELTA_OF.values()):
        chunk = chunks[i]
        if chunk["type"] == "block-start":
            kind = chunk.get("blockType")
            if (set(chunk) != {"type", "index", "blockType"} or kind not in _DELTA_OF
                    or chunk["index"] != len(blocks)
                    or (kind != "tool-call" and any(b["kind"] == kind for b in blocks))
                    or i + 1 >= n or chunks[i + 1]["type"] != _DELTA_OF[kind]
                    or chunks[i + 1].get("index") != len(blocks)):
                return False
            blocks.append({"kind": kind, "parts": [], "id": None, "name": None})
        else:
            index = chunk.get("index")
            if not isinstance(index, int) or not 0 <= index < len(blocks):
                return False
            block = blocks[index]
            if chunk["type"] != _DELTA_OF[block["kind"]]:
                return False
            if block["kind"] == "tool-call":
                if set(chunk) != {"type", "index", "id", "name", "argumentsDelta"} or not (
                        isinstance(chunk["id"], str) and isinstance(chunk["name"], str)):
                    return False
                block["id"], block["name"] = chunk["id"], chunk["name"]
                block["parts"].append(chunk["argumentsDelta"])
            else:
                if set(chunk) != {"type", "index", "text"}:
                    return False
                block["parts"].append(chunk["text"])
        i += 1
    for index, block in enumerate(blocks):
        text = "".join(block["parts"])
        whole = ({"type": "tool-call", "id": block["id"], "name": block["name"], "arguments": text}
                 if block["kind"] == "tool-call" else {"type": block["kind"], "text": text})
        if i >= n or chunks[i] != {"type": "block-end", "index": index, "block": whole}:
            return False
        i += 1
    if i < n and chunks[i]["type"] == "usage":
        usage = chunks[i].get("usage")
        if (set(chunks[i]) != {"type", "usage"} or not isinstance(usage, dict)
                or not {"inputTokens", "outputTokens"} <= set(usage)
                <= {"inputTokens", "outputTokens", "cacheReadTokens", "reasoningTokens"}):
            return False
        i += 1
    if i >= n or set(chunks[i]) != {"type", "reason"} or chunks[i]["type"] != "finish":
        return False
    if chunks[i]["reason"] not in ({"kind": "stop"}, {"kind": "tool-calls"}, {"kind": "max-tokens"}):
        return False
    return i + 1 == n


def recorded_content(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a call carries: text, reasoning, tool calls, usage, finish (docs/format.md#wire-openai-chat round
    trip).

    A block's content is its deltas, or its block-end when no delta was recorded for it.
    """
    blocks: dict[Any, dict[str, Any]] = {}
    order: list[Any] = []
    usage = None
    finish = None

    def block(index: Any, kind: str) -> dict[str, Any]:
        if index not in blocks:
            blocks[index] = {"kind": kind, "parts": [], "id": None, "name": None, "delta": False}
            order.append(index)
        return blocks[index]

    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("text-delta", "reasoning-delta"):
            b = block(chunk.get("index"), kind.removesuffix("-delta"))
            b["parts"].append(chunk.get("text", ""))
            b["delta"] = True
        elif kind == "tool-call-delta":
            b = block(chunk.get("index"), "tool-call")
            b["parts"].append(chunk.get("argumentsDelta", ""))
            b["id"] = b["id"] or chunk.get("id")
            b["name"] = b["name"] or chunk.get("name")
            b["delta"] = True
        elif kind == "block-end" and isinstance(chunk.get("block"), dict):
            whole = chunk["block"]
            b = block(chunk.get("index"), str(whole.get("type")))
            if not b["delta"]:
                b["parts"] = [whole.get("arguments" if b["kind"] == "tool-call" else "text", "")]
                b["id"], b["name"] = whole.get("id"), whole.get("name")
        elif kind == "usage":
            usage = chunk.get("usage")
        elif kind == "finish":
            finish = chunk.get("reason")
    text = "".join("".join(blocks[i]["parts"]) for i in order if blocks[i]["kind"] == "text")
    reasoning = "".join("".join(blocks[i]["parts"]) for i in order
                        if blocks[i]["kind"] == "reasoning")
    tools = [{"id": blocks[i]["id"], "name": blocks[i]["name"],
              "arguments": "".join(blocks[i]["parts"])}
             for i in order if blocks[i]["kind"] == "tool-call"]
    return {"text": text, "reasoning": reasoning, "tools": tools, "usage": usage,
            "finish": finish}


def wire_content(wire_chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The same content as a DeepSeek client assembles it from wire chunks."""
    text: list[str] = []
    reasoning: list[str] = []
    tools: dict[int, dict[str, Any]] = {}
    usage = None
    finish = None
    for chunk in wire_chunks:
        if chunk.get("usage"):
            usage = usage_back(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content") is not None:
                text.append(delta["content"])
            if delta.get("reasoning_content") is not None:
                reasoning.append(delta["reasoning_content"])
            for call in delta.get("tool_calls") or []:
                slot = tools.setdefault(call["index"], {"id": None, "name": None, "arguments": ""})
                function = call.get("function") or {}
                slot["id"] = slot["id"] or call.get("id")
                slot["name"] = slot["name"] or function.get("name")
                slot["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    return {"text": "".join(text), "reasoning": "".join(reasoning),
            "tools": [tools[k] for k in sorted(tools)], "usage": usage, "finish": finish}


def finish_on_wire(reason: Any) -> str | None:
    """The finish_reason docs/format.md#wire-openai-chat maps a recorded finish reason to."""
    if reason is None:
        return None
    if reason.get("kind") == "error":
        return str(reason["failure"]["code"]).lower()
    return {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}[reason["kind"]]


class EngineWatch:
    """Collects engine events and lets a test await one (no sleeping)."""

    def __init__(self, engine: Any) -> None:
        import asyncio

        self.events: list[Any] = []
        self._changed = asyncio.Event()
        self.unsubscribe = engine.subscribe(self._on)

    def _on(self, event: Any) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, kind: type, count: int = 1, timeout: float = 10.0) -> list[Any]:
        """Wait until ``count`` events of ``kind`` were seen; returns them."""
        import asyncio

        async def loop() -> list[Any]:
            while True:
                found = [e for e in self.events if isinstance(e, kind)]
                if len(found) >= count:
                    return found
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(loop(), timeout)
