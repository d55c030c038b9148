"""What the demo agent's SDK clients assembled from one streamed call, whatever the dialect."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Streamed:
    """What the SDK assembled from one streamed call."""

    events: int = 0
    """Server-sent events received (not the recorded chunks: the wire may merge or split them)."""
    text: str = ""
    reasoning: str = ""
    tools: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    status: int | None = None
