"""Chat-completions requests (docs/format.md#wire-openai-chat, also the native route's
``messages``): the body's ``messages`` list; ``tool`` (and the legacy ``function``) messages are
tool results."""

from __future__ import annotations

from typing import Any

from .reading import RequestMessage, RequestReader, Role, content_text, text_id

_ROLES: dict[str, Role] = {"assistant": "assistant", "system": "system", "developer": "system",
                           "tool": "tool", "function": "tool"}


def corpus(body: dict[str, Any]) -> Any:
    """The body's ``messages``."""
    return body.get("messages")


def conversation(messages: Any) -> list[RequestMessage]:
    """Every message object by role; any role the wire does not name is user text."""
    out: list[RequestMessage] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        role = _ROLES.get(str(message.get("role")), "user")
        if role == "assistant":
            out.append(RequestMessage("assistant", raw=message))
            continue
        call_id = text_id(message.get("tool_call_id")) if role == "tool" else None
        out.append(RequestMessage(role, content_text(message.get("content")), call_id, message))
    return out


def claims(messages: Any) -> bool:
    """A chat corpus is the messages list itself."""
    return isinstance(messages, list)


READER = RequestReader("openai", corpus, conversation, claims)
