"""Which recorded calls the Messages and Responses wires carry exactly (structural checks).

Both wires frame every block, so a call is producible when each block opens with its own
``block-start`` (indices 0, 1, … in opening order) and closes with a ``block-end`` holding
its concatenated deltas (a block with content has at least one delta, tool deltas carry the
block's id and name), followed by the usage the wire states and a finish it can say. Blocks
may interleave. The dialects' module docstrings state the same rules.
"""

from __future__ import annotations

from typing import Any

_DELTA_OF = {"text": "text-delta", "reasoning": "reasoning-delta", "tool-call": "tool-call-delta"}
_KIND_OF = {v: k for k, v in _DELTA_OF.items()}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _blocks_framed(chunks: list[dict[str, Any]], *, signatures: bool
                   ) -> tuple[int, list[str]] | None:
    """Where the block chunks end and each block's kind, or None when they are not framed."""
    blocks: list[dict[str, Any]] = []
    open_: set[int] = set()
    i = 0
    while i < len(chunks) and chunks[i].get("type") in ("block-start", "block-end", *_KIND_OF):
        chunk = chunks[i]
        kind = chunk["type"]
        index = chunk.get("index")
        if kind == "block-start":
            if (set(chunk) != {"type", "index", "blockType"} or chunk["blockType"] not in _DELTA_OF
                    or index != len(blocks)):
                return None
            blocks.append({"kind": chunk["blockType"], "parts": [], "id": None, "name": None})
            open_.add(len(blocks) - 1)
        elif kind in _KIND_OF:
            if index not in open_ or blocks[index]["kind"] != _KIND_OF[kind]:
                return None
            block = blocks[index]
            if kind == "tool-call-delta":
                if (set(chunk) != {"type", "index", "id", "name", "argumentsDelta"}
                        or not isinstance(chunk["id"], str) or not isinstance(chunk["name"], str)
                        or not isinstance(chunk["argumentsDelta"], str)):
                    return None
                if block["parts"] and (block["id"], block["name"]) != (chunk["id"], chunk["name"]):
                    return None
                block["id"], block["name"] = chunk["id"], chunk["name"]
                block["parts"].append(chunk["argumentsDelta"])
            else:
                if set(chunk) != {"type", "index", "text"} or not isinstance(chunk["text"], str):
                    return None
                block["parts"].append(chunk["text"])
        else:
            if index not in open_ or set(chunk) != {"type", "index", "block"}:
                return None
            open_.discard(index)
            block = blocks[index]
            whole = dict(chunk["block"]) if isinstance(chunk["block"], dict) else {}
            text = "".join(block["parts"])
            if block["kind"] == "tool-call":
                call_id, name = whole.get("id"), whole.get("name")
                if not block["parts"]:
                    block["id"], block["name"] = call_id, name
                want = {"type": "tool-call", "id": block["id"], "name": block["name"],
                        "arguments": text}
                if not (isinstance(call_id, str) and isinstance(name, str)):
                    return None
            else:
                want = {"type": block["kind"], "text": text}
                if signatures and block["kind"] == "reasoning" and "signature" in whole:
                    if not isinstance(whole["signature"], str) or not whole["signature"]:
                        return None
                    want["signature"] = whole["signature"]
            if whole != want:
                return None
        i += 1
    if open_:
        return None
    return i, [b["kind"] for b in blocks]


def _tail(chunks: list[dict[str, Any]], i: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The usage and finish reason that must end the call at ``i``."""
    if len(chunks) != i + 2:
        return None
    usage, finish = chunks[i], chunks[i + 1]
    if set(usage) != {"type", "usage"} or usage["type"] != "usage" or not isinstance(
            usage["usage"], dict) or not all(_is_int(v) for v in usage["usage"].values()):
        return None
    if set(finish) != {"type", "reason"} or finish["type"] != "finish":
        return None
    return usage["usage"], finish["reason"]


def messages_producible(chunks: list[dict[str, Any]]) -> bool:
    """Whether a Messages stream could have produced exactly these chunks."""
    framed = _blocks_framed(chunks, signatures=True)
    tail = _tail(chunks, framed[0]) if framed else None
    if tail is None:
        return False
    usage, reason = tail
    return ({"inputTokens", "outputTokens"} <= set(usage)
            <= {"inputTokens", "outputTokens", "cacheReadTokens"}
            and reason in ({"kind": "stop"}, {"kind": "tool-calls"}, {"kind": "max-tokens"}))


def responses_producible(chunks: list[dict[str, Any]]) -> bool:
    """Whether a Responses stream could have produced exactly these chunks."""
    framed = _blocks_framed(chunks, signatures=False)
    tail = _tail(chunks, framed[0]) if framed else None
    if framed is None or tail is None:
        return False
    usage, reason = tail
    if set(usage) != {"inputTokens", "outputTokens", "cacheReadTokens", "reasoningTokens"}:
        return False
    tools = "tool-call" in framed[1]
    if reason == {"kind": "stop"}:
        return not tools
    if reason == {"kind": "tool-calls"}:
        return tools
    if reason == {"kind": "max-tokens"}:
        return True
    failure = reason.get("failure")
    return (set(reason) == {"kind", "failure"} and reason["kind"] == "error"
            and isinstance(failure, dict) and set(failure) == {"code", "message"}
            and all(isinstance(v, str) and v for v in failure.values()))
