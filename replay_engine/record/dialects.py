"""Every dialect the recorder serves, one sibling module each (the registry ``record`` uses)."""

from __future__ import annotations

from .anthropic import ANTHROPIC_MESSAGES
from .dialect import RecordDialect
from .gemini import GEMINI
from .openai_chat import OPENAI_CHAT
from .responses import OPENAI_RESPONSES

DIALECTS: tuple[RecordDialect, ...] = (OPENAI_CHAT, ANTHROPIC_MESSAGES, OPENAI_RESPONSES, GEMINI)
"""Every dialect the recorder serves, in route order."""
