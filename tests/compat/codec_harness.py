"""A minimal dialect seam for the codec tests: the real engine binds and serves each call,
the codec under test turns its chunks into bytes, uvicorn serves them on a real socket.

It does what a server seam must do with a codec: send the opening once the call is bound
(unless the entry is a throw with no prefix, which answers an HTTP error instead), the
bytes of each chunk, then the closing or the failure event; ``stream: false`` runs the
assembler and answers JSON or the dialect's error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from replay_engine import ReplayEngine, ReplayError, ThrowEntry
from replay_engine.engine import CallHandle
from replay_engine.wire import anthropic as wa
from replay_engine.wire import responses as wr
from replay_engine.wire.blocks import entry_chunks

NO_RETRY = {"x-should-retry": "false"}


class _Encoder(Protocol):
    def opening(self) -> bytes: ...
    def encode(self, chunk: dict[str, Any]) -> bytes | None: ...
    def close(self) -> bytes: ...
    def fail(self, message: str, code: str) -> bytes: ...


async def _stream(encoder: _Encoder, handle: CallHandle) -> AsyncIterator[bytes]:
    yield encoder.opening()
    try:
        async for chunk in handle.chunks():
            data = encoder.encode(chunk)
            if data:
                yield data
        yield encoder.close()
    except ReplayError as exc:
        yield encoder.fail(exc.message, exc.code)


def _fails_at_once(handle: CallHandle) -> bool:
    return isinstance(handle.entry, ThrowEntry) and not handle.entry.chunks


def codec_app(engine: ReplayEngine) -> Starlette:
    """``/runs/{run}/v1/messages`` and ``/runs/{run}/v1/responses`` over ``engine``."""

    async def messages(request: Request) -> Response:
        body = json.loads(await request.body())
        model = str(body.get("model", "replay"))
        run = request.path_params["run"]
        session = request.headers.get("x-session-id")
        try:
            handle = await engine.open_call_async(session, wa.request_corpus(body), run=run,
                                                  model=model)
        except ReplayError as exc:
            return JSONResponse(wa.error_body(exc.message, exc.code),
                                status_code=wa.error_status(exc.code), headers=NO_RETRY)
        if body.get("stream") is True and not _fails_at_once(handle):
            encoder = wa.MessagesStreamEncoder(model, entry_chunks(handle.entry))
            return StreamingResponse(_stream(encoder, handle),
                                     media_type=wa.STREAM_MEDIA_TYPE.decode())
        assembler = wa.MessageAssembler()
        try:
            async for chunk in handle.chunks():
                assembler.add(chunk)
            return JSONResponse(assembler.result(model, call=f"call of session {session}"))
        except ReplayError as exc:
            return JSONResponse(wa.error_body(exc.message, exc.code),
                                status_code=wa.error_status(exc.code), headers=NO_RETRY)

    async def responses(request: Request) -> Response:
        body = json.loads(await request.body())
        model = str(body.get("model", "replay"))
        run = request.path_params["run"]
        session = request.headers.get("x-session-id")
        try:
            handle = await engine.open_call_async(session, wr.request_corpus(body), run=run,
                                                  model=model)
        except ReplayError as exc:
            return JSONResponse(wr.error_body(exc.message, exc.code),
                                status_code=wr.error_status(exc.code), headers=NO_RETRY)
        if body.get("stream") is True and not _fails_at_once(handle):
            encoder = wr.ResponsesStreamEncoder(model, entry_chunks(handle.entry))
            return StreamingResponse(_stream(encoder, handle),
                                     media_type=wr.STREAM_MEDIA_TYPE.decode())
        assembler = wr.ResponseAssembler()
        try:
            async for chunk in handle.chunks():
                assembler.add(chunk)
        except ReplayError as exc:
            return JSONResponse(wr.error_body(exc.message, exc.code),
                                status_code=wr.error_status(exc.code), headers=NO_RETRY)
        return JSONResponse(assembler.result(model))

    return Starlette(routes=[
        Route("/runs/{run}/v1/messages", messages, methods=["POST"]),
        Route("/runs/{run}/v1/responses", responses, methods=["POST"]),
    ])


_KINDS = {"text", "reasoning", "tool-call"}
_DELTAS = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


def recorded_blocks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What SPEC 8 says a call carries, block by block in opening order.

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
