"""The chunk list of one call (virtual: a call may hold thousands of chunks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.text import Text

from .line_list import LineList

TYPE_STYLE = {"text-delta": "green", "reasoning-delta": "magenta", "tool-call-delta": "cyan",
              "finish": "bold", "usage": "yellow"}


FIRST_FIELDS = ("text", "argumentsDelta", "name", "reason", "usage")
"""A chunk's fields read first, after its type: what it carries before where it goes."""


def chunk_row(chunk: dict[str, Any]) -> str:
    """A chunk on one line: its type, then its fields as compact JSON, payload first (nothing
    is left out: the row is the chunk, reordered for reading)."""
    rest = {k: chunk[k] for k in FIRST_FIELDS if k in chunk}
    rest.update((k, v) for k, v in chunk.items() if k != "type" and k not in rest)
    body = json.dumps(rest, ensure_ascii=False, separators=(", ", ": ")) if rest else ""
    return f"{chunk.get('type', '?')} {body}".rstrip()


class ChunkList(LineList):
    """One row per chunk, type first; the chunk served last is highlighted and kept on screen."""

    DEFAULT_CSS = "ChunkList { overflow-x: hidden; }"

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
        self.set_rows(len(chunks), width=1)
        self.set_served(served)

    def set_served(self, served: int | None) -> None:
        """Highlight the last chunk served (live calls only) and keep it on screen, with the
        chunk after it when there is room (what the next step releases)."""
        old = self.highlight
        self.highlight = served - 1 if served else None
        if old != self.highlight:
            if old is not None:
                self.refresh_row(old)
            if self.highlight is not None:
                self.refresh_row(self.highlight)
                self.scroll_to_row(min(self.highlight + 1, max(self._count - 1, 0)))
                self.scroll_to_row(self.highlight)
                self.move_to(self.highlight)

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
            line = self._cache[index] = chunk_row(chunk)
        text = Text(f"{index:>{len(str(max(self._count - 1, 0)))}} ", style="dim")
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
