"""Gemini requests (docs/format.md#wire-gemini): ``systemInstruction`` and ``contents``; the text parts of a
``user`` turn are user text and each ``functionResponse`` part (under a ``user`` or a
``function`` turn) a tool result answering its ``id``; ``model`` turns are the model's."""

from __future__ import annotations

from typing import Any

from .reading import RequestMessage, RequestReader, content_text, text_id


def corpus(body: dict[str, Any]) -> Any:
    """``{{fromRequest}}`` searches ``systemInstruction``, then ``contents``."""
    system = body.get("systemInstruction", body.get("system_instruction"))
    return {"systemInstruction": system, "contents": body.get("contents")}


def function_response_text(response: Any) -> str:
    """The text of a ``functionResponse.response``: the lone string it wraps
    (``{"output": "..."}``, as clients write a tool's result), else its JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return content_text(response)


def _parts(i: int, content: dict[str, Any]) -> list[RequestMessage]:
    """A user or function turn: its texts and function responses in order."""
    parts = content.get("parts")
    out: list[RequestMessage] = []
    texts: list[str] = []
    for k, part in enumerate(parts if isinstance(parts, list) else []):
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(answer, dict):
            if texts:
                out.append(RequestMessage("user", "\n".join(texts), None, {"content": i, "at": k}))
                texts = []
            out.append(RequestMessage("tool", function_response_text(answer.get("response")),
                                      text_id(answer.get("id")), {"content": i, "part": part}))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    if texts:
        out.append(RequestMessage("user", "\n".join(texts), None, {"content": i, "end": parts}))
    return out


def conversation(found: Any) -> list[RequestMessage]:
    """The system instruction, then every turn (a string is one user turn)."""
    if not isinstance(found, dict):
        return []
    out: list[RequestMessage] = []
    system = found.get("systemInstruction")
    if system is not None:
        out.append(RequestMessage("system", content_text(
            system.get("parts") if isinstance(system, dict) else system), None, system))
    contents = found.get("contents")
    if isinstance(contents, str):
        return [*out, RequestMessage("user", contents, None, {"contents": contents})]
    for i, content in enumerate(contents if isinstance(contents, list) else []):
        if not isinstance(content, dict):
            continue
        if content.get("role") == "model":
            out.append(RequestMessage("assistant", raw=content))
        else:  # user, function, or no role (a lone turn is the user's)
            out += _parts(i, content)
    return out


def claims(found: Any) -> bool:
    """A Gemini corpus holds ``contents`` or ``systemInstruction``."""
    return isinstance(found, dict) and ("contents" in found or "systemInstruction" in found)


READER = RequestReader("gemini", corpus, conversation, claims)
