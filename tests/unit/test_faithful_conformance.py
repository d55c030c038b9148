"""A faithful replay never diverges: for every call of every conformance scenario (v0/v1 and
the newer generations), its recorded context sent back on each dialect's request shape is the
recorded conversation (chat, Messages, Responses and Gemini requests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay_engine import load_scenario
from replay_engine.context import ContextItem, live_new_messages, script_contexts
from replay_engine.divergence import divergence
from tests.conftest import conformance_dir, conformance_gen_dir


def _chat(items: tuple[ContextItem, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "a client's own prompt"},
                                 {"role": "assistant", "content": "earlier"}]
    for i in items:
        out.append({"role": "tool", "tool_call_id": i.call_id, "content": i.text}
                   if i.role == "tool" else {"role": "user", "content": i.text})
    return out


def _messages(items: tuple[ContextItem, ...]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": "earlier"}]
    for i in items:
        if i.role == "tool":
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i.call_id, "content": i.text}]})
        else:
            messages.append({"role": "user", "content": i.text})
    return {"system": "s", "messages": messages}


def _responses(items: tuple[ContextItem, ...]) -> dict[str, Any]:
    body: list[dict[str, Any]] = [{"role": "assistant", "content": "earlier"}]
    for i in items:
        body.append({"type": "function_call_output", "call_id": i.call_id, "output": i.text}
                    if i.role == "tool" else {"type": "message", "role": "user", "content": i.text})
    return {"instructions": "i", "input": body}


def _gemini(items: tuple[ContextItem, ...]) -> dict[str, Any]:
    contents: list[dict[str, Any]] = [{"role": "model", "parts": [{"text": "earlier"}]}]
    for i in items:
        if i.role == "tool":
            answer: dict[str, Any] = {"name": "tool", "response": {"output": i.text}}
            if i.call_id is not None:
                answer = {"id": i.call_id, **answer}
            contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
        else:
            contents.append({"role": "user", "parts": [{"text": i.text}]})
    return {"systemInstruction": {"parts": [{"text": "s"}]}, "contents": contents}


def _scenarios() -> list[Path]:
    found: list[Path] = []
    for base in (conformance_dir(), conformance_gen_dir()):
        if base is not None:
            found += sorted(p.parent for p in base.rglob("session*.jsonl*")
                            if p.name.split(".")[1] in ("jsonl", "v2", "v3", "v4", "v5", "v6", "v7"))
    return sorted(set(found))


def test_every_recorded_context_sent_back_is_the_recording() -> None:
    scenarios = _scenarios()
    if not scenarios:
        pytest.skip("the conformance corpus is not here")
    checked = 0
    for root in scenarios:
        try:
            scripts = load_scenario(root).scripts
        except Exception:  # noqa: BLE001 - scenarios expected to fail loading are other tests' business
            continue
        for script in scripts:
            for recorded in script_contexts(script):
                if recorded is None:
                    continue
                for shape in (_chat, _messages, _responses, _gemini):
                    found = divergence(live_new_messages(shape(recorded)), recorded)
                    assert found is None, (root, script.file, shape.__name__, found)
                checked += 1
    assert checked > 1000
