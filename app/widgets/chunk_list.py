"""The chunk list of one call (virtual: a call may hold thousands of chunks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.text import Text

from .line_list import LineList

TYPE_STYLE = {"text-delta": "green", "reasoning-delta": "magenta", "tool-call-delta": "cyan",
              "finish": "bold", "usage": "yellow"}


class ChunkList(LineList):
    """One row per chunk as compact JSON; the chunk served last is highlighted."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._chunks: Sequence[dict[str, Any]] = ()
        self._cache: dict[int, str] = {}

    def set_chunks(self, chunks: Sequence[dict[str, Any]], served: int | None) -> None:
        """Show ``chunks``; ``served`` is how many the live call has sent (None: not live)."""
        if chunks is not self._chunks:
            self._chunks = chunks
            self._cache.clear()
            self.cursor = 0
        self.set_served(served)
        self.set_rows(len(chunks), width=400)

    def set_served(self, served: int | None) -> None:
        """Highlight the last chunk served (live calls only)."""
        old = self.highlight
        self.highlight = served - 1 if served else None
        if old != self.highlight:
            if old is not None:
                self.refresh_row(old)
            if self.highlight is not None:
                self.refresh_row(self.highlight)
                self.scroll_to_row(self.highlight)

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        if not self._chunks:
            return None
        return (f"Chunk {index} of {len(self._chunks)}",
                json.dumps(self._chunks[index], indent=2, ensure_ascii=False))

    def row_text(self, index: int) -> Text:
        if index >= len(self._chunks):
            return Text("")
        line = self._cache.get(index)
        chunk = self._chunks[index]
        if line is None:
            line = self._cache[index] = json.dumps(chunk, ensure_ascii=False)
        text = Text(f"{index:>5} ", style="dim")
        text.append(line, style=TYPE_STYLE.get(str(chunk.get("type")), ""))
        return text


class TextLines(LineList):
    """Read-only lines of text (the raw JSON tab), rendered virtually; scrolls sideways."""

    ellipsis = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(show_cursor=False, id=id)
        self._lines: list[str] = []

    def set_lines(self, lines: list[str]) -> None:
        """Replace the text."""
        self._lines = lines
        self.scroll_to(y=0, animate=False, immediate=True)
        self.set_rows(len(lines), width=max((len(x) for x in lines[:2000]), default=1))

    def row_text(self, index: int) -> Text:
        return Text(self._lines[index])

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        return ("Raw entry JSON", "\n".join(self._lines)) if self._lines else None
