"""A virtual list on Textual's line API: only the visible rows are ever rendered.

DataTable is quadratic when adding rows; this renders 100k rows as fast as ten.
"""

from __future__ import annotations

from collections.abc import Hashable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from ..headless.search import parse_query
from ..keymap import LIST_KEYS, bindings

CURSOR_STYLE = Style(bgcolor="#264f78")
CURSOR_BLUR_STYLE = Style(bgcolor="#303030")
HIGHLIGHT_STYLE = Style(bgcolor="#5f4b00")
MATCH_STYLE = Style(underline=True, bold=True)


class LineList(ScrollView, can_focus=True):
    """Rows come from ``row_text(index)``; subclasses say how many there are."""

    BINDINGS = bindings(LIST_KEYS)
    ellipsis = True
    """Rows wider than the list end in ``…`` (Enter shows them whole)."""
    cursor_when_blurred = True
    """Whether the selected row stays marked (dimmer) while another pane has focus."""
    empty_text = ""
    """What the first row says while the list has no rows."""

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)
    """Index of the highlighted row."""

    class DetailRequested(Message):
        """Enter on a row: show it whole (``title``, ``text``)."""

        def __init__(self, title: str, text: str | Text) -> None:
            super().__init__()
            self.title = title
            self.text = text

    class Highlighted(Message):
        """The cursor moved to ``index``."""

        def __init__(self, sender: LineList, index: int) -> None:
            super().__init__()
            self.list = sender
            self.index = index

        @property
        def control(self) -> LineList:
            """The list that sent it."""
            return self.list

    def __init__(self, *, show_cursor: bool = True, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._count = 0
        self._width = 1
        self.show_cursor = show_cursor
        self.highlight: int | None = None
        self._base: Style | None = None
        self._strips: dict[Hashable, Strip] = {}
        self.search_text = ""
        """The search text: matching rows are marked and next/previous jump between them."""

    @property
    def row_count(self) -> int:
        """Number of rows."""
        return self._count

    def set_rows(self, count: int, width: int = 200) -> None:
        """Say how many rows there are now and repaint."""
        self._count = count
        self._width = width
        self._strips.clear()
        size = Size(width, count)
        if self.virtual_size != size:
            # Setting ``virtual_size`` lays the whole screen out again (tens of ms under load, on
            # every key that shows another call). Only a scrollbar that appears or goes needs
            # that, and ``_scroll_update`` asks for it then; a new length only repaints the
            # scrollbar (Textual's own resize path sets the size this way).
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)
        if self.cursor >= count:
            self.cursor = max(count - 1, 0)
        self.refresh()

    def set_empty_text(self, text: str) -> None:
        """What the first row says while the list has no rows."""
        if text != self.empty_text:
            self.empty_text = text
            self.refresh()

    def row_text(self, index: int) -> Text:
        """The text of one row (override)."""
        return Text(str(index))

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        """A title and the whole text of a row for the detail view (None: nothing more to show)."""
        return None

    def is_match(self, index: int) -> bool:
        """Whether row ``index`` matches :attr:`search_text` (override; default: its text contains it)."""
        if not self.search_text:
            return False
        return parse_query(self.search_text).matches_text(self.row_text(index).plain)

    def set_search(self, text: str) -> None:
        """Mark rows matching ``text`` (empty: none)."""
        if text != self.search_text:
            self.search_text = text
            self._strips.clear()
            self.refresh()

    def next_match(self, step: int) -> bool:
        """Move the cursor to the next (1) or previous (-1) matching row, wrapping; False if none."""
        count = self._count
        if not self.search_text or not count:
            return False
        for n in range(1, count + 1):
            index = (self.cursor + step * n) % count
            if self.is_match(index):
                self.move_to(index)
                return True
        return False

    def action_open_detail(self) -> None:
        if self._count:
            found = self.detail(self.cursor)
            if found is not None:
                self.post_message(self.DetailRequested(*found))

    def row_key(self, index: int) -> Hashable | None:
        """What a row's look depends on besides its index (None: do not cache it)."""
        return None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if index >= self._count:
            if index == 0 and self.empty_text:
                empty = Text(self.empty_text, style="italic dim", end="")
                empty.truncate(width, overflow="ellipsis")
                return Strip(Segment.apply_style(list(empty.render(self.app.console)), base)
                             ).crop_extend(0, width, base)
            return Strip.blank(width, base)
        selected = self.show_cursor and index == self.cursor
        key = self.row_key(index)
        cache_key = None
        if key is not None:
            cache_key = (index, key, selected and self.has_focus, selected, self.highlight == index,
                         scroll_x, width, self.search_text)
            strip = self._strips.get(cache_key)
            if strip is not None:
                return strip
        text = self.row_text(index)
        text.no_wrap = True
        text.end = ""
        if self.ellipsis and not scroll_x and text.cell_len > width > 1:
            text.truncate(width, overflow="ellipsis")
        row_style = None
        if self.search_text and self.is_match(index):
            text.stylize(MATCH_STYLE)
        if self.highlight == index:
            row_style = HIGHLIGHT_STYLE
        if selected and (self.has_focus or self.cursor_when_blurred and row_style is None):
            # a highlighted row (the chunk served last) keeps its colour under a blurred cursor
            row_style = CURSOR_STYLE if self.has_focus else CURSOR_BLUR_STYLE
        if row_style is not None:
            text.pad_right(max(width + scroll_x - len(text), 0))
            text.stylize(row_style)
        segments = list(text.render(self.app.console))
        strip = Strip(Segment.apply_style(segments, base)).crop_extend(scroll_x, scroll_x + width, base)
        if cache_key is not None:
            if len(self._strips) > 4096:
                self._strips.clear()
            self._strips[cache_key] = strip
        return strip

    @property
    def visible_rows(self) -> int:
        """Rows on screen (a horizontal scrollbar's row not counted)."""
        return max(self.scrollable_content_region.height, 1)

    def refresh_row(self, index: int) -> None:
        """Repaint one row if it is visible."""
        y = index - self.scroll_offset.y
        if 0 <= y < self.visible_rows:
            self.refresh_line(y)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_row(old)
        self.refresh_row(new)
        self.scroll_to_row(new)
        self.highlighted(new)

    def highlighted(self, index: int) -> None:
        """The cursor moved to ``index``: say so (override to post a message of your own)."""
        self.post_message(self.Highlighted(self, index))

    def scroll_to_row(self, index: int) -> None:
        """Scroll so that ``index`` is visible."""
        top = self.scroll_offset.y
        height = self.visible_rows
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)

    def move_to(self, index: int) -> None:
        """Put the cursor on ``index`` (clamped)."""
        if self._count:
            self.cursor = min(max(index, 0), self._count - 1)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.visible_rows - 1, 1))

    def action_jump(self, where: int) -> None:
        self.move_to(self._count - 1 if where < 0 else where)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None:
            self.move_to(offset.y + self.scroll_offset.y)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
