"""A rich renderable (the assembled output of a call, the request diff) as a list of lines
wrapped to the list's width: a focus stop like every list, read with the arrows, searched with
``.`` / ``,``, and opened whole with Enter. Virtual: only the rows on screen are painted, and a
new renderable never re-lays out the screen."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from rich.console import RenderableType
from rich.segment import Segment
from rich.text import Text

from .line_list import LineList

KEPT = 64
"""Renderables whose lines a list keeps."""


class RenderedLines(LineList):
    """Lines of one renderable; re-wrapped when the width changes."""

    DEFAULT_CSS = "RenderedLines { scrollbar-gutter: stable; overflow-x: hidden; }"
    """The scrollbar's column is always kept, so lines never re-wrap when it shows (the call
    pane always shows it)."""
    cursor_when_blurred = False
    """Read like a page: the cursor row is marked only while the list has focus."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self._renderable: RenderableType | Callable[[], RenderableType] = Text()
        self._key: Hashable | None = None
        self._whole: str | Text = ""
        self._lines: list[Text] = []
        self._wrapped_at = 0
        self._wrapped: OrderedDict[tuple[Hashable, int], list[Text]] = OrderedDict()
        """Lines of renderables shown before, by key and width (going back to a call is cheap)."""

    def set_renderable(self, renderable: RenderableType | Callable[[], RenderableType],
                       whole: str | Text = "", *, key: Hashable | None = None) -> None:
        """Show ``renderable`` (or what the function gives, built only when needed) from its
        top; ``whole`` is what Enter opens (default: the lines). With a ``key``, the lines are
        kept, and a renderable shown again with the same key is not rendered again."""
        self._renderable = renderable
        self._key = key
        self._whole = whole
        self._wrapped_at = 0
        self.cursor = 0
        self.scroll_to(y=0, animate=False, immediate=True)
        self._wrap()

    @property
    def text(self) -> str:
        """The lines as plain text (what tests read)."""
        return "\n".join(line.plain for line in self._lines)

    def _wrap(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._wrapped_at:
            return
        cached = self._wrapped.get((self._key, width)) if self._key is not None else None
        if cached is None:
            renderable = self._renderable() if callable(self._renderable) else self._renderable
            console = self.app.console
            lines = console.render_lines(renderable, console.options.update_width(width),
                                         pad=False)
            cached = [_text_of(line) for line in lines]
            if self._key is not None:
                self._wrapped[(self._key, width)] = cached
                while len(self._wrapped) > KEPT:
                    self._wrapped.popitem(last=False)
        elif self._key is not None:
            self._wrapped.move_to_end((self._key, width))
        self._lines = cached
        self._wrapped_at = width
        self.set_rows(len(self._lines), width)

    def forget(self) -> None:
        """Drop the lines kept (what they were rendered from changed)."""
        self._wrapped.clear()

    def on_resize(self) -> None:
        self._wrap()

    def row_text(self, index: int) -> Text:
        return self._lines[index].copy() if index < len(self._lines) else Text()

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        if not self._lines:
            return None
        return self.title, self._whole or self.text


def _text_of(line: list[Segment]) -> Text:
    text = Text()
    for segment in line:
        if not segment.control:
            text.append(segment.text, segment.style)
    text.rstrip()
    return text
