"""Responses requests (docs/format.md#wire-responses): ``instructions`` and ``input`` (a string,
or items); user message items are user text, ``function_call_output`` and
``custom_tool_call_output`` items tool results answering their ``call_id``, the model's own
items (assistant messages, reasoning, every ``*_call``) its turns."""

from __future__ import annotations

from typing import Any

from .reading import RequestMessage, RequestReader, content_text, text_id

TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
"""Input item types that carry a tool's result."""


def corpus(body: dict[str, Any]) -> Any:
    """``{{fromRequest}}`` searches ``instructions``, then ``input``."""
    return {"instructions": body.get("instructions"), "input": body.get("input")}


def _item(item: Any) -> RequestMessage:
    if not isinstance(item, dict):
        return RequestMessage("other", raw=item)
    kind = item.get("type", "message")
    if kind in TOOL_OUTPUTS:
        return RequestMessage("tool", content_text(item.get("output")),
                              text_id(item.get("call_id")), item)
    role = item.get("role")
    if kind == "message" and role == "user":
        return RequestMessage("user", content_text(item.get("content")), None, item)
    if kind == "message" and role in ("system", "developer"):
        return RequestMessage("system", content_text(item.get("content")), None, item)
    if role == "assistant" or kind == "reasoning" or (isinstance(kind, str)
                                                        and kind.endswith("_call")):
        return RequestMessage("assistant", raw=item)
    return RequestMessage("other", raw=item)


def conversation(found: Any) -> list[RequestMessage]:
    """The instructions, then the input: a string is one user message."""
    if not isinstance(found, dict):
        return []
    out: list[RequestMessage] = []
    if found.get("instructions") is not None:
        out.append(RequestMessage("system", content_text(found.get("instructions")), None,
                                  found.get("instructions")))
    items = found.get("input")
    if isinstance(items, str):
        return [*out, RequestMessage("user", items, None, {"role": "user", "content": items})]
    return out + [_item(item) for item in (items if isinstance(items, list) else [])]


def claims(found: Any) -> bool:
    """A Responses corpus holds ``input`` or ``instructions``."""
    return isinstance(found, dict) and ("input" in found or "instructions" in found)


READER = RequestReader("responses", corpus, conversation, claims)
