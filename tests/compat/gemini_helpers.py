"""What google-genai hands an agent for one call, and what docs/format.md#wire-gemini says it must be.

``fold`` turns the client's responses (the streamed ones, or the one ``generate_content``
answer) into runs of text and thought parts, function calls, finish and usage; ``expected``
says the same of a recorded call, so a test compares the two call by call.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from google import genai
from google.genai import types

from replay_engine import ReplayEngine, SessionScript
from replay_engine.server import ReplayServer
from tests.compat.recorded import json_object, recorded_blocks

MODEL = "gemini-replay"


def client(base: str, *, session: str | None = None, version: str | None = None) -> genai.Client:
    """A google-genai client pointed at the replay server (any API key does)."""
    headers = {"X-Session-Id": session} if session else None
    return genai.Client(api_key="replay", http_options=types.HttpOptions(
        base_url=base, headers=headers, api_version=version))


@contextlib.asynccontextmanager
async def connected(base: str, *, session: str | None = None, version: str | None = None
                    ) -> AsyncIterator[genai.Client]:
    """``client`` closed at the end (its sync and async HTTP clients both)."""
    api = client(base, session=session, version=version)
    try:
        yield api
    finally:
        await api.aio.aclose()
        api.close()


def fold(responses: Sequence[types.GenerateContentResponse]) -> dict[str, Any]:
    """The call as the client's responses carry it: consecutive text (or thought) parts joined
    into one run, each function call alone, the last finish and usage seen."""
    runs: list[dict[str, Any]] = []
    finish = usage = None
    for response in responses:
        candidate = (response.candidates or [None])[0]
        if response.usage_metadata is not None:
            usage = response.usage_metadata.model_dump(exclude_none=True)
        if candidate is None:
            continue
        if candidate.finish_reason is not None:
            finish = candidate.finish_reason.value
        for part in (candidate.content.parts or []) if candidate.content else []:
            if part.function_call is not None:
                call = part.function_call
                runs.append({"kind": "tool-call", "id": call.id, "name": call.name,
                             "args": call.args})
                continue
            kind = "reasoning" if part.thought else "text"
            if not runs or runs[-1]["kind"] != kind:
                runs.append({"kind": kind, "text": "", "signature": None})
            runs[-1]["text"] += part.text or ""
            if part.thought_signature is not None:
                runs[-1]["signature"] = part.thought_signature
    return {"runs": runs, "finish": finish, "usage": usage}


def signature_bytes(signature: str) -> bytes:
    """What google-genai decodes from the ``thoughtSignature`` a recorded signature goes out as."""
    try:
        raw = base64.b64decode(signature, validate=True)
        if base64.b64encode(raw).decode() == signature:
            return raw
    except ValueError:
        pass
    return signature.encode()


def expected(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What the client must hold for one recorded call (docs/format.md#wire-gemini)."""
    recorded = recorded_blocks(chunks)
    cut = (recorded["finish"] or {}).get("kind") == "max-tokens"
    runs: list[dict[str, Any]] = []
    for block in recorded["blocks"]:
        if block["kind"] == "tool-call":
            args = json_object(block["content"])
            assert args is not None or cut, "a non-object tool input is not servable here"
            runs.append({"kind": "tool-call", "id": block["id"], "name": block["name"] or "",
                         "args": args if args is not None else {}})
            continue
        if not runs or runs[-1]["kind"] != block["kind"]:
            runs.append({"kind": block["kind"], "text": "", "signature": None})
        runs[-1]["text"] += block["content"]
        if block["signature"]:
            runs[-1]["signature"] = signature_bytes(block["signature"])
    usage = recorded["usage"]
    wire: dict[str, int] | None = None
    if usage:
        cache = int(usage.get("cacheReadTokens", 0))
        prompt = int(usage.get("inputTokens", 0)) + cache
        output = int(usage.get("outputTokens", 0))
        thoughts = int(usage.get("reasoningTokens", 0))
        # outputTokens counts reasoning; Google counts thoughts beside the candidates.
        wire = {"prompt_token_count": prompt, "candidates_token_count": max(output - thoughts, 0),
                "total_token_count": prompt + output}
        if "cacheReadTokens" in usage:
            wire["cached_content_token_count"] = cache
        if "reasoningTokens" in usage:
            wire["thoughts_token_count"] = thoughts
    return {"runs": [r for r in runs if r["kind"] == "tool-call" or r["text"] or r["signature"]],
            "finish": "MAX_TOKENS" if cut else "STOP", "usage": wire}


def without_empty_runs(folded: dict[str, Any]) -> dict[str, Any]:
    """The folded call without text runs that carry nothing (an empty recorded block)."""
    runs = [r for r in folded["runs"] if r["kind"] == "tool-call" or r["text"] or r["signature"]]
    return {**folded, "runs": runs}


@contextlib.asynccontextmanager
async def serving(scripts: list[SessionScript], **engine_options: Any
                  ) -> AsyncIterator[tuple[ReplayServer, ReplayEngine]]:
    """The replay server over a real engine on uvicorn, 127.0.0.1, an ephemeral port."""
    engine = ReplayEngine(scripts, **engine_options)
    async with ReplayServer(engine) as server:
        yield server, engine


async def stream(api: genai.Client, contents: Any = "go", **config: Any
                 ) -> list[types.GenerateContentResponse]:
    """Every response of one streamed call."""
    got = []
    async for response in await api.aio.models.generate_content_stream(
            model=MODEL, contents=contents, config=types.GenerateContentConfig(**config)):
        got.append(response)
    return got


async def generate(api: genai.Client, contents: Any = "go", **config: Any
                   ) -> types.GenerateContentResponse:
    """The one answer of ``generate_content``."""
    return await api.aio.models.generate_content(
        model=MODEL, contents=contents, config=types.GenerateContentConfig(**config))
