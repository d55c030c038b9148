"""Messages requests (docs/format.md#wire-anthropic): ``system`` and ``messages``; a user
message's ``text`` blocks are its text, each ``tool_result`` block a tool result answering its
``tool_use_id``."""

from __future__ import annotations

from typing import Any

from .reading import RequestMessage, RequestReader, content_text, text_id


def corpus(body: dict[str, Any]) -> Any:
    """``{{fromRequest}}`` searches ``system``, then ``messages``."""
    return {"system": body.get("system"), "messages": body.get("messages")}


def _user(i: int, content: Any) -> list[RequestMessage]:
    """One user message: its texts and tool results in order (texts between results joined)."""
    if not isinstance(content, list):
        return [RequestMessage("user", content_text(content), None, {"message": i})]
    out: list[RequestMessage] = []
    texts: list[str] = []
    for k, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            if texts:
                out.append(RequestMessage("user", "\n".join(texts), None, {"message": i, "at": k}))
                texts = []
            out.append(RequestMessage("tool", content_text(block.get("content")),
                                      text_id(block.get("tool_use_id")),
                                      {"message": i, "block": block}))
        elif isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
    if texts:
        out.append(RequestMessage("user", "\n".join(texts), None, {"message": i, "end": content}))
    return out


def conversation(found: Any) -> list[RequestMessage]:
    """The system prompt, then every message: the assistant's as the model's turns."""
    if not isinstance(found, dict):
        return []
    out: list[RequestMessage] = []
    if found.get("system") is not None:
        out.append(RequestMessage("system", content_text(found.get("system")), None,
                                  found.get("system")))
    messages = found.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            out += _user(i, message.get("content"))
        elif message.get("role") == "assistant":
            out.append(RequestMessage("assistant", raw=message))
        else:
            out.append(RequestMessage("other", raw=message))
    return out


def claims(found: Any) -> bool:
    """A Messages corpus holds ``messages``."""
    return isinstance(found, dict) and "messages" in found


READER = RequestReader("anthropic", corpus, conversation, claims)
